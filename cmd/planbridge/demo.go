package main

import (
	"context"
	_ "embed"
	"encoding/json"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"time"

	"planbridge/rpc"
)

//go:embed demo_script.json
var demoScript []byte

var demoFiles = map[string]string{
	"main.go":   "package main\n\nimport \"fmt\"\n\nfunc main() {\n\tfmt.Println(\"Hello, world!\")\n}\n",
	"go.mod":    "module greeter\n\ngo 1.22\n",
	"README.md": "# greeter\n\nPrints a greeting.\n",
}

// runDemo runs a scripted Plan session through the real pipeline: a
// planbridge serve subprocess spoken to over JSON-RPC, a real git repository
// and a real SQLite state directory. The model is a scripted replay.
func runDemo(args []string, stdin io.Reader, stdout, stderr io.Writer) int {
	fs := newFlags("demo", stderr)
	keep := fs.Bool("keep", false, "keep the temporary directory for inspection (its path is printed)")
	pos, code, ok := parseFlags(fs, args, false, stdout, stderr)
	if !ok {
		return code
	}
	if len(pos) > 0 {
		return usageError(fs, stderr, "demo takes no arguments")
	}
	if err := demo(stdout, *keep); err != nil {
		fmt.Fprintf(stderr, "planbridge demo: %v\n", err)
		return 1
	}
	return 0
}

func demo(out io.Writer, keep bool) error {
	root, err := os.MkdirTemp("", "planbridge-demo-")
	if err != nil {
		return err
	}
	if !keep {
		defer os.RemoveAll(root)
	}
	repo, state := filepath.Join(root, "greeter"), filepath.Join(root, "state")
	if err := makeDemoRepo(repo); err != nil {
		return err
	}
	script := filepath.Join(root, "script.json")
	if err := os.WriteFile(script, demoScript, 0o644); err != nil {
		return err
	}
	self, err := os.Executable()
	if err != nil {
		return err
	}
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	cmd := exec.CommandContext(ctx, self, "serve", "--state-dir", state, "--engine", "script", "--script", script,
		"--log", filepath.Join(root, "planbridge.log"))
	in, _ := cmd.StdinPipe()
	outp, _ := cmd.StdoutPipe()
	cmd.Stderr = os.Stderr
	if err := cmd.Start(); err != nil {
		return err
	}
	defer func() { in.Close(); cmd.Wait() }()
	c := rpc.NewClient(ctx, outp, in)
	defer c.Close()

	fmt.Fprintln(out, "planbridge demo — SCRIPTED REPLAY: the model is the script engine, everything else is real.")
	fmt.Fprintf(out, "repository: %s\n\n", repo)
	var init map[string]any
	if err := c.Call(ctx, "initialize", map[string]any{"client": map[string]string{"name": "demo"}}, &init); err != nil {
		return err
	}
	var sess struct {
		ID string `json:"id"`
	}
	if err := c.Call(ctx, "session/create", map[string]string{"workspace": repo}, &sess); err != nil {
		return err
	}
	before, _ := os.ReadFile(filepath.Join(repo, "main.go"))
	prompt := "/plan Make the greeting's name configurable from the command line."
	// The prompt is printed once, from its "user" event, as Emacs shows it.
	if err := c.Call(ctx, "session/submit", map[string]string{"session": sess.ID, "text": prompt}, nil); err != nil {
		return err
	}
	if _, err := c.WaitEvent(ctx, func(e rpc.Event) bool { return e.Kind == "turn_end" }); err != nil {
		return err
	}
	printTranscript(out, c.Events())
	var status struct {
		Text string `json:"text"`
	}
	if err := c.Call(ctx, "plan/status", map[string]string{"session": sess.ID}, &status); err != nil {
		return err
	}
	after, _ := os.ReadFile(filepath.Join(repo, "main.go"))
	fmt.Fprintf(out, "\n/plan status: %s\n", status.Text)
	fmt.Fprintf(out, "main.go unchanged by the refused write: %v\n", string(before) == string(after))

	// The approval card: choose Summary context and edits mode, then accept.
	var card struct {
		Attempt string `json:"attempt"`
	}
	if err := c.Call(ctx, "approval/get", map[string]string{"session": sess.ID}, &card); err != nil {
		return err
	}
	for _, ch := range []map[string]string{{"axis": "context", "value": "summary"}, {"axis": "mode", "value": "edits"}} {
		if err := c.Call(ctx, "approval/update", map[string]any{"session": sess.ID, "attempt": card.Attempt, "change": ch}, &card); err != nil {
			return err
		}
	}
	fmt.Fprintf(out, "\n[approval card] Location here · Context summary · Execution direct · Mode edits → RET (accept)\n")
	seen := len(c.Events())
	var acc struct {
		Artifact string `json:"artifact"`
	}
	if err := c.Call(ctx, "approval/accept", map[string]string{"session": sess.ID, "attempt": card.Attempt}, &acc); err != nil {
		return err
	}
	if _, err := c.WaitEvent(ctx, func(e rpc.Event) bool {
		return e.Kind == "handoff" && (strings.Contains(string(e.Data), `"done"`) || strings.Contains(string(e.Data), `"failed"`))
	}); err != nil {
		return err
	}
	printTranscript(out, c.Events()[seen:])
	if err := c.Call(ctx, "plan/status", map[string]string{"session": sess.ID}, &status); err != nil {
		return err
	}
	diff, _ := exec.Command("git", "-C", repo, "diff", "--stat").CombinedOutput()
	fmt.Fprintf(out, "\naccepted plan archived as %s\n/plan status: %s\ngit diff --stat:\n%s", acc.Artifact, status.Text, diff)
	if keep {
		fmt.Fprintf(out, "state lives in %s (SQLite: state.db; plan files under sessions/<id>/work/); kept for inspection\n", state)
	} else {
		fmt.Fprintf(out, "the temporary directory is removed now; run planbridge demo --keep to inspect it\n")
	}
	return c.Call(ctx, "shutdown", nil, nil)
}

func makeDemoRepo(dir string) error {
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return err
	}
	for name, body := range demoFiles {
		if err := os.WriteFile(filepath.Join(dir, name), []byte(body), 0o644); err != nil {
			return err
		}
	}
	for _, args := range [][]string{
		{"init", "-q", "-b", "main"},
		{"add", "-A"},
		{"-c", "user.name=demo", "-c", "user.email=demo@example.invalid", "commit", "-q", "-m", "greeter"},
	} {
		cmd := exec.Command("git", args...)
		cmd.Dir = dir
		if b, err := cmd.CombinedOutput(); err != nil {
			return fmt.Errorf("git %s: %v: %s", strings.Join(args, " "), err, b)
		}
	}
	return nil
}

// printTranscript renders events the way the Emacs buffer does, in plain text.
func printTranscript(out io.Writer, evs []rpc.Event) {
	atLineStart := true
	nl := func() {
		if !atLineStart {
			fmt.Fprintln(out)
			atLineStart = true
		}
	}
	for _, e := range evs {
		var d map[string]any
		_ = json.Unmarshal(e.Data, &d)
		switch e.Kind {
		case "text":
			s, _ := d["delta"].(string)
			fmt.Fprint(out, s)
			atLineStart = strings.HasSuffix(s, "\n")
		case "tool_call":
			nl()
			args, _ := json.Marshal(d["arguments"])
			fmt.Fprintf(out, "  ⚙ %s %s\n", d["name"], args)
		case "tool_result":
			s, _ := d["output"].(string)
			if i := strings.IndexByte(s, '\n'); i >= 0 && i < len(s)-1 {
				s = s[:i] + " …"
			}
			fmt.Fprintf(out, "    → %s\n", strings.TrimSpace(s))
		case "blocked":
			fmt.Fprintf(out, "    ⛔ blocked (%s): %s\n", d["code"], d["reason"])
		case "proposal":
			nl()
			fmt.Fprintf(out, "\n┌─ Proposed plan: %s\n", d["title"])
			for _, l := range strings.Split(strings.TrimRight(fmt.Sprint(d["text"]), "\n"), "\n") {
				fmt.Fprintf(out, "│ %s\n", l)
			}
			fmt.Fprintf(out, "└─ saved as %s (sha256 %.12s…)\n", d["path"], d["hash"])
		case "diagnostic":
			nl()
			fmt.Fprintf(out, "  ⚠ %s: %s\n", d["level"], d["message"])
		case "notice", "error":
			nl()
			fmt.Fprintf(out, "  [%s] %s\n", e.Kind, d["message"])
		case "user":
			nl()
			fmt.Fprintf(out, "> %s\n", d["display"])
		case "steps":
			var p struct {
				Steps []struct{ ID, Status, Imperative string }
			}
			json.Unmarshal(e.Data, &p)
			done := 0
			for _, st := range p.Steps {
				if st.Status == "completed" {
					done++
				}
			}
			nl()
			fmt.Fprintf(out, "  [steps] %d/%d done\n", done, len(p.Steps))
		}
	}
	nl()
}

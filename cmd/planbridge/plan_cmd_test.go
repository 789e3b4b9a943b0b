package main

import (
	"bytes"
	"context"
	"encoding/json"
	"go/ast"
	"go/parser"
	"go/token"
	"io/fs"
	"os"
	"os/exec"
	"path/filepath"
	"sort"
	"strings"
	"syscall"
	"testing"
	"time"
)

const planOnlyProposal = `{"text": "Done.\n\n<proposed_plan>\n# Rename the greeter\n\n## Summary\n- Rename it.\n\n## Key Changes\n- Edit main.go.\n</proposed_plan>\n"}`

// hostileSteps try every way a model could write while planning.
const hostileSteps = `
 {"text": "Let me just do it.", "tool_calls": [
   {"name": "write_file", "arguments": {"path": "main.go", "content": "package evil\n"}},
   {"name": "write_file", "arguments": {"path": "new.txt", "content": "x"}},
   {"name": "edit_file", "arguments": {"path": "main.go", "old": "package main", "new": "package evil"}},
   {"name": "apply_patch", "arguments": {"patch": "--- a/main.go\n+++ b/main.go\n@@ -1 +1 @@\n-package main\n+package evil\n"}},
   {"name": "apply_patch", "arguments": {"patch": "--- /dev/null\n+++ b/.git/hooks/pre-commit\n@@ -0,0 +1 @@\n+touch pwned\n"}},
   {"name": "apply_patch", "arguments": {"patch": "--- /dev/null\n+++ work://notes.md\n@@ -0,0 +1 @@\n+ok\n--- a/main.go\n+++ b/main.go\n@@ -1 +1 @@\n-package main\n+package evil\n"}}
 ]},
 {"text": "Then the shell.", "tool_calls": [
   {"name": "bash", "arguments": {"command": "touch pwned"}},
   {"name": "bash", "arguments": {"command": "echo evil > main.go"}},
   {"name": "bash", "arguments": {"command": "rm -f main.go"}},
   {"name": "bash", "arguments": {"command": "sed -i s/main/evil/ main.go"}},
   {"name": "bash", "arguments": {"command": "git -c user.name=e -c user.email=e@e commit --allow-empty -qm evil"}},
   {"name": "bash", "arguments": {"command": "git config user.name evil"}},
   {"name": "bash", "arguments": {"command": "git status --short > status.txt"}},
   {"name": "bash", "arguments": {"command": "cat main.go | tee copy.go"}},
   {"name": "bash", "arguments": {"command": "git branch evil"}}
 ]},`

// treeSnapshot records every path under dir (.git included) with its
// mode, size, content or link target.
func treeSnapshot(t *testing.T, dir string) map[string]string {
	t.Helper()
	out := map[string]string{}
	err := filepath.WalkDir(dir, func(p string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		rel, _ := filepath.Rel(dir, p)
		fi, err := os.Lstat(p)
		if err != nil {
			return err
		}
		val := fi.Mode().String()
		switch {
		case fi.Mode()&fs.ModeSymlink != 0:
			l, _ := os.Readlink(p)
			val += " -> " + l
		case fi.Mode().IsRegular():
			b, err := os.ReadFile(p)
			if err != nil {
				return err
			}
			val += " " + string(b)
		}
		out[rel] = val
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	return out
}

func diffTrees(a, b map[string]string) []string {
	var d []string
	for k, v := range a {
		if w, ok := b[k]; !ok {
			d = append(d, "removed "+k)
		} else if v != w {
			d = append(d, "changed "+k)
		}
	}
	for k := range b {
		if _, ok := a[k]; !ok {
			d = append(d, "added "+k)
		}
	}
	sort.Strings(d)
	return d
}

// runPlanAs runs planbridge plan, as uid 65534 when unprivileged (and we
// are root), with dirs handed to that user.
func runPlanAs(t *testing.T, unprivileged bool, dirs []string, args ...string) (int, string, string) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	cmd := exec.CommandContext(ctx, binary, append([]string{"plan"}, args...)...)
	if unprivileged && os.Geteuid() == 0 {
		os.Chmod(filepath.Dir(binary), 0o755)
		for _, d := range dirs {
			filepath.Walk(d, func(p string, _ os.FileInfo, err error) error {
				if err == nil {
					os.Lchown(p, nobody, nobody)
				}
				return nil
			})
			for p := filepath.Dir(d); p != "/" && p != "."; p = filepath.Dir(p) {
				if st, err := os.Stat(p); err == nil && st.Mode().Perm()&0o001 == 0 {
					os.Chmod(p, st.Mode().Perm()|0o011)
				}
			}
		}
		cmd.SysProcAttr = &syscall.SysProcAttr{Credential: &syscall.Credential{Uid: nobody, Gid: nobody}}
		cmd.Env = append(os.Environ(), "HOME="+dirs[0])
	}
	var out, errb bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &errb
	err := cmd.Run()
	code := 0
	if ee, ok := err.(*exec.ExitError); ok {
		code = ee.ExitCode()
	} else if err != nil {
		t.Fatalf("planbridge plan %q: %v", args, err)
	}
	return code, out.String(), errb.String()
}

type planJSON struct {
	Proposed     bool   `json:"proposed"`
	Title        string `json:"title"`
	Body         string `json:"body"`
	Hash         string `json:"hash"`
	BlockedTotal int64  `json:"blocked_total"`
	Diagnostics  []struct {
		Level, Message string
	} `json:"diagnostics"`
	Warnings []string `json:"warnings"`
}

// TestPlanCommandProposes: the script engine's proposal is printed as
// Markdown (exit 0) and as JSON whose hash is the body's sha256.
func TestPlanCommandProposes(t *testing.T) {
	ws := gitRepo(t, map[string]string{"main.go": "package main\n"})
	script := writeScript(t, "["+planOnlyProposal+"]")
	code, out, errb := runBinary(t, "", "plan", "--script", script, "-C", ws, "Rename the greeter")
	if code != 0 || !strings.HasPrefix(out, "# Rename the greeter\n") || strings.Contains(out, "proposed_plan") {
		t.Fatalf("plan: exit %d, stdout %q, stderr %q", code, out, errb)
	}
	code, out, errb = runBinary(t, "", "plan", "--json", "--script", script, "-C", ws, "--", "/goal looks like a command")
	var res planJSON
	if err := json.Unmarshal([]byte(out), &res); err != nil || code != 0 {
		t.Fatalf("plan --json: exit %d, %v, stdout %q, stderr %q", code, err, out, errb)
	}
	if !res.Proposed || res.Title != "Rename the greeter" || res.Hash != hashOf(res.Body) || res.Warnings == nil || res.Diagnostics == nil {
		t.Fatalf("plan --json: %+v", res)
	}
	// Its state was private and temporary: nothing under the default state.
	if _, err := os.Stat(filepath.Join(ws, ".planbridge")); err == nil {
		t.Fatal("state written into the workspace")
	}
}

// TestPlanCommandNoProposal: a turn that never proposes exits 3; one whose
// block is unterminated also says why; a failing model request exits 1.
func TestPlanCommandNoProposal(t *testing.T) {
	ws := gitRepo(t, map[string]string{"main.go": "package main\n"})
	code, out, errb := runBinary(t, "", "plan", "--script", writeScript(t, `[{"text": "I looked around; nothing to plan."}]`), "-C", ws, "p")
	if code != 3 || out != "" || !strings.Contains(errb, "without a proposal") {
		t.Fatalf("no proposal: exit %d, stdout %q, stderr %q", code, out, errb)
	}
	code, out, _ = runBinary(t, "", "plan", "--json", "--script", writeScript(t, `[{"text": "<proposed_plan>\n# Half\n- a step\n"}]`), "-C", ws, "p")
	var res planJSON
	if err := json.Unmarshal([]byte(out), &res); err != nil || code != 3 || res.Proposed || len(res.Diagnostics) != 1 || res.Diagnostics[0].Level != "warning" {
		t.Fatalf("unterminated: exit %d, %v, %q", code, err, out)
	}
	code, out, errb = runBinary(t, "", "plan", "--script", writeScript(t, `[{"error": "model exploded"}]`), "-C", ws, "p")
	if code != 1 || out != "" || !strings.Contains(errb, "model exploded") {
		t.Fatalf("failed turn: exit %d, stdout %q, stderr %q", code, out, errb)
	}
	if code, _, errb := runBinary(t, "", "plan", "--script", writeScript(t, "[]"), "-C", filepath.Join(ws, "missing"), "p"); code != 1 || !strings.Contains(errb, "not a directory") {
		t.Fatalf("missing workspace: exit %d, %q", code, errb)
	}
	if code, _, errb := runBinary(t, "", "plan", "-C", ws, "p"); code != 2 || !strings.Contains(errb, "no engine") {
		t.Fatalf("no engine: exit %d, %q", code, errb)
	}
	if code, _, _ := runBinary(t, "", "plan", "--script", writeScript(t, "[]"), "-C", ws); code != 2 {
		t.Fatalf("no prompt: exit %d", code)
	}
}

// TestPlanCommandCannotWrite: a model that tries write_file, edit_file,
// apply_patch and mutating shell commands leaves the repository (its .git
// included) byte-identical, as root and as an unprivileged owner of the
// repository, and the proposal still comes out.
func TestPlanCommandCannotWrite(t *testing.T) {
	for _, unpriv := range []bool{false, true} {
		name := map[bool]string{false: "root", true: "nobody"}[unpriv]
		t.Run(name, func(t *testing.T) {
			ws := gitRepo(t, map[string]string{"main.go": "package main\n", "README.md": "# r\n"})
			state := filepath.Join(t.TempDir(), "state")
			os.MkdirAll(state, 0o700)
			script := writeScript(t, "["+hostileSteps+planOnlyProposal+"]")
			os.Chmod(script, 0o644)
			os.Chmod(filepath.Dir(script), 0o755)
			before := treeSnapshot(t, ws)
			code, out, errb := runPlanAs(t, unpriv, []string{state, ws}, "--json", "--state-dir", state, "--script", script, "-C", ws, "implement it now")
			var res planJSON
			if err := json.Unmarshal([]byte(out), &res); err != nil || code != 0 || !res.Proposed {
				t.Fatalf("exit %d, %v, stdout %q, stderr %q", code, err, out, errb)
			}
			if d := diffTrees(before, treeSnapshot(t, ws)); len(d) > 0 {
				t.Fatalf("the plan-only run changed the repository: %v", d)
			}
			if res.BlockedTotal < 10 {
				t.Fatalf("only %d calls were refused: %+v", res.BlockedTotal, res)
			}
		})
	}
}

// TestPlanCommandHasNoAcceptPath: the headless path's code names no
// acceptance, park, start or retry entry point, so none can run in it.
func TestPlanCommandHasNoAcceptPath(t *testing.T) {
	forbidden := map[string]bool{"Accept": true, "AcceptExpecting": true, "Retry": true, "startHandoff": true,
		"Park": true, "StartParked": true, "Submit": true, "GoalCommand": true, "ExitPlan": true}
	check := func(file string, funcs ...string) {
		f, err := parser.ParseFile(token.NewFileSet(), file, nil, 0)
		if err != nil {
			t.Fatal(err)
		}
		want := map[string]bool{}
		for _, n := range funcs {
			want[n] = true
		}
		found := 0
		for _, d := range f.Decls {
			fd, ok := d.(*ast.FuncDecl)
			if !ok || !want[fd.Name.Name] {
				continue
			}
			found++
			ast.Inspect(fd, func(n ast.Node) bool {
				if sel, ok := n.(*ast.SelectorExpr); ok && forbidden[sel.Sel.Name] {
					t.Errorf("%s: %s calls %s", file, fd.Name.Name, sel.Sel.Name)
				}
				return true
			})
		}
		if found != len(funcs) {
			t.Fatalf("%s: found %d of %v", file, found, funcs)
		}
	}
	check("plan_cmd.go", "runPlan")
	check(filepath.Join("..", "..", "internal", "planonly", "planonly.go"), "Run", "Digest")
}

package agent

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path"
	"path/filepath"
	"regexp"
	"strings"

	"planbridge/internal/atomicfile"
)

// Meta is what a tool declares about itself. The zero value means "may do
// anything": a tool without metadata is not plan-safe (fail closed).
type Meta struct {
	// ReadOnly tools never change files, processes or the network.
	ReadOnly bool
	// Edits tools change workspace files (Edits mode runs them unasked).
	Edits bool
	// SessionOnly tools change only the session's own tracking state (the
	// todo list, plan steps, the Goal): allowed in Plan, never asked.
	SessionOnly bool
	// Delegates tools start a child agent whose every call passes the same
	// gate under the parent turn's stamp; the turn runs them itself.
	Delegates bool
	// Writes, when set, returns the file paths a call with args writes (or
	// deletes), as the call spells them. The gate classifies each one
	// ([Roots.ClassifyWrite]): a file tool is plan-safe only when every
	// target is the session's scratch area, and a repository control file
	// always needs the person. An error means the call cannot run.
	Writes func(args json.RawMessage) ([]string, error)
	// OfferInPlan offers a writing tool to the model in Plan, for the
	// session's scratch area (exposure only: the gate decides from Writes).
	OfferInPlan bool
}

// Tool is one callable tool.
type Tool struct {
	Spec ToolSpec
	Meta Meta
	Run  func(ctx context.Context, env *Env, args json.RawMessage) (string, error)
}

// Shell runs bash commands for the bash tool.
type Shell interface {
	// Classify reports whether src is read-only, with a reason when not.
	Classify(src string) (allow bool, reason string)
	// RunReadOnly runs src in roots.Workspace through the hardened
	// read-only runner, reading only what roots allow (the one read
	// policy). refused is true (with reason) when the runner refused at
	// execution.
	RunReadOnly(ctx context.Context, roots Roots, src string) (out string, exit int, refused bool, reason string, err error)
	// Run runs src without restriction (outside Plan, after the gate).
	Run(ctx context.Context, dir, src string) (out string, exit int, err error)
}

// Env is what tool executors may touch.
type Env struct {
	Roots Roots
	Shell Shell
	// ReadOnlyShell makes the bash tool use the read-only runner; the gate
	// sets it for every Plan call and for read-only commands outside Plan.
	ReadOnlyShell bool
	// Protected are further directories whose files are project
	// configuration ([Roots.ClassifyWrite]'s extra).
	Protected []string
	// AllowProtected is set for one call the person confirmed although it
	// writes a protected path; file tools refuse such writes otherwise.
	AllowProtected bool
}

// Registry is a set of tools by name. Not safe for concurrent mutation;
// build it once and share it read-only.
type Registry struct {
	tools map[string]*Tool
	order []string
}

// NewRegistry returns a registry holding tools.
func NewRegistry(tools ...*Tool) *Registry {
	r := &Registry{tools: map[string]*Tool{}}
	for _, t := range tools {
		r.Add(t)
	}
	return r
}

// Add registers t, replacing a tool of the same name.
func (r *Registry) Add(t *Tool) {
	if _, ok := r.tools[t.Spec.Name]; !ok {
		r.order = append(r.order, t.Spec.Name)
	}
	r.tools[t.Spec.Name] = t
}

// Get returns the tool named name or nil.
func (r *Registry) Get(name string) *Tool { return r.tools[name] }

// Specs lists the tools offered to the model, filtered by keep (nil = all).
func (r *Registry) Specs(keep func(*Tool) bool) []ToolSpec {
	var out []ToolSpec
	for _, n := range r.order {
		if t := r.tools[n]; keep == nil || keep(t) {
			out = append(out, t.Spec)
		}
	}
	return out
}

// MaxToolOutput bounds what a tool returns to the model.
const MaxToolOutput = 256 << 10

func clip(s string) string {
	if len(s) <= MaxToolOutput {
		return s
	}
	return s[:MaxToolOutput] + fmt.Sprintf("\n[output truncated at %d bytes]", MaxToolOutput)
}

func schema(props string, required ...string) json.RawMessage {
	req, _ := json.Marshal(required)
	return json.RawMessage(`{"type":"object","properties":{` + props + `},"required":` + string(req) + `,"additionalProperties":false}`)
}

func decode[T any](args json.RawMessage) (T, error) {
	var v T
	dec := json.NewDecoder(bytes.NewReader(args))
	dec.DisallowUnknownFields()
	if err := dec.Decode(&v); err != nil {
		return v, fmt.Errorf("invalid arguments: %w", err)
	}
	return v, nil
}

// DefaultTools returns the built-in tools with their fixed names.
func DefaultTools() []*Tool {
	return []*Tool{readFileTool, listDirTool, globTool, grepTool, writeFileTool, editFileTool, applyPatchTool, bashTool, agentTool}
}

var readFileTool = &Tool{
	Spec: ToolSpec{Name: "read_file", Description: "Read a text file of the workspace (or a work:// file).",
		Parameters: schema(`"path":{"type":"string"}`, "path")},
	Meta: Meta{ReadOnly: true},
	Run: func(ctx context.Context, env *Env, args json.RawMessage) (string, error) {
		a, err := decode[struct{ Path string }](args)
		if err != nil {
			return "", err
		}
		f, err := env.Roots.OpenRead(a.Path)
		if err != nil {
			return "", err
		}
		defer f.Close()
		b, err := io.ReadAll(io.LimitReader(f, MaxToolOutput+1))
		if err != nil {
			return "", err
		}
		return clip(string(b)), nil
	},
}

var listDirTool = &Tool{
	Spec: ToolSpec{Name: "list_dir", Description: "List a directory of the workspace; directories end with /.",
		Parameters: schema(`"path":{"type":"string"}`, "path")},
	Meta: Meta{ReadOnly: true},
	Run: func(ctx context.Context, env *Env, args json.RawMessage) (string, error) {
		a, err := decode[struct{ Path string }](args)
		if err != nil {
			return "", err
		}
		if a.Path == "" {
			a.Path = "."
		}
		p, err := env.Roots.ResolveRead(a.Path)
		if err != nil {
			return "", err
		}
		ents, err := os.ReadDir(p)
		if err != nil {
			return "", err
		}
		var b strings.Builder
		for _, e := range ents {
			b.WriteString(e.Name())
			if e.IsDir() {
				b.WriteByte('/')
			}
			b.WriteByte('\n')
		}
		return clip(b.String()), nil
	},
}

const maxMatches = 1000

var globTool = &Tool{
	Spec: ToolSpec{Name: "glob", Description: "Find workspace files matching a glob pattern (** matches any directories).",
		Parameters: schema(`"pattern":{"type":"string"}`, "pattern")},
	Meta: Meta{ReadOnly: true},
	Run: func(ctx context.Context, env *Env, args json.RawMessage) (string, error) {
		a, err := decode[struct{ Pattern string }](args)
		if err != nil {
			return "", err
		}
		pat := strings.TrimPrefix(path.Clean("/"+a.Pattern), "/")
		if _, err := path.Match(strings.ReplaceAll(pat, "**", "*"), ""); err != nil {
			return "", fmt.Errorf("bad pattern: %w", err)
		}
		root := env.Roots.Workspace
		var out []string
		err = walkFiles(ctx, root, func(rel string) bool {
			if globMatch(strings.Split(pat, "/"), strings.Split(rel, "/")) {
				out = append(out, rel)
			}
			return len(out) < maxMatches
		})
		if err != nil {
			return "", err
		}
		return strings.Join(out, "\n"), nil
	},
}

// globMatch matches path segments against pattern segments; "**" matches
// zero or more segments.
func globMatch(pat, segs []string) bool {
	for len(pat) > 0 {
		if pat[0] == "**" {
			for i := 0; i <= len(segs); i++ {
				if globMatch(pat[1:], segs[i:]) {
					return true
				}
			}
			return false
		}
		if len(segs) == 0 {
			return false
		}
		if ok, _ := path.Match(pat[0], segs[0]); !ok {
			return false
		}
		pat, segs = pat[1:], segs[1:]
	}
	return len(segs) == 0
}

// walkFiles calls fn with the slash-separated relative path of every regular
// file under root, skipping .git; fn returns false to stop.
func walkFiles(ctx context.Context, root string, fn func(rel string) bool) error {
	stop := errors.New("stop")
	err := filepath.WalkDir(root, func(p string, d fs.DirEntry, err error) error {
		if err != nil {
			return nil
		}
		if ctx.Err() != nil {
			return ctx.Err()
		}
		if d.IsDir() {
			if d.Name() == ".git" && p != root {
				return filepath.SkipDir
			}
			return nil
		}
		if !d.Type().IsRegular() {
			return nil
		}
		rel, _ := filepath.Rel(root, p)
		if !fn(filepath.ToSlash(rel)) {
			return stop
		}
		return nil
	})
	if errors.Is(err, stop) {
		return nil
	}
	return err
}

var grepTool = &Tool{
	Spec: ToolSpec{Name: "grep", Description: "Search workspace files for a regular expression (RE2); prints path:line:text.",
		Parameters: schema(`"pattern":{"type":"string"},"path":{"type":"string"}`, "pattern")},
	Meta: Meta{ReadOnly: true},
	Run: func(ctx context.Context, env *Env, args json.RawMessage) (string, error) {
		a, err := decode[struct{ Pattern, Path string }](args)
		if err != nil {
			return "", err
		}
		re, err := regexp.Compile(a.Pattern)
		if err != nil {
			return "", fmt.Errorf("bad pattern: %w", err)
		}
		if a.Path == "" {
			a.Path = "."
		}
		root, err := env.Roots.ResolveRead(a.Path)
		if err != nil {
			return "", err
		}
		var b strings.Builder
		n := 0
		search := func(abs, shown string) {
			f, err := os.Open(abs)
			if err != nil {
				return
			}
			defer f.Close()
			sc := bufio.NewScanner(f)
			sc.Buffer(make([]byte, 64<<10), 1<<20)
			for line := 1; sc.Scan() && n < maxMatches; line++ {
				t := sc.Bytes()
				if bytes.IndexByte(t, 0) >= 0 {
					return // binary
				}
				if re.Match(t) {
					fmt.Fprintf(&b, "%s:%d:%s\n", shown, line, t)
					n++
				}
			}
		}
		if st, err := os.Stat(root); err == nil && !st.IsDir() {
			search(root, env.Roots.Display(root))
		} else {
			err = walkFiles(ctx, root, func(rel string) bool {
				abs := filepath.Join(root, rel)
				search(abs, env.Roots.Display(abs))
				return n < maxMatches
			})
			if err != nil {
				return "", err
			}
		}
		return clip(b.String()), nil
	},
}

var writeFileTool = &Tool{
	Spec: ToolSpec{Name: "write_file", Description: "Create or replace a workspace file with content.",
		Parameters: schema(`"path":{"type":"string"},"content":{"type":"string"}`, "path", "content")},
	Meta: Meta{Edits: true, Writes: pathArg},
	Run: func(ctx context.Context, env *Env, args json.RawMessage) (string, error) {
		a, err := decode[struct{ Path, Content string }](args)
		if err != nil {
			return "", err
		}
		p, err := env.resolveWrite(a.Path)
		if err != nil {
			return "", err
		}
		if err := atomicfile.WriteFileIn(env.writeAnchor(p), p, []byte(a.Content), filePerm(p)); err != nil {
			return "", err
		}
		return fmt.Sprintf("wrote %d bytes to %s", len(a.Content), a.Path), nil
	},
}

// pathArg is the Writes of a tool whose "path" argument is the file it writes.
func pathArg(args json.RawMessage) ([]string, error) {
	var a struct{ Path string }
	if err := json.Unmarshal(args, &a); err != nil {
		return nil, fmt.Errorf("invalid arguments: %w", err)
	}
	if a.Path == "" {
		return nil, fmt.Errorf("invalid arguments: path is empty")
	}
	return []string{a.Path}, nil
}

func filePerm(p string) os.FileMode {
	if st, err := os.Stat(p); err == nil {
		return st.Mode().Perm()
	}
	return 0o644
}

var editFileTool = &Tool{
	Spec: ToolSpec{Name: "edit_file", Description: "Replace the one occurrence of old with new in a workspace file.",
		Parameters: schema(`"path":{"type":"string"},"old":{"type":"string"},"new":{"type":"string"}`, "path", "old", "new")},
	Meta: Meta{Edits: true, Writes: pathArg},
	Run: func(ctx context.Context, env *Env, args json.RawMessage) (string, error) {
		a, err := decode[struct{ Path, Old, New string }](args)
		if err != nil {
			return "", err
		}
		p, err := env.resolveWrite(a.Path)
		if err != nil {
			return "", err
		}
		b, err := os.ReadFile(p)
		if err != nil {
			return "", err
		}
		if a.Old == "" {
			return "", fmt.Errorf("old text is empty")
		}
		switch n := strings.Count(string(b), a.Old); n {
		case 0:
			return "", fmt.Errorf("old text not found in %s", a.Path)
		case 1:
		default:
			return "", fmt.Errorf("old text occurs %d times in %s; give more context", n, a.Path)
		}
		if err := atomicfile.WriteFile(p, []byte(strings.Replace(string(b), a.Old, a.New, 1)), filePerm(p)); err != nil {
			return "", err
		}
		return "edited " + a.Path, nil
	},
}

// PatchTargets returns the paths a patch writes; an error if it does not parse.
func PatchTargets(args json.RawMessage) ([]string, error) {
	a, err := decode[struct{ Patch string }](args)
	if err != nil {
		return nil, err
	}
	files, err := ParsePatch(a.Patch)
	if err != nil {
		return nil, err
	}
	var out []string
	for _, f := range files {
		out = append(out, f.OldPath, f.NewPath)
	}
	return out, nil
}

var applyPatchTool = &Tool{
	Spec: ToolSpec{Name: "apply_patch", Description: "Apply a unified diff (as git apply takes it) to workspace or work:// files, all or nothing.",
		Parameters: schema(`"patch":{"type":"string"}`, "patch")},
	Meta: Meta{Edits: true, Writes: patchWrites, OfferInPlan: true},
	Run: func(ctx context.Context, env *Env, args json.RawMessage) (string, error) {
		a, err := decode[struct{ Patch string }](args)
		if err != nil {
			return "", err
		}
		files, err := ParsePatch(a.Patch)
		if err != nil {
			return "", err
		}
		names, err := applyPatch(env, files, nil)
		if err != nil {
			return "", err
		}
		return "patched " + strings.Join(names, ", "), nil
	},
}

// patchWrites is apply_patch's Writes: every file the patch changes.
func patchWrites(args json.RawMessage) ([]string, error) {
	targets, err := PatchTargets(args)
	if err != nil {
		return nil, err
	}
	var out []string
	for _, p := range targets {
		if p != "" {
			out = append(out, p)
		}
	}
	return out, nil
}

var bashTool = &Tool{
	Spec: ToolSpec{Name: "bash", Description: "Run a bash command in the workspace. In Plan only read-only commands run.",
		Parameters: schema(`"command":{"type":"string"}`, "command")},
	// No metadata: bash is mutating unless the gate classifies it read-only.
	Run: func(ctx context.Context, env *Env, args json.RawMessage) (string, error) {
		a, err := decode[struct{ Command string }](args)
		if err != nil {
			return "", err
		}
		if env.Shell == nil {
			return "", fmt.Errorf("no shell available")
		}
		out, code, refused, reason, err := runBash(ctx, env.Shell, env.Roots, a.Command, env.ReadOnlyShell)
		if err != nil {
			return "", err
		}
		if refused {
			return "", &RefusedError{Reason: reason}
		}
		return fmt.Sprintf("%s\n[exit status %d]", out, code), nil
	},
}

// runBash runs src in the workspace: through the shell's hardened
// read-only runner when readOnly (refused: its dynamic check refused the
// command, for reason), else as plain bash. The bash tool and an ACP
// agent's terminals both run commands through it.
func runBash(ctx context.Context, sh Shell, roots Roots, src string, readOnly bool) (out string, code int, refused bool, reason string, err error) {
	if readOnly {
		return sh.RunReadOnly(ctx, roots, src)
	}
	out, code, err = sh.Run(ctx, roots.Workspace, src)
	return out, code, false, "", err
}

// RefusedError is a refusal found while a tool ran (the read-only runner's
// dynamic check); the turn reports it like a gate refusal.
type RefusedError struct{ Reason string }

func (e *RefusedError) Error() string { return e.Reason }

var agentTool = &Tool{
	Spec: ToolSpec{Name: "agent", Description: "Delegate an independent investigation (or a critique of a draft plan you include) to a child agent; returns its report. In Plan the child keeps Plan's limits.",
		Parameters: schema(`"task":{"type":"string"}`, "task")},
	Meta: Meta{Delegates: true},
	Run: func(ctx context.Context, env *Env, args json.RawMessage) (string, error) {
		return "", fmt.Errorf("agent runs only inside a turn")
	},
}

// EditedFiles are the workspace files a completed call of a built-in file
// tool (write_file, edit_file, apply_patch) edited, as the paths its
// arguments name: relative to the workspace ws, cleaned and
// slash-separated. work:// paths are not workspace files and are left
// out; so are the calls of every other tool and arguments that do not
// parse. An absolute path outside ws comes back as its relative path from
// ws ("../…"): whoever copies the files confines them.
func EditedFiles(call ToolCall, ws string) []string {
	var writes func(json.RawMessage) ([]string, error)
	switch call.Name {
	case writeFileTool.Spec.Name, editFileTool.Spec.Name:
		writes = pathArg
	case applyPatchTool.Spec.Name:
		writes = patchWrites
	default:
		return nil
	}
	paths, _ := writes(call.Arguments)
	var out []string
	for _, p := range paths {
		if p == "" || IsWorkPath(p) {
			continue
		}
		if filepath.IsAbs(p) {
			rel, err := filepath.Rel(ws, p)
			if err != nil {
				continue
			}
			p = rel
		}
		out = append(out, filepath.ToSlash(filepath.Clean(p)))
	}
	return out
}

package atomicfile

import (
	"go/ast"
	"go/parser"
	"go/token"
	"io/fs"
	"path/filepath"
	"sort"
	"strings"
	"testing"
)

// dirMakers are the calls that create directories. A session's directory
// (<state>/sessions/<id>) must be created only where its session is
// (package session's creation of a session and of a fork session): every
// other write below it goes through this package's …In functions, which
// never create their anchor. os.Mkdir of one level is as safe only
// below a directory the caller made sure of; MkdirAll is not.
var dirMakers = map[string]bool{
	"os.MkdirAll": true, "os.Mkdir": true, "os.MkdirTemp": true,
	".MkdirAll": true, ".Mkdir": true, // an *os.Root's (receiver any)
}

// allowedDirMakers is every function outside this package that may call a
// dirMaker, each with why it never creates a session's directory. A new
// call site fails TestNoUnreviewedDirectoryMaker until it is listed here
// (or, better, uses MkdirIn / WriteFileIn with the session's directory as
// anchor).
var allowedDirMakers = map[string]string{
	"internal/session/manager.go:Create":            "creates a new session's directory, after its row",
	"internal/handoffport/env.go:CreateForkSession": "creates a fork session's directory, after its row",
	"internal/handoffport/env.go:HandOver":          "the fork session's directory once more, one level, only while its row exists (a crash after CreateForkSession's commit left it unmade)",
	"internal/store/lock.go:Lock":                   "the state directory",
	"internal/store/modes.go:secureStateDir":        "the state directory",
	"internal/agent/acp.go:start":                   "<state>/acp, the acp agent's own directory",
	"internal/agent/acp_confine.go:confinePlanACP":  "below <state>/acp",
	"internal/agent/apply.go:mkdirs":                "one level at a time below the anchor Env.writeAnchor names",
	"review/watch.go:restore":                       "one level (a numbered restoration) below a parent made with MkdirIn",
	"review/effects.go:restoreOne":                  "through the workspace's os.Root",
	"review/effects.go:keepCopy":                    "through the restoration's own os.Root",
	"handoff/saveplan.go:SaveToProject":             "the workspace's docs/plans, one level at a time",
	"worktree/add.go:*":                             "a Worktree fork's checkout and the repository's refs",
	"worktree/exclude.go:*":                         "the repository's .git/info",
	"sandbox/probe.go:makeCgroup":                   "a cgroup",
	"cmd/planbridge/demo.go:*":                      "the demo's temporary directory",
	"cmd/planbridge/plan_cmd.go:*":                  "a temporary directory",
}

// TestNoUnreviewedDirectoryMaker parses every non-test Go file of the
// module and fails on a call that creates directories from a function
// allowedDirMakers does not list: the construction that keeps a write
// from bringing back a deleted session's directory is checked, not
// remembered.
func TestNoUnreviewedDirectoryMaker(t *testing.T) {
	root, err := filepath.Abs("../..")
	if err != nil {
		t.Fatal(err)
	}
	fset := token.NewFileSet()
	seen := map[string]bool{}
	var bad []string
	err = filepath.WalkDir(root, func(p string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		if d.IsDir() {
			switch d.Name() {
			case ".git", "testdata", "node_modules", "elisp", "bin":
				return filepath.SkipDir
			}
			return nil
		}
		if !strings.HasSuffix(p, ".go") || strings.HasSuffix(p, "_test.go") {
			return nil
		}
		rel, _ := filepath.Rel(root, p)
		rel = filepath.ToSlash(rel)
		if strings.HasPrefix(rel, "internal/atomicfile/") {
			return nil
		}
		f, err := parser.ParseFile(fset, p, nil, 0)
		if err != nil {
			return err
		}
		for _, decl := range f.Decls {
			fn, ok := decl.(*ast.FuncDecl)
			if !ok || fn.Body == nil {
				continue
			}
			ast.Inspect(fn.Body, func(n ast.Node) bool {
				call, ok := n.(*ast.CallExpr)
				if !ok {
					return true
				}
				sel, ok := call.Fun.(*ast.SelectorExpr)
				if !ok {
					return true
				}
				name := "." + sel.Sel.Name
				if id, ok := sel.X.(*ast.Ident); ok && id.Name == "os" {
					name = "os" + name
				} else if name != ".MkdirAll" && name != ".Mkdir" {
					return true
				}
				if !dirMakers[name] {
					return true
				}
				key := rel + ":" + fn.Name.Name
				seen[key], seen[rel+":*"] = true, true
				if _, ok := allowedDirMakers[key]; !ok {
					if _, ok := allowedDirMakers[rel+":*"]; !ok {
						bad = append(bad, fset.Position(call.Pos()).String()+" "+name+" in "+fn.Name.Name)
					}
				}
				return true
			})
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	sort.Strings(bad)
	for _, b := range bad {
		t.Errorf("%s: creates directories, and is not reviewed: write below a session's directory with atomicfile.MkdirIn / WriteFileIn (anchor: the session's directory), or list the function in allowedDirMakers with why it never creates one", b)
	}
	for k := range allowedDirMakers {
		if !seen[k] {
			t.Errorf("allowedDirMakers lists %s, which makes no directory any more: remove it", k)
		}
	}
}

package bashclass

import (
	"bytes"
	"context"
	"fmt"
	"slices"
	"strings"
)

// gitHelpers returns a reason to refuse call when the repository around
// dir has something that would make it run a helper program or another
// repository's git: a tracked submodule (gitlink or .gitmodules) or a
// clean/smudge/process filter driver that applies to a tracked path. It
// returns "" outside a work tree, where those cannot apply. Inspection
// failures inside a work tree refuse (fail closed).
func (x *executor) gitHelpers(ctx context.Context, dir string, env []string, call gitCall) string {
	git := func(stdin []byte, args ...string) ([]byte, error) {
		full := slices.Concat(gitHardening, call.globals, args)
		path, err := lookPath("git")
		if err != nil {
			return nil, err
		}
		var out, errb bytes.Buffer
		cmd := x.command(ctx, dir, path, full, env)
		cmd.Stdin = bytes.NewReader(stdin)
		cmd.Stdout, cmd.Stderr = &out, &errb
		if err := waitStatus(ctx, cmd); err != nil {
			return out.Bytes(), fmt.Errorf("git %s: %v: %s", args[0], err, strings.TrimSpace(errb.String()))
		}
		return out.Bytes(), nil
	}
	topOut, err := git(nil, "rev-parse", "--show-toplevel")
	top := strings.TrimSpace(string(topOut))
	if err != nil || top == "" {
		return ""
	}
	failed := func(err error) string {
		return fmt.Sprintf("git %s refused: cannot check the repository for filters and submodules (%v)", call.sub, err)
	}
	index, err := git(nil, "-C", top, "ls-files", "-s", "-z")
	if err != nil {
		return failed(err)
	}
	var paths []string
	for _, entry := range strings.Split(string(index), "\x00") {
		meta, path, ok := strings.Cut(entry, "\t")
		if !ok {
			continue
		}
		if strings.HasPrefix(meta, "160000 ") {
			return fmt.Sprintf("git %s refused: the repository has a submodule at %q (git would run in it)", call.sub, path)
		}
		if path == ".gitmodules" {
			return fmt.Sprintf("git %s refused: the repository has submodules (.gitmodules)", call.sub)
		}
		paths = append(paths, path)
	}
	cfg, err := git(nil, "-C", top, "config", "-z", "--get-regexp", `^filter\..*\.(clean|smudge|process)$`)
	if err != nil {
		if len(cfg) == 0 && strings.Contains(err.Error(), "exit status 1") {
			return "" // no filter drivers configured
		}
		return failed(err)
	}
	drivers := map[string]bool{}
	for _, entry := range strings.Split(string(cfg), "\x00") {
		key, _, _ := strings.Cut(entry, "\n")
		key = strings.TrimPrefix(key, "filter.")
		if i := strings.LastIndexByte(key, '.'); i > 0 {
			drivers[key[:i]] = true
		}
	}
	if len(drivers) == 0 || len(paths) == 0 {
		return ""
	}
	stdin := []byte(strings.Join(paths, "\x00") + "\x00")
	attrs, err := git(stdin, "-C", top, "check-attr", "-z", "--stdin", "filter")
	if err != nil {
		return failed(err)
	}
	f := strings.Split(string(attrs), "\x00")
	for i := 0; i+2 < len(f); i += 3 {
		if drivers[f[i+2]] {
			return fmt.Sprintf("git %s refused: filter %q runs a clean/smudge helper for %q", call.sub, f[i+2], f[i])
		}
	}
	return ""
}

package review

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path"
	"strconv"
	"strings"
)

// A BaseFile is one file's content at an implementation's base.
type BaseFile struct {
	Absent  bool   `json:"absent,omitempty"`
	Hash    string `json:"hash,omitempty"`    // sha256 of the content (of "symlink:"+target for a link)
	Content []byte `json:"content,omitempty"` // nil when too large (Hash only), or a link
}

// A Base is the exact state an implementation started from: HEAD, plus
// the content of every file already dirty then (Here mode with
// uncommitted work), so the report counts only what the implementation
// changed. Paths are relative to the checkout root (Root); Prefix is the
// workspace within it ("sub/dir/" or "").
type Base struct {
	ID        string              `json:"id"`
	Title     string              `json:"title"`
	Hash      string              `json:"hash"`     // the accepted plan's
	Artifact  string              `json:"artifact"` // its work:// archive
	Workspace string              `json:"workspace"`
	Root      string              `json:"root,omitempty"` // checkout root ("" not a checkout)
	Prefix    string              `json:"prefix,omitempty"`
	Head      string              `json:"head,omitempty"`
	Dirty     map[string]BaseFile `json:"dirty"` // by root-relative path
}

// Take records the checkout t, read through root, into b: HEAD and every
// dirty file's content, bounded as a [Snapshot] is (a file over
// [MaxWatchedFile], or past [MaxWatchedTotal] in all, keeps only its
// hash: its change is listed, not diffed).
func (b *Base) Take(ctx context.Context, t Tree, root *os.Root) error {
	b.Head = t.Head()
	if b.Dirty == nil {
		b.Dirty = map[string]BaseFile{}
	}
	dirty, err := t.Dirty(ctx)
	if err != nil {
		return fmt.Errorf("the workspace status: %w", err)
	}
	total := 0
	for _, p := range dirty {
		b.Dirty[p] = baseFile(readState(root, p, &total))
	}
	return nil
}

// baseFile is a snapshot state as a base keeps it.
func baseFile(s FileState) BaseFile {
	switch s.Kind {
	case 'f', 'x':
		if s.Kept {
			return BaseFile{Hash: s.Hash, Content: s.Data}
		}
		return BaseFile{Hash: s.Hash}
	case 'l':
		return BaseFile{Hash: hashOf([]byte("symlink:" + string(s.Data)))}
	}
	return BaseFile{Absent: true}
}

// before is p's state at the base: as recorded when dirty then, else as
// committed at the base's HEAD.
func (b *Base) before(t Tree, p string) BaseFile {
	if f, ok := b.Dirty[p]; ok {
		return f
	}
	if b.Head != "" {
		if e, ok := t.Committed(b.Head, p); ok && e.Kind != 'g' {
			return baseFile(e)
		}
	}
	return BaseFile{Absent: true}
}

// Changes lists the files whose content now differs from the base: the
// candidates are the files dirty now or at the base and the files the
// tool calls wrote (events' Paths).
func (b *Base) Changes(ctx context.Context, t Tree, root *os.Root, events []ToolEvent) ([]FileChange, error) {
	dirty, err := t.Dirty(ctx)
	if err != nil {
		return nil, err
	}
	cand := map[string]bool{}
	for _, p := range dirty {
		cand[p] = true
	}
	for p := range b.Dirty {
		cand[p] = true
	}
	for _, ev := range events {
		for _, p := range ev.Paths {
			cand[p] = true
		}
	}
	var out []FileChange
	total := 0
	for p := range cand {
		before := b.before(t, p)
		after := baseFile(readState(root, p, &total))
		if before.Absent == after.Absent && before.Hash == after.Hash {
			continue
		}
		out = append(out, FileChange{Path: p, Before: before.Content, After: after.Content, Existed: !before.Absent, Exists: !after.Absent})
	}
	return out, nil
}

// ErrTooLarge: a file is too large to diff (only its hash was kept).
var ErrTooLarge = errors.New("too large to diff here")

// Diff is the unified diff of the root-relative path rel from the base to
// now, read through root.
func (b *Base) Diff(t Tree, root *os.Root, rel string) (string, error) {
	before := b.before(t, rel)
	total := 0
	after := baseFile(readState(root, rel, &total))
	if (before.Content == nil && !before.Absent) || (after.Content == nil && !after.Absent) {
		return "", fmt.Errorf("%s is %w", rel, ErrTooLarge)
	}
	aName, bName := "a/"+rel, "b/"+rel
	if before.Absent {
		aName = "/dev/null"
	}
	if after.Absent {
		bName = "/dev/null"
	}
	return Unified(aName, bName, string(before.Content), string(after.Content), 3), nil
}

// CleanRel reports whether rel is a clean, relative, slash-separated path
// inside its root ("a/b", never "./a", "../a", "/a" or ".").
func CleanRel(rel string) bool {
	c := path.Clean(rel)
	return rel != "" && c == rel && c != "." && c != ".." && !strings.HasPrefix(c, "../") && !path.IsAbs(c)
}

// ExitStatus reads the "[exit status N]" line a bash result ends with (-1
// when there is none: the command did not run).
func ExitStatus(output string) int {
	out := strings.TrimRight(output, "\n")
	i := strings.LastIndexByte(out, '\n')
	last := out[i+1:]
	if v, ok := strings.CutPrefix(last, "[exit status "); ok {
		if n, err := strconv.Atoi(strings.TrimSuffix(v, "]")); err == nil {
			return n
		}
	}
	return -1
}

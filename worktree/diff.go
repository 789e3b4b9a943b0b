package worktree

import (
	"context"
	"encoding/hex"
	"fmt"
	"strings"
)

// diffHead compares the HEAD tree with the index (git diff-index --cached
// HEAD, without rename detection) and returns entries carrying only the
// Staging code. Subtrees whose cache-tree entry in the index is valid and
// equal to the HEAD subtree are skipped without being read.
func (r *Repo) diffHead(ctx context.Context, idx *gitIndex) ([]Entry, error) {
	_, head, err := r.Head()
	if err != nil {
		return nil, err
	}
	d := &headDiff{ctx: ctx, r: r}
	if head == "" { // unborn branch: everything in the index is added
		d.rest(idx.entries)
		return d.out, nil
	}
	var commit [20]byte
	if _, err := hex.Decode(commit[:], []byte(head)); err != nil {
		return nil, fmt.Errorf("worktree: HEAD %q: %w", head, err)
	}
	tree, err := r.commitTree(commit)
	if err != nil {
		return nil, err
	}
	if err := d.tree("", tree, idx.tree, idx.entries); err != nil {
		return nil, err
	}
	return d.out, nil
}

type headDiff struct {
	ctx context.Context
	r   *Repo
	out []Entry
}

func (d *headDiff) add(path string, code byte) {
	d.out = append(d.out, Entry{Path: path, Staging: code})
}

// rest marks index entries that have no HEAD counterpart as added.
func (d *headDiff) rest(entries []indexEntry) {
	for i := range entries {
		e := &entries[i]
		if e.stage == 0 && !e.intentToAdd {
			d.add(e.name, 'A')
		}
	}
}

// tree compares the HEAD tree h at prefix ("" or "dir/") with the index
// entries under prefix (a contiguous, sorted run). ct is the matching
// cache-tree node or nil.
func (d *headDiff) tree(prefix string, h [20]byte, ct *cacheTree, entries []indexEntry) error {
	if ct != nil && ct.entries >= 0 && ct.tree == h && ct.entries == countStage0(entries) {
		return nil
	}
	if err := d.ctx.Err(); err != nil {
		return err
	}
	tes, err := d.r.readTree(h)
	if err != nil {
		return err
	}
	i := 0
	for _, te := range tes {
		if te.mode == modeTree {
			key := prefix + te.name + "/"
			for i < len(entries) && entries[i].name < key {
				d.rest(entries[i : i+1])
				i++
			}
			j := i
			for j < len(entries) && strings.HasPrefix(entries[j].name, key) {
				j++
			}
			if j == i {
				if err := d.deleted(key, te.hash); err != nil {
					return err
				}
				continue
			}
			var sub *cacheTree
			if ct != nil {
				sub = ct.children[te.name]
			}
			if err := d.tree(key, te.hash, sub, entries[i:j]); err != nil {
				return err
			}
			i = j
			continue
		}
		key := prefix + te.name
		for i < len(entries) && entries[i].name < key {
			d.rest(entries[i : i+1])
			i++
		}
		if i == len(entries) || entries[i].name != key || entries[i].intentToAdd {
			d.add(key, 'D')
			continue
		}
		e := &entries[i]
		for i < len(entries) && entries[i].name == key {
			i++ // skip the other stages of a conflicted path
		}
		if e.stage != 0 {
			continue // reported as unmerged
		}
		switch {
		case e.mode&modeTypeMask != te.mode&modeTypeMask:
			d.add(key, 'T')
		case e.mode != te.mode || e.hash != te.hash:
			d.add(key, 'M')
		}
	}
	d.rest(entries[i:])
	return nil
}

// deleted marks every file of the HEAD tree h at prefix as deleted.
func (d *headDiff) deleted(prefix string, h [20]byte) error {
	tes, err := d.r.readTree(h)
	if err != nil {
		return err
	}
	for _, te := range tes {
		if te.mode == modeTree {
			if err := d.deleted(prefix+te.name+"/", te.hash); err != nil {
				return err
			}
			continue
		}
		d.add(prefix+te.name, 'D')
	}
	return nil
}

func countStage0(entries []indexEntry) int {
	n := 0
	for i := range entries {
		if entries[i].stage == 0 && !entries[i].intentToAdd {
			n++
		}
	}
	return n
}

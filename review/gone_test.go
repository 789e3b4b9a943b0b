package review

import (
	"context"
	"errors"
	"os"
	"path/filepath"
	"testing"

	"planbridge/proposal"
)

// TestTrackerWritesAfterTheSessionIsGone: every write of a Tracker (the
// plan versions and their comments, the card's scope, a staged base and
// its pointer, the scope's record, the tool log, a watched command's mark,
// the report) made after the session's directory was removed, or renamed
// away as a delete sets it aside, fails or records nothing, and leaves
// nothing at the session's path. Before, each atomic write created the
// missing directories, the session's own among them.
func TestTrackerWritesAfterTheSessionIsGone(t *testing.T) {
	ctx := context.Background()
	const body2 = "# Greet\n\n## Key Changes\n- Add `a.txt`\n"
	for _, w := range []struct {
		name    string
		write   func(tr *Tracker, f *fakePort) error
		mustErr bool
	}{
		{"a plan version", func(tr *Tracker, f *fakePort) error { return tr.RecordVersion(proposal.HashBody(body2), body2) }, true},
		{"line comments", func(tr *Tracker, f *fakePort) error {
			return tr.SaveComments(proposal.HashBody(planBody), []Comment{{Line: 1, Text: "why?"}})
		}, false},
		{"the card's scope", func(tr *Tracker, f *fakePort) error {
			return tr.SetCardScope(proposal.HashBody(planBody), []string{"src"})
		}, true},
		{"a staged base", func(tr *Tracker, f *fakePort) error {
			_, err := StageBase(ctx, tr.cfg.Dir, f.ws, "Greet", proposal.HashBody(planBody), "work://plans/accepted-x.md", nil)
			return err
		}, true},
		{"the base pointer", func(tr *Tracker, f *fakePort) error { return BaseCommitted(tr.cfg.Dir, "b-0123456789abcdef") }, true},
		{"the scope's record", func(tr *Tracker, f *fakePort) error {
			tr.Extend([]string{"docs/x"})
			return unsavedErr(f)
		}, false},
		{"the tool log", func(tr *Tracker, f *fakePort) error {
			tr.LogTool(Call{ID: "1", Name: "read_file"}, true, "ok") // its base is gone: nothing to log against
			return unsavedErr(f)
		}, false},
		{"a watched command's mark", func(tr *Tracker, f *fakePort) error {
			_, err := tr.Watch(ctx, Call{ID: "2", Name: "bash", Command: "true", Arguments: []byte(`{"command":"true"}`)}, false)
			return err // its base is gone: nothing watched, no mark
		}, false},
		{"the report", func(tr *Tracker, f *fakePort) error { _, err := tr.Report(ctx); return err }, true},
	} {
		for _, how := range []string{"removed", "renamed"} {
			t.Run(w.name+"/"+how, func(t *testing.T) {
				ws := repo(t, map[string]string{"src/a.go": "a\n"})
				tr, f := newTracker(t, ws)
				if err := tr.RecordVersion(proposal.HashBody(planBody), planBody); err != nil {
					t.Fatal(err)
				}
				accept(t, tr, f, []string{"src"})
				session := filepath.Dir(tr.cfg.Dir)
				if how == "removed" {
					if err := os.RemoveAll(session); err != nil {
						t.Fatal(err)
					}
				} else if err := os.Rename(session, filepath.Join(filepath.Dir(session), ".deleted-s1")); err != nil {
					t.Fatal(err)
				}
				err := w.write(tr, f)
				if w.mustErr && err == nil {
					t.Error("the write succeeded without the session's directory")
				}
				if _, serr := os.Lstat(session); !errors.Is(serr, os.ErrNotExist) {
					t.Fatalf("the write brought back the session's directory (err %v)", err)
				}
			})
		}
	}
}

// unsavedErr is what the port was told could not be saved, as an error.
func unsavedErr(f *fakePort) error {
	f.mu.Lock()
	defer f.mu.Unlock()
	if len(f.unsaved) == 0 {
		return nil
	}
	return errors.New(f.unsaved[0])
}

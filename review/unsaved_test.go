package review

import (
	"context"
	"errors"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"syscall"
	"testing"
)

// fullDisk fails the record writes as a full disk would.
func fullDisk(p string, _ []byte, _ os.FileMode) error {
	return &os.PathError{Op: "write", Path: filepath.Base(p), Err: syscall.ENOSPC}
}

// TestRecordWritesThatFailAreTold: every record of the implementation a
// person depends on that cannot be written (a real failure: a directory
// where the file goes, /dev/full, a full-disk failpoint of the scope's
// record) is told through Port.Unsaved, naming it, and is never
// published as written.
func TestRecordWritesThatFailAreTold(t *testing.T) {
	ctx := context.Background()
	cases := []struct {
		name string
		// run breaks one write and does what writes it; it returns what
		// must hold afterwards (nil: fine).
		run         func(t *testing.T, tr *Tracker, f *fakePort, ws string) error
		wantUnsaved []string // substrings, one per Unsaved in order
		notEvent    string   // an event that must not be published
	}{
		{
			name: "a scope extension",
			run: func(t *testing.T, tr *Tracker, f *fakePort, ws string) error {
				tr.writeRecord = fullDisk
				tr.Extend([]string{"docs/a.md"})
				if tr.Allows("docs/a.md") {
					return errors.New("an extension that was not saved allows the write")
				}
				return nil
			},
			wantUnsaved: []string{"the scope's extension to docs/a.md: write scope.json: no space left on device"},
			notEvent:    "scope",
		},
		{
			name: "an extension the person allowed after a command",
			run: func(t *testing.T, tr *Tracker, f *fakePort, ws string) error {
				f.ask = func(context.Context, Call, string) (bool, error) { return true, nil }
				tr.writeRecord = fullDisk
				out := watched(t, tr, false, "1", func() { writeFile(t, filepath.Join(ws, "docs", "d.md"), "changed\n") })
				if !strings.Contains(out, "could not be saved") || strings.Contains(out, "extended the scope") {
					return errors.New("the model was told the scope was extended: " + out)
				}
				return nil
			},
			wantUnsaved: []string{"the scope's extension to docs/d.md"},
			notEvent:    "scope",
		},
		{
			name: "the record of a restoration",
			run: func(t *testing.T, tr *Tracker, f *fakePort, ws string) error {
				f.ask = func(context.Context, Call, string) (bool, error) { return false, nil }
				tr.writeRecord = fullDisk
				out := watched(t, tr, false, "1", func() { writeFile(t, filepath.Join(ws, "docs", "d.md"), "changed\n") })
				if got := readFile(t, filepath.Join(ws, "docs", "d.md")); got != "d\n" {
					return errors.New("not restored: " + got)
				}
				if !strings.Contains(out, "restored") {
					return errors.New("the model was not told: " + out)
				}
				return nil
			},
			wantUnsaved: []string{"the scope's record of the restoration of docs/d.md"},
			notEvent:    "scope",
		},
		{
			name: "the tool log, once per failing streak",
			run: func(t *testing.T, tr *Tracker, f *fakePort, ws string) error {
				log := filepath.Join(tr.baseDir(), "tools.jsonl")
				if err := os.Symlink("/dev/full", log); err != nil {
					return err
				}
				tr.LogTool(Call{ID: "1", Name: "read_file"}, true, "")
				tr.LogTool(Call{ID: "2", Name: "write_file"}, true, "") // the same streak: told once
				os.Remove(log)
				tr.LogTool(Call{ID: "3", Name: "bash"}, true, "")
				if n := len(readEvents(tr.baseDir())); n != 1 {
					return errors.New("the log did not recover")
				}
				os.Remove(log)
				os.Symlink("/dev/full", log)
				tr.LogTool(Call{ID: "4", Name: "edit_file"}, true, "") // a new streak
				return nil
			},
			wantUnsaved: []string{"the tool log (from the read_file call on", "the tool log (from the edit_file call on"},
		},
		{
			name: "the report when the implementation ends",
			run: func(t *testing.T, tr *Tracker, f *fakePort, ws string) error {
				tr.writeRecord = fullDisk
				tr.ReportIfEnded(ctx, true)
				if tr.StoredReport() != nil {
					return errors.New("a report stored from nowhere")
				}
				return nil
			},
			wantUnsaved: []string{"the implementation report: write report.json: no space left on device"},
			notEvent:    "report",
		},
		{
			name: "the report asked for",
			run: func(t *testing.T, tr *Tracker, f *fakePort, ws string) error {
				os.MkdirAll(filepath.Join(tr.baseDir(), "report.json", "x"), 0o700)
				_, err := tr.Report(ctx)
				var se *SaveError
				if !errors.As(err, &se) || !strings.HasPrefix(err.Error(), "could not save the implementation report: ") {
					return errors.New("the report's failure is not said: " + errString(err))
				}
				return nil
			},
			notEvent: "report", // returned, not told twice
		},
		{
			name: "a record a command changed that cannot be put back",
			run: func(t *testing.T, tr *Tracker, f *fakePort, ws string) error {
				bd := tr.baseDir()
				tr.writeRecord = fullDisk
				watched(t, tr, false, "1", func() {
					writeFile(t, filepath.Join(bd, "base.json"), "{}")
					os.Remove(filepath.Join(bd, "tools.jsonl")) // absent before: removed, nothing to write
					writeFile(t, filepath.Join(bd, "tools.jsonl"), "forged\n")
				})
				f.mu.Lock()
				defer f.mu.Unlock()
				if len(f.notices) != 1 || !strings.Contains(f.notices[0], "(tools.jsonl); they were restored") {
					return errors.New("the notice does not name only what was put back: " + strings.Join(f.notices, "|"))
				}
				return nil
			},
			wantUnsaved: []string{"the implementation's record base.json (a command changed it, and it could not be put back)"},
		},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			ws := repo(t, map[string]string{"src/a.go": "a\n", "docs/d.md": "d\n"})
			tr, f := newTracker(t, ws)
			accept(t, tr, f, []string{"src"})
			tr.UpdateStep(ctx, "s1", StepInProgress)
			if err := c.run(t, tr, f, ws); err != nil {
				t.Fatal(err)
			}
			f.mu.Lock()
			unsaved := append([]string(nil), f.unsaved...)
			f.mu.Unlock()
			if len(unsaved) != len(c.wantUnsaved) {
				t.Fatalf("told %q, want %d like %q", unsaved, len(c.wantUnsaved), c.wantUnsaved)
			}
			for i, w := range c.wantUnsaved {
				if !strings.Contains(unsaved[i], w) {
					t.Errorf("told %q, want it to name %q", unsaved[i], w)
				}
			}
			if c.notEvent != "" && slices.Contains(f.eventList(), c.notEvent) {
				t.Errorf("published %q of a record that was not written: %q", c.notEvent, f.eventList())
			}
		})
	}
}

func errString(err error) string {
	if err == nil {
		return "<nil>"
	}
	return err.Error()
}

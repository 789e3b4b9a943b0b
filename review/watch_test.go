package review

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"testing"
)

// watched runs command (a Go func standing in for the shell) inside a
// Watch of the tracker, as the agent's watcher would, and returns the
// output the model gets.
func watched(t *testing.T, tr *Tracker, unattended bool, id string, command func()) string {
	t.Helper()
	ctx := context.Background()
	after, err := tr.Watch(ctx, Call{ID: id, Name: "bash", Command: "cmd " + id, Arguments: []byte(`{"command":"cmd ` + id + `"}`)}, unattended)
	if err != nil {
		t.Fatal(err)
	}
	if after == nil {
		t.Fatal("no watch over a checkout")
	}
	if _, err := os.Stat(filepath.Join(tr.baseDir(), watchFile)); err != nil {
		t.Fatal("no mark while the command runs")
	}
	command()
	out := after(ctx, "\n[exit status 0]")
	if _, err := os.Stat(filepath.Join(tr.baseDir(), watchFile)); !errors.Is(err, os.ErrNotExist) {
		t.Fatal("the mark outlived the command")
	}
	return out
}

func TestTrackerWatchOutsideScope(t *testing.T) {
	allow := func(context.Context, Call, string) (bool, error) { return true, nil }
	deny := func(context.Context, Call, string) (bool, error) { return false, nil }
	gone := func(context.Context, Call, string) (bool, error) { return false, context.Canceled }
	cases := []struct {
		name       string
		ask        Asker
		unattended bool
		wantAsked  bool
		wantBy     string // "" extended
		wantPause  bool
	}{
		{name: "allowed extends the scope", ask: allow, wantAsked: true},
		{name: "denied restores", ask: deny, wantAsked: true, wantBy: "person"},
		{name: "no answer restores", ask: gone, wantAsked: true, wantBy: "no answer"},
		{name: "unattended restores and pauses", ask: allow, unattended: true, wantBy: "unattended", wantPause: true},
		{name: "no client restores and pauses", wantBy: "unattended", wantPause: true},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			ws := repo(t, map[string]string{"src/a.go": "a\n", "docs/d.md": "d\n"})
			tr, f := newTracker(t, ws)
			accept(t, tr, f, []string{"src"})
			f.ask = c.ask
			out := watched(t, tr, c.unattended, "1", func() {
				writeFile(t, filepath.Join(ws, "src/a.go"), "a2\n")  // inside
				writeFile(t, filepath.Join(ws, "docs/d.md"), "d2\n") // outside
				writeFile(t, filepath.Join(ws, "new.txt"), "n\n")    // outside, created
			})
			if !strings.HasSuffix(out, "\n[exit status 0]") {
				t.Fatalf("the output lost its exit status: %q", out)
			}
			if got := len(f.asked) > 0; got != c.wantAsked {
				t.Fatalf("asked %v", f.asked)
			}
			if c.wantAsked && !strings.Contains(f.asked[0], "bash changed docs/d.md, new.txt, outside the scope") {
				t.Fatalf("question %q", f.asked[0])
			}
			if readFile(t, filepath.Join(ws, "src/a.go")) != "a2\n" {
				t.Fatal("a write inside the scope was touched")
			}
			sc, _ := tr.loadScope()
			if c.wantBy == "" {
				if !strings.Contains(out, "the person extended the scope") || !slices.Equal(sc.Extensions, []string{"docs/d.md", "new.txt"}) || !tr.Allows("new.txt") {
					t.Fatalf("out %q scope %+v", out, sc)
				}
				if readFile(t, filepath.Join(ws, "docs/d.md")) != "d2\n" {
					t.Fatal("an allowed write was restored")
				}
			} else {
				if len(sc.Restored) != 1 || sc.Restored[0].By != c.wantBy || !slices.Equal(slices.Sorted(slices.Values(sc.Restored[0].Paths)), []string{"docs/d.md", "new.txt"}) || sc.Restored[0].Command != "cmd 1" {
					t.Fatalf("scope %+v", sc)
				}
				if readFile(t, filepath.Join(ws, "docs/d.md")) != "d\n" {
					t.Fatal("not restored")
				}
				if _, err := os.Stat(filepath.Join(ws, "new.txt")); !errors.Is(err, os.ErrNotExist) {
					t.Fatal("a created file stayed")
				}
				// What the command left is kept, under the state directory.
				kept := filepath.Join(tr.cfg.State, sc.Restored[0].Kept)
				if readFile(t, filepath.Join(kept, "docs/d.md")) != "d2\n" || !strings.HasPrefix(sc.Restored[0].Kept, "sessions/s1/review/b-") {
					t.Fatalf("kept %q", sc.Restored[0].Kept)
				}
				if !strings.Contains(out, "they were restored as they were before it") {
					t.Fatalf("out %q", out)
				}
			}
			if got := len(f.pauses) > 0; got != c.wantPause {
				t.Fatalf("pauses %v", f.pauses)
			}
			if c.wantPause && (tr.Plan().Status != ImplPaused || !strings.Contains(f.pauses[0], "where no person could answer; restored")) {
				t.Fatalf("plan %+v pauses %v", tr.Plan(), f.pauses)
			}
			if !slices.Contains(f.eventList(), "scope") {
				t.Fatalf("the scope change was not published: %v", f.eventList())
			}
			// The tool log names what the command changed (inside and out).
			tr.LogTool(Call{ID: "1", Name: "bash", Command: "cmd 1"}, true, out)
			if c.wantPause {
				return // paused: nothing logged
			}
			evs := readEvents(tr.baseDir())
			if len(evs) != 1 || !slices.Contains(evs[0].Paths, "src/a.go") || evs[0].Exit != 0 {
				t.Fatalf("log %+v", evs)
			}
		})
	}
}

func TestTrackerWatchInsideScopeAsksNothing(t *testing.T) {
	ws := repo(t, map[string]string{"src/a.go": "a\n"})
	tr, f := newTracker(t, ws)
	accept(t, tr, f, []string{"src"})
	f.ask = func(context.Context, Call, string) (bool, error) { t.Fatal("asked"); return false, nil }
	out := watched(t, tr, false, "1", func() { writeFile(t, filepath.Join(ws, "src/b.go"), "b\n") })
	if out != "\n[exit status 0]" || len(f.pauses) != 0 || len(f.eventList()) != 0 {
		t.Fatalf("out %q pauses %v events %v", out, f.pauses, f.eventList())
	}
}

func TestTrackerWatchRestoresItsRecords(t *testing.T) {
	ws := repo(t, map[string]string{"src/a.go": "a\n"})
	tr, f := newTracker(t, ws)
	accept(t, tr, f, []string{"src"})
	scope := filepath.Join(tr.baseDir(), "scope.json")
	before := readFile(t, scope)
	out := watched(t, tr, false, "1", func() {
		// Widen its own scope, forge a base and plant a log.
		writeFile(t, scope, `{"paths":["."]}`)
		writeFile(t, filepath.Join(tr.baseDir(), "base.json"), "{}")
		writeFile(t, filepath.Join(tr.baseDir(), "tools.jsonl"), "{}\n")
	})
	if readFile(t, scope) != before || tr.Allows("docs/x") {
		t.Fatalf("scope %s", readFile(t, scope))
	}
	if _, err := os.Stat(filepath.Join(tr.baseDir(), "tools.jsonl")); !errors.Is(err, os.ErrNotExist) {
		t.Fatal("a planted log stayed")
	}
	if b, err := tr.loadBase(); err != nil || b.Root == "" {
		t.Fatalf("base %+v %v", b, err)
	}
	if !strings.Contains(out, "base.json, scope.json, tools.jsonl); they were restored]") || len(f.notices) != 1 {
		t.Fatalf("out %q notices %v", out, f.notices)
	}
}

// A record swapped for a link to a file of the command's own, with the
// same content, or for a directory, is seen and put back as the regular
// file it was: a later write to the link's target cannot widen the scope.
func TestTrackerWatchRecordSwappedForALink(t *testing.T) {
	ws := repo(t, map[string]string{"src/a.go": "a\n"})
	tr, f := newTracker(t, ws)
	accept(t, tr, f, []string{"src"})
	scope := filepath.Join(tr.baseDir(), "scope.json")
	log := filepath.Join(tr.baseDir(), "tools.jsonl")
	before := readFile(t, scope)
	mine := filepath.Join(t.TempDir(), "mine.json")
	watched(t, tr, false, "1", func() {
		writeFile(t, mine, before)
		os.Remove(scope)
		if err := os.Symlink(mine, scope); err != nil {
			t.Fatal(err)
		}
		os.RemoveAll(log)
		os.Mkdir(log, 0o700)
	})
	fi, err := os.Lstat(scope)
	if err != nil || !fi.Mode().IsRegular() || readFile(t, scope) != before {
		t.Fatalf("scope after the swap: %v %v", fi, err)
	}
	if fi, err := os.Lstat(log); err == nil && !fi.Mode().IsRegular() {
		t.Fatalf("the tool log stayed a %v", fi.Mode())
	}
	writeFile(t, mine, `{"paths":["."]}`)
	if tr.Allows("docs/x") || readFile(t, mine) != `{"paths":["."]}` {
		t.Fatal("the link's target widened the scope, or the restore wrote through the link")
	}
}

// A link the command put in a parent's place is removed before anything
// is restored under it: nothing is written through it.
func TestTrackerWatchRestoreNeverThroughALink(t *testing.T) {
	ws := repo(t, map[string]string{"src/a.go": "a\n", "docs/d.md": "d\n"})
	outside := t.TempDir()
	writeFile(t, filepath.Join(outside, "d.md"), "theirs\n")
	tr, f := newTracker(t, ws)
	accept(t, tr, f, []string{"src"})
	f.ask = func(context.Context, Call, string) (bool, error) { return false, nil }
	watched(t, tr, false, "1", func() {
		os.RemoveAll(filepath.Join(ws, "docs"))
		if err := os.Symlink(outside, filepath.Join(ws, "docs")); err != nil {
			t.Fatal(err)
		}
	})
	if readFile(t, filepath.Join(outside, "d.md")) != "theirs\n" {
		t.Fatal("restored through the link")
	}
	if fi, err := os.Lstat(filepath.Join(ws, "docs")); err != nil || fi.Mode()&os.ModeSymlink != 0 {
		t.Fatalf("the link stayed: %v", err)
	}
	if readFile(t, filepath.Join(ws, "docs/d.md")) != "d\n" {
		t.Fatal("docs/d.md not restored")
	}
}

// A process that stopped during a watched command leaves its mark: the
// next look (a command or the report) records it as unsettled, once.
func TestTrackerLeftMarkIsUnsettled(t *testing.T) {
	for _, next := range []string{"command", "report"} {
		t.Run(next, func(t *testing.T) {
			ws := repo(t, map[string]string{"src/a.go": "a\n"})
			tr, f := newTracker(t, ws)
			accept(t, tr, f, []string{"src"})
			writeFile(t, filepath.Join(tr.baseDir(), watchFile), "make install")
			// A new process: a fresh tracker over the same records.
			again := NewTracker(tr.cfg)
			f.t = again
			again.Load(context.Background(), tr.Row(), false)
			if next == "command" {
				watched(t, again, false, "2", func() {})
			} else if _, err := again.Report(context.Background()); err != nil {
				t.Fatal(err)
			}
			sc, _ := again.loadScope()
			if !slices.Equal(sc.Unsettled, []string{"make install"}) {
				t.Fatalf("unsettled %v", sc.Unsettled)
			}
			again.Report(context.Background())
			if r := again.StoredReport(); r == nil || !slices.Equal(r.ScopeUnsettled, []string{"make install"}) {
				t.Fatalf("report %+v", r)
			}
		})
	}
}

// A mark left by a stopped process while the scope file cannot be read
// (corrupt, or gone from the staged base) is recorded as unsettled all
// the same, once: the report names the command whose effects were never
// held to the scope. Before, the mark was removed with nothing recorded.
func TestTrackerLeftMarkUnderUnreadableScopeIsUnsettled(t *testing.T) {
	for _, brk := range []string{"corrupt", "removed"} {
		for _, next := range []string{"command", "report"} {
			t.Run(brk+"/"+next, func(t *testing.T) {
				ctx := context.Background()
				ws := repo(t, map[string]string{"src/a.go": "a\n"})
				tr, f := newTracker(t, ws)
				accept(t, tr, f, []string{"src"})
				writeFile(t, filepath.Join(tr.baseDir(), watchFile), "make install")
				if brk == "corrupt" {
					writeFile(t, tr.scopePath(), "{")
				} else if err := os.Remove(tr.scopePath()); err != nil {
					t.Fatal(err)
				}
				again := NewTracker(tr.cfg)
				f.t = again
				again.Load(ctx, tr.Row(), false)
				if next == "command" {
					watched(t, again, false, "2", func() {})
				} else if _, err := again.Report(ctx); err != nil {
					t.Fatal(err)
				}
				for i := 0; i < 2; i++ {
					r, err := again.Report(ctx)
					if err != nil {
						t.Fatal(err)
					}
					if !slices.Equal(r.ScopeUnsettled, []string{"make install"}) {
						t.Fatalf("report %d names unsettled %q, want the stopped command once", i+1, r.ScopeUnsettled)
					}
				}
				// A later process still sees it.
				third := NewTracker(tr.cfg)
				f.t = third
				third.Load(ctx, tr.Row(), false)
				if r, err := third.Report(ctx); err != nil || !slices.Equal(r.ScopeUnsettled, []string{"make install"}) {
					t.Fatalf("after a restart: %+v %v", r.ScopeUnsettled, err)
				}
			})
		}
	}
}

func TestTrackerWatchWithoutCheckout(t *testing.T) {
	tr, f := newTracker(t, "") // no checkout: nothing to compare with
	accept(t, tr, f, []string{"src"})
	after, err := tr.Watch(context.Background(), Call{ID: "1", Name: "bash"}, false)
	if after != nil || err != nil {
		t.Fatalf("watch over no checkout: %v", err)
	}
	tr2, _ := newTracker(t, "") // nothing accepted
	if after, err := tr2.Watch(context.Background(), Call{ID: "1", Name: "bash"}, false); after != nil || err != nil {
		t.Fatal("watch with nothing accepted")
	}
}

// Extensions granted at once (a file tool's ask and a watched command's)
// are all recorded: the scope file's read-modify-write is ordered.
func TestTrackerScopeChangesAreOrdered(t *testing.T) {
	ws := repo(t, map[string]string{"src/a.go": "a\n"})
	tr, f := newTracker(t, ws)
	accept(t, tr, f, []string{"src"})
	var wg sync.WaitGroup
	const n = 16
	for i := range n {
		wg.Add(2)
		go func() { defer wg.Done(); tr.Extend([]string{fmt.Sprintf("ext/%d", i)}) }()
		go func() {
			defer wg.Done()
			tr.recordScope(func(sc *Scope) { sc.Unsettled = append(sc.Unsettled, fmt.Sprint(i)) })
		}()
	}
	wg.Wait()
	sc, err := tr.loadScope()
	if err != nil || len(sc.Extensions) != n || len(sc.Unsettled) != n {
		t.Fatalf("lost updates: %+v %v", sc, err)
	}
	if len(f.scopes) != 2*n {
		t.Fatalf("%d publications for %d changes", len(f.scopes), 2*n)
	}
}

// A scope file that cannot be read, or that is gone from a staged base
// (which always has one), holds everything: the scope stays held at the
// next turn (Holding), every write asks (Allows), and what a command
// changed is treated as outside it. Before, Holding reported no scope, so
// the next turn ran with no scope held at all: a command that broke the
// file and a crash before its records were put back released the scope.
func TestTrackerUnreadableScopeHoldsEverything(t *testing.T) {
	for _, c := range []struct {
		name    string
		breakIt func(t *testing.T, p string)
	}{
		{"corrupt", func(t *testing.T, p string) { writeFile(t, p, "{") }},
		{"removed", func(t *testing.T, p string) {
			if err := os.Remove(p); err != nil {
				t.Fatal(err)
			}
		}},
	} {
		t.Run(c.name, func(t *testing.T) {
			ws := repo(t, map[string]string{"src/a.go": "a\n", "docs/d.md": "d\n"})
			tr, f := newTracker(t, ws)
			accept(t, tr, f, []string{"src"})
			c.breakIt(t, tr.scopePath())
			if !tr.Holding() {
				t.Fatal("an unreadable scope released the scope")
			}
			if tr.Allows("src/a.go") || tr.Allows("docs/d.md") {
				t.Fatal("an unreadable scope allowed a write")
			}
			out := watched(t, tr, true, "1", func() {
				writeFile(t, filepath.Join(ws, "docs/d.md"), "d2\n")
			})
			if readFile(t, filepath.Join(ws, "docs/d.md")) != "d\n" {
				t.Fatalf("an unattended write under an unreadable scope stayed: %q", out)
			}
			if len(f.pauses) != 1 || tr.Plan().Status != ImplPaused {
				t.Fatalf("not paused: %v %+v", f.pauses, tr.Plan())
			}
		})
	}
	t.Run("a legacy base without a scope holds nothing", func(t *testing.T) {
		tr, _ := newTracker(t, "")
		tr.Begin(Accepted{Title: "P", Body: planBody}) // no staged base
		if tr.Holding() {
			t.Fatal("held with no scope ever declared")
		}
	})
}

// Files named like options, outside the scope, are restored like any
// other: created ones removed (what they held kept), changed ones put
// back; nothing reads their names as flags.
func TestTrackerWatchRestoresOptionNamedFiles(t *testing.T) {
	ws := repo(t, map[string]string{"src/a.go": "a\n", "-rf": "keep me\n"})
	tr, f := newTracker(t, ws)
	accept(t, tr, f, []string{"src"})
	watched(t, tr, true, "1", func() {
		writeFile(t, filepath.Join(ws, "-rf"), "changed\n")
		writeFile(t, filepath.Join(ws, "--output=x"), "new\n")
		writeFile(t, filepath.Join(ws, "-"), "dash\n")
	})
	if readFile(t, filepath.Join(ws, "-rf")) != "keep me\n" {
		t.Fatal("-rf not put back")
	}
	for _, n := range []string{"--output=x", "-"} {
		if _, err := os.Lstat(filepath.Join(ws, n)); !errors.Is(err, os.ErrNotExist) {
			t.Fatalf("%s stayed", n)
		}
	}
	sc, _ := tr.loadScope()
	if len(sc.Restored) != 1 || len(sc.Restored[0].Failed) != 0 || len(sc.Restored[0].Paths) != 3 {
		t.Fatalf("restoration %+v", sc.Restored)
	}
	kept := filepath.Join(tr.cfg.State, sc.Restored[0].Kept)
	if readFile(t, filepath.Join(kept, "--output=x")) != "new\n" || readFile(t, filepath.Join(kept, "-rf")) != "changed\n" {
		t.Fatal("what the command left was not kept")
	}
}

// Each restoration keeps what its command left in a directory of its own,
// even when the scope could not record the earlier ones (an unreadable
// scope, a failed write): restoring never loses what an earlier command
// left.
func TestTrackerRestorationsNeverShareAKeepDirectory(t *testing.T) {
	ws := repo(t, map[string]string{"src/a.go": "a\n", "docs/d.md": "d\n"})
	tr, f := newTracker(t, ws)
	accept(t, tr, f, []string{"src"})
	writeFile(t, tr.scopePath(), "{") // nothing can be recorded in it
	for i, content := range []string{"first\n", "second\n"} {
		watched(t, tr, true, fmt.Sprint(i+1), func() {
			writeFile(t, filepath.Join(ws, "docs/d.md"), content)
		})
		if readFile(t, filepath.Join(ws, "docs/d.md")) != "d\n" {
			t.Fatalf("command %d not restored", i+1)
		}
	}
	var kept []string
	root := filepath.Join(tr.baseDir(), "restored")
	filepath.WalkDir(root, func(p string, d os.DirEntry, err error) error {
		if err == nil && !d.IsDir() {
			b, _ := os.ReadFile(p)
			kept = append(kept, string(b))
		}
		return nil
	})
	slices.Sort(kept)
	if !slices.Equal(kept, []string{"first\n", "second\n"}) {
		t.Fatalf("kept %q, want what both commands left", kept)
	}
}

package handoffport

import (
	"context"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"planbridge/handoff"
	"planbridge/internal/store"
	"planbridge/proposal"
	"planbridge/review"
)

// TestCommitsFailOrRace: every port method that commits, with a store
// that fails from its first operation on (a full disk) and with the
// session deleted just before its commit. A failed commit returns the
// store's error and leaves memory as it was (the card pending under its
// attempt, no plan tracked, the row, the record's fork link); a deleted
// session's is refused before anything is written (no store operation,
// no archive, no staged base). A commit that succeeds moves memory with
// it.
func TestCommitsFailOrRace(t *testing.T) {
	ctx := context.Background()
	type step struct {
		name string
		op   string // the named store operation
		// at is the session's WhileLive call that runs the commit (the
		// ones before write its directory: the archive, a staged base).
		at  int
		run func(w *world) error
		// kept checks memory after a commit that did not happen.
		kept func(t *testing.T, w *world)
		// moved checks memory after one that did.
		moved func(t *testing.T, w *world)
	}
	cardKept := func(t *testing.T, w *world) {
		if w.card.attempt != "a-1" {
			t.Errorf("the card is %q, want still pending under a-1", w.card.attempt)
		}
		if w.card.prop.Status != "proposed" {
			t.Errorf("the proposal is %s in memory, want proposed", w.card.prop.Status)
		}
		if w.track.plan != nil {
			t.Errorf("a plan is tracked: %+v", w.track.plan)
		}
		if !w.h.row.Plan {
			t.Error("the session left Plan in memory")
		}
	}
	rec := func() *handoff.Record {
		return &handoff.Record{Step: handoff.StepRecorded, Title: "Tidy", Artifact: handoff.Artifact{Path: "plans/accepted-x.md", Hash: proposal.HashBody(planBody)},
			Selection: handoff.Defaults("ask", 0, handoff.Policy{}), Fork: handoff.Fork{Dir: "/tmp/fork", Branch: "b", Session: "s-fork"}}
	}
	for _, s := range []step{
		{name: "acceptance", op: "CommitAcceptance", at: 3,
			run: func(w *world) error { _, err := w.p.Accept(ctx, "a-1", "", ""); return err },
			kept: func(t *testing.T, w *world) {
				cardKept(t, w)
				if len(w.turns.runs) != 0 || w.h.owned != 0 {
					t.Errorf("something started: %d turns, %d workflows", len(w.turns.runs), w.h.owned)
				}
			},
			moved: func(t *testing.T, w *world) {
				if w.card.attempt != "" || w.card.prop.Status != "accepted" || w.h.row.Plan || w.track.plan == nil {
					t.Errorf("after the commit: card %q, proposal %s, Plan %v, tracked %v", w.card.attempt, w.card.prop.Status, w.h.row.Plan, w.track.plan)
				}
				if w.st.acceptance.Session.Plan || w.st.acceptance.Record == "" || w.st.acceptance.Tracking.Plan != "Tidy" {
					t.Errorf("the acceptance committed %+v", w.st.acceptance)
				}
				if len(w.card.outcome) != 1 || w.card.outcome[0] != handoff.OutcomeAccepted {
					t.Errorf("outcomes %v", w.card.outcome)
				}
			}},
		{name: "park", op: "CommitPark", at: 2,
			run:  func(w *world) error { _, err := w.p.Park(ctx, "a-1", nil); return err },
			kept: cardKept,
			moved: func(t *testing.T, w *world) {
				if w.card.attempt != "" || w.card.prop.Status != "parked" || !w.h.row.Plan {
					t.Errorf("after the park: card %q, proposal %s, Plan %v", w.card.attempt, w.card.prop.Status, w.h.row.Plan)
				}
				if w.st.park.Outcome.Attempt != "a-1" || w.st.park.Plan.ID != "pp-new1" || w.h.kicked != 1 {
					t.Errorf("the park committed %+v, kicked %d", w.st.park, w.h.kicked)
				}
			}},
		{name: "parked start", op: "CommitAcceptance", at: 2,
			run: func(w *world) error {
				w.card.attempt = "" // no card: a parked plan starts from none
				w.st.parked["pp-9"] = store.ParkedPlan{ID: "pp-9", SessionID: "s-1", Title: "Tidy", Path: "plans/accepted-x.md", Hash: proposal.HashBody(planBody),
					Selection: handoff.Defaults("ask", 0, handoff.Policy{}).Stored()}
				writeArchive(t, w, "plans/accepted-x.md")
				_, err := StartParked(ctx, w.st, func(context.Context, string) (*Ports, error) { return w.p, nil }, "pp-9", "", "")
				return err
			},
			kept: func(t *testing.T, w *world) {
				if w.track.plan != nil || !w.h.row.Plan || w.p.starting {
					t.Errorf("after a failed start: tracked %v, Plan %v, claimed %v", w.track.plan, w.h.row.Plan, w.p.starting)
				}
			},
			moved: func(t *testing.T, w *world) {
				if w.track.plan == nil || w.h.row.Plan || w.card.prop.Status != "accepted" || w.p.starting {
					t.Errorf("after the start: tracked %v, Plan %v, proposal %s, claimed %v", w.track.plan, w.h.row.Plan, w.card.prop.Status, w.p.starting)
				}
				if w.st.acceptance.Parked != "pp-9" {
					t.Errorf("the start committed %+v", w.st.acceptance)
				}
			}},
		{name: "retry record", op: "PutRetryRecord", at: 1,
			run:  func(w *world) error { return w.p.Env().Save(ctx, rec()) },
			kept: func(t *testing.T, w *world) {},
			moved: func(t *testing.T, w *world) {
				if w.st.record == "" {
					t.Error("no record stored")
				}
			}},
		{name: "segment already installed", op: "CommitSegment", at: 1,
			run: func(w *world) error {
				r := rec()
				r.Segment = 1
				return w.p.Env().InstallSegment(ctx, r, "fresh")
			},
			kept: func(t *testing.T, w *world) {},
			moved: func(t *testing.T, w *world) {
				if w.st.segment == nil || w.st.segment.Session.ID != "s-1" || len(w.tr.rotated) != 0 {
					t.Errorf("segment %+v, rotated %v", w.st.segment, w.tr.rotated)
				}
			}},
		{name: "fork session", op: "CommitForkSession", at: 1,
			run: func(w *world) error {
				r := rec()
				r.Fork.Session = ""
				err := w.p.Env().(handoff.ForkPort).CreateForkSession(ctx, r)
				w.h.row.Title = r.Fork.Session // what rec names, for the checks
				return err
			},
			kept: func(t *testing.T, w *world) {
				if w.h.row.Title != "" {
					t.Errorf("the record names fork %q, which was not created", w.h.row.Title)
				}
				if _, err := os.Stat(filepath.Join(w.st.dir, "sessions")); !os.IsNotExist(err) {
					t.Errorf("a fork directory exists without its session (%v)", err)
				}
			},
			moved: func(t *testing.T, w *world) {
				if w.h.row.Title != "s-new1" || w.st.fork.Fork.ParentID != "s-1" || w.st.fork.Fork.ForkPoint != 0 {
					t.Errorf("the fork: rec names %q, committed %+v", w.h.row.Title, w.st.fork)
				}
				if w.st.fork.Proposal == nil || w.st.fork.Proposal.SessionID != "s-new1" {
					t.Errorf("the fork's proposal: %+v", w.st.fork.Proposal)
				}
				if _, err := os.Stat(store.SessionDir(w.st.dir, "s-new1")); err != nil {
					t.Errorf("the fork's directory: %v", err)
				}
			}},
		{name: "hand-over", op: "CommitHandOver", at: 1,
			run: func(w *world) error {
				r := rec()
				writeArchive(t, w, r.Artifact.Path)
				// The fork session's directory, as CreateForkSession made it
				// (the hand-over never creates it).
				if err := os.MkdirAll(store.SessionDir(w.st.dir, r.Fork.Session), 0o700); err != nil {
					t.Fatal(err)
				}
				if w.st.sessions == nil {
					w.st.sessions = map[string]bool{}
				}
				w.st.sessions[r.Fork.Session] = true // its row, which CreateForkSession committed
				return w.p.Env().(handoff.ForkPort).HandOver(ctx, r)
			},
			kept: func(t *testing.T, w *world) {
				if w.h.row.ForkedTo != "" || w.track.forgot {
					t.Errorf("after a failed hand-over: forked to %q, plan forgotten %v", w.h.row.ForkedTo, w.track.forgot)
				}
			},
			moved: func(t *testing.T, w *world) {
				if w.h.row.ForkedTo != "s-fork" || !w.track.forgot || w.st.handOver.Source.ForkedTo != "s-fork" {
					t.Errorf("after the hand-over: forked to %q, forgotten %v, committed %+v", w.h.row.ForkedTo, w.track.forgot, w.st.handOver)
				}
				if !containsStr(w.h.born, "s-fork") {
					t.Error("the fork is not marked as created by this process")
				}
			}},
	} {
		for _, mode := range []string{"fails", "deleted", "deleted at the commit", "commits"} {
			t.Run(s.name+"/"+mode, func(t *testing.T) {
				w := newWorld(t)
				switch mode {
				case "fails":
					w.st.failFrom = 1
				case "deleted":
					w.h.onCommit = func() { w.h.gone = true }
				case "deleted at the commit":
					n := 0
					w.h.onCommit = func() {
						if n++; n == s.at {
							w.h.gone = true
						}
					}
				}
				// The fork's creation names its fork in the record only once it exists.
				err := s.run(w)
				switch mode {
				case "fails":
					if !errors.Is(err, syscall.ENOSPC) {
						t.Fatalf("got %v, want the store's ENOSPC", err)
					}
					if !containsStr(w.st.calls, s.op) {
						t.Errorf("store calls %v, want %s", w.st.calls, s.op)
					}
					s.kept(t, w)
				case "deleted", "deleted at the commit":
					if r, ok := handoff.AsRefusal(err); !ok || r.Code != CodeNotFound {
						t.Fatalf("got %v, want a not_found refusal", err)
					}
					if len(w.st.calls) != 0 {
						t.Errorf("a deleted session's commit reached the store: %v", w.st.calls)
					}
					if w.track.staged != 0 && mode == "deleted" {
						t.Errorf("a base was staged for a deleted session")
					}
					if ents, _ := os.ReadDir(filepath.Join(w.p.cfg.WorkDir, "plans")); mode == "deleted" && s.name != "parked start" && s.name != "hand-over" && len(ents) > 0 {
						t.Errorf("the deleted session's directory was written: %v", ents)
					}
					s.kept(t, w)
				case "commits":
					if err != nil {
						t.Fatal(err)
					}
					s.moved(t, w)
				}
			})
		}
	}
}

func writeArchive(t *testing.T, w *world, rel string) {
	t.Helper()
	path := filepath.Join(w.p.cfg.WorkDir, filepath.FromSlash(rel))
	if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(path, handoff.ArtifactData(planBody), 0o444); err != nil {
		t.Fatal(err)
	}
}

func containsStr(list []string, s string) bool {
	for _, x := range list {
		if x == s {
			return true
		}
	}
	return false
}

// TestStartClaim: from its checks to its hand-over a parked plan's start
// holds the session (StartingLocked), so a second start in that moment is
// refused as busy starting; a refused start never releases another's
// claim; a start is refused while busy, while a card is pending and in a
// session that handed over to its fork.
func TestStartClaim(t *testing.T) {
	for _, tc := range []struct {
		name  string
		setup func(w *world)
		want  string // "" : claimed
	}{
		{name: "free", setup: func(w *world) { w.card.attempt = "" }},
		{name: "busy", setup: func(w *world) { w.card.attempt = ""; w.h.busy = true }, want: "busy"},
		{name: "card pending", setup: func(w *world) {}, want: "approval"},
		{name: "handed over", setup: func(w *world) { w.card.attempt = ""; w.h.row.ForkedTo = "s-f" }, want: "s-f"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			w := newWorld(t)
			tc.setup(w)
			first := w.p.Starting("pp-1")
			err := first.Claim()
			if tc.want != "" {
				if err == nil || !strings.Contains(err.Error(), tc.want) {
					t.Fatalf("claim: %v, want a refusal naming %q", err, tc.want)
				}
				if w.p.starting {
					t.Error("a refused claim holds the session")
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			w.l.Lock()
			held := w.p.StartingLocked()
			w.l.Unlock()
			if !held {
				t.Fatal("the claim does not hold the session")
			}
			second := w.p.Starting("pp-1")
			if err := second.Claim(); err == nil || !strings.Contains(err.Error(), "busy starting") {
				t.Fatalf("a second start: %v", err)
			}
			second.Release()
			if !w.p.starting {
				t.Fatal("a refused start released the first one's claim")
			}
			first.Release()
			if w.p.starting {
				t.Fatal("the claim outlived its start")
			}
		})
	}
}

// TestStartParkedRefusals: an unknown parked plan, one started already,
// and a start whose commit finds it started (a second process, say),
// each with its stable code and nothing in memory moved.
func TestStartParkedRefusals(t *testing.T) {
	ctx := context.Background()
	w := newWorld(t)
	w.card.attempt = ""
	open := func(context.Context, string) (*Ports, error) { return w.p, nil }
	if _, err := StartParked(ctx, w.st, open, "pp-x", "", ""); !isCode(err, CodeNotFound) {
		t.Errorf("unknown plan: %v", err)
	}
	w.st.parked["pp-s"] = store.ParkedPlan{ID: "pp-s", SessionID: "s-1", StartedAt: time.Now()}
	if _, err := StartParked(ctx, w.st, open, "pp-s", "", ""); !isCode(err, CodeAlreadyStarted) {
		t.Errorf("started plan: %v", err)
	}
	// Started meanwhile: the commit refuses, and nothing stays tracked.
	w.st.parked["pp-r"] = store.ParkedPlan{ID: "pp-r", SessionID: "s-1", Title: "Tidy", Path: "plans/accepted-x.md", Hash: proposal.HashBody(planBody),
		Selection: handoff.Defaults("ask", 0, handoff.Policy{}).Stored()}
	writeArchive(t, w, "plans/accepted-x.md")
	port := w.p.Starting("pp-r")
	pk := handoff.Parking{Selection: handoff.Defaults("ask", 0, handoff.Policy{}), Title: "Tidy", Artifact: handoff.Artifact{Path: "plans/accepted-x.md", Hash: proposal.HashBody(planBody)}}
	p := w.st.parked["pp-r"]
	p.StartedAt = time.Now()
	w.st.parked["pp-r"] = p
	_, err := handoff.StartParked(ctx, port, pk, "", "")
	port.Release()
	if !isCode(err, CodeAlreadyStarted) {
		t.Errorf("a start that lost its commit: %v", err)
	}
	if w.track.plan != nil || !w.h.row.Plan || len(w.turns.runs) != 0 {
		t.Errorf("after the lost start: tracked %v, Plan %v, %d turns", w.track.plan, w.h.row.Plan, len(w.turns.runs))
	}
}

// TestAcceptRunsTheHandoff: an acceptance that commits announces the
// card closed and the start, then runs the pipeline as the session's
// root workflow: the implementation set running, the record saved at
// its context step and the kickoff sent, the failpoints in order.
func TestAcceptRunsTheHandoff(t *testing.T) {
	w := newWorld(t)
	res, err := w.p.Accept(context.Background(), "a-1", "", "")
	if err != nil {
		t.Fatal(err)
	}
	if !res.Accepted || !strings.HasPrefix(res.Artifact, "work://plans/accepted-") {
		t.Errorf("result %+v", res)
	}
	if got, want := strings.Join(w.h.points, ","), "handoff.archived,handoff.committed,handoff.recorded,handoff.context"; !strings.HasPrefix(got, want) {
		t.Errorf("failpoints %s, want %s…", got, want)
	}
	if w.h.owned != 1 || len(w.turns.runs) != 1 || len(w.track.statuses) != 1 {
		t.Errorf("%d workflows, %d turns, statuses %v", w.h.owned, len(w.turns.runs), w.track.statuses)
	}
	var kinds []string
	for _, ev := range w.h.events {
		kinds = append(kinds, ev.Kind())
	}
	if got := strings.Join(kinds, ","); got != "approval_closed,notice,handoff,handoff" {
		t.Errorf("events %s", got)
	}
	if w.st.calls[0] != "CommitAcceptance" {
		t.Errorf("store calls %v", w.st.calls)
	}
	// The card is closed: a second acceptance of the attempt is stale.
	if _, err := w.p.Accept(context.Background(), "a-1", "", ""); !isCode(err, "stale_attempt") {
		t.Errorf("a second acceptance: %v", err)
	}
}

// TestRecoveryState: the recovery's facts, the record read from the
// store, the Goal's and the queue's under the lock; a store that cannot
// read the record fails the recovery with its error, nothing chosen.
func TestRecoveryState(t *testing.T) {
	ctx := context.Background()
	w := newWorld(t)
	w.h.queued = 2
	if res, err := w.p.Recover(ctx); err != nil || res.Action != string(handoff.RecoverQueue) || w.h.kicked != 1 {
		t.Errorf("with two queued: %+v, %v, kicked %d", res, err, w.h.kicked)
	}
	w.h.queued = 0
	if _, err := w.p.Recover(ctx); !isCode(err, handoff.CodeNothingToRetry) {
		t.Errorf("nothing to recover: %v", err)
	}
	w.h.row.ForkedTo = "s-f"
	f := &fakeRecoverer{id: "s-f"}
	w.h.opened["s-f"] = f
	if _, err := w.p.Recover(ctx); err != nil || f.recovered != 1 {
		t.Errorf("a handed-over session recovers its fork: %v, %d", err, f.recovered)
	}
}

func isCode(err error, code string) bool {
	r, ok := handoff.AsRefusal(err)
	return ok && r.Code == code
}

// TestDeleteState: the stored facts a delete is checked against — a
// source still handing over to this session (its record names it), a
// fork that still exists, the retry record (or its read failing), an
// unfinished implementation, open share links; none of a finished one.
func TestDeleteState(t *testing.T) {
	ctx := context.Background()
	forkRec := func(fork string) string {
		return (&handoff.Record{Step: handoff.StepForked, Artifact: handoff.Artifact{Path: "plans/a.md", Hash: "h"}, Fork: handoff.Fork{Session: fork}}).Marshal()
	}
	for _, tc := range []struct {
		name  string
		setup func(w *world)
		check func(t *testing.T, st handoff.DeleteState)
	}{
		{name: "nothing", setup: func(w *world) {}, check: func(t *testing.T, st handoff.DeleteState) {
			if err := handoff.CheckDelete(st); err != nil {
				t.Errorf("a session owning nothing: %v (%+v)", err, st)
			}
		}},
		{name: "source handing over", setup: func(w *world) {
			w.h.row.ParentID = "s-src"
			w.st.records = map[string]string{"s-src": forkRec("s-1")}
		}, check: func(t *testing.T, st handoff.DeleteState) {
			if st.Source != "s-src" || handoff.CheckDelete(st) == nil {
				t.Errorf("%+v", st)
			}
		}},
		{name: "source forked another", setup: func(w *world) {
			w.h.row.ParentID = "s-src"
			w.st.records = map[string]string{"s-src": forkRec("s-other")}
		}, check: func(t *testing.T, st handoff.DeleteState) {
			if st.Source != "" || st.SourceErr != nil {
				t.Errorf("%+v", st)
			}
		}},
		{name: "fork exists", setup: func(w *world) {
			w.h.row.ForkedTo = "s-f"
			w.st.sessions = map[string]bool{"s-f": true}
		}, check: func(t *testing.T, st handoff.DeleteState) {
			if st.Fork != "s-f" || handoff.CheckDelete(st) == nil {
				t.Errorf("%+v", st)
			}
		}},
		{name: "fork deleted", setup: func(w *world) { w.h.row.ForkedTo = "s-f" }, check: func(t *testing.T, st handoff.DeleteState) {
			if st.Fork != "" {
				t.Errorf("%+v", st)
			}
		}},
		{name: "record", setup: func(w *world) { w.st.record = "{}" }, check: func(t *testing.T, st handoff.DeleteState) {
			if !st.Record || handoff.CheckDelete(st) == nil {
				t.Errorf("%+v", st)
			}
		}},
		{name: "record unreadable", setup: func(w *world) { w.st.readErr = syscall.EIO }, check: func(t *testing.T, st handoff.DeleteState) {
			if st.Record || !errors.Is(st.RecordErr, syscall.EIO) || handoff.CheckDelete(st) == nil {
				t.Errorf("%+v", st)
			}
		}},
		{name: "implementation paused", setup: func(w *world) { w.track.plan = &review.TrackedPlan{Status: review.ImplPaused} },
			check: func(t *testing.T, st handoff.DeleteState) {
				if st.Implementation != "paused" || handoff.CheckDelete(st) == nil {
					t.Errorf("%+v", st)
				}
			}},
		{name: "implementation done", setup: func(w *world) { w.track.plan = &review.TrackedPlan{Status: review.ImplDone} },
			check: func(t *testing.T, st handoff.DeleteState) {
				if st.Implementation != "" {
					t.Errorf("%+v", st)
				}
			}},
		{name: "shared", setup: func(w *world) { w.st.shared = 2 }, check: func(t *testing.T, st handoff.DeleteState) {
			if st.Shared != 2 || handoff.CheckDelete(st) == nil {
				t.Errorf("%+v", st)
			}
		}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			w := newWorld(t)
			tc.setup(w)
			tc.check(t, w.p.DeleteState(ctx))
		})
	}
}

// TestInstallSegment: a Fresh context rotates to the next segment (the
// record names it before the rotation commits it) and announces the new
// context only once the rotation committed; a rotation that fails
// returns its error and announces nothing.
func TestInstallSegment(t *testing.T) {
	ctx := context.Background()
	for _, fail := range []bool{false, true} {
		w := newWorld(t)
		if fail {
			w.tr.failErr = syscall.ENOSPC
		}
		rec := &handoff.Record{Step: handoff.StepContextReady, Selection: handoff.Selection{Context: handoff.Fresh}}
		err := w.p.Env().InstallSegment(ctx, rec, "fresh material")
		if rec.Segment != 2 {
			t.Errorf("fail %v: the record names segment %d, want 2", fail, rec.Segment)
		}
		if fail {
			if !errors.Is(err, syscall.ENOSPC) || len(w.h.events) != 0 {
				t.Errorf("a failed rotation: %v, events %v", err, w.h.events)
			}
			continue
		}
		if err != nil || len(w.tr.rotated) != 1 || w.tr.rotated[0] != 2 || len(w.h.events) != 1 || w.h.events[0].Kind() != "notice" {
			t.Errorf("the rotation: %v, rotated %v, events %v", err, w.tr.rotated, w.h.events)
		}
	}
}

// TestHandOverMakesTheMissingForkDirectoryOnlyForItsRow: the hand-over
// resumed after a crash between the fork session's commit and its
// directory makes that directory (the install is anchored there), but
// only while the fork's row exists: without it, it fails and makes none.
func TestHandOverMakesTheMissingForkDirectoryOnlyForItsRow(t *testing.T) {
	ctx := context.Background()
	for _, row := range []bool{false, true} {
		w := newWorld(t)
		r := &handoff.Record{Step: handoff.StepRecorded, Title: "Tidy", Artifact: handoff.Artifact{Path: "plans/accepted-x.md", Hash: proposal.HashBody(planBody)},
			Selection: handoff.Defaults("ask", 0, handoff.Policy{}), Fork: handoff.Fork{Dir: "/tmp/fork", Branch: "b", Session: "s-fork"}}
		writeArchive(t, w, r.Artifact.Path)
		if err := os.MkdirAll(filepath.Join(w.st.dir, "sessions"), 0o700); err != nil { // where the source lives
			t.Fatal(err)
		}
		if row {
			w.st.sessions = map[string]bool{r.Fork.Session: true}
		}
		err := w.p.Env().(handoff.ForkPort).HandOver(ctx, r)
		_, statErr := os.Stat(store.SessionDir(w.st.dir, r.Fork.Session))
		if row && (err != nil || statErr != nil) {
			t.Errorf("with its row: %v, directory %v", err, statErr)
		}
		if !row && (err == nil || statErr == nil) {
			t.Errorf("without its row: %v, directory %v (a directory without its session)", err, statErr)
		}
	}
}

package interaction

import (
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"

	"planbridge/handoff"
	"planbridge/internal/event"
	"planbridge/internal/store"
	"planbridge/proposal"
)

const planB = "# Fix the bug better\n\n## Steps\n1. Edit y.go\n"

var fresh = handoff.Change{Axis: "context", Value: string(handoff.Fresh)}

// TestCommitFailsAtEachTransition: a proposal commit that fails leaves
// memory equal to the store at every transition. A person's action
// returns the error with the card as it was (same attempt, nothing
// recorded, nothing queued); a close nobody decided (a follow-up, the
// timeout, an interrupt) closes the card all the same, keeps the
// proposal proposed as stored and tells the person with an error event.
func TestCommitFailsAtEachTransition(t *testing.T) {
	for _, tc := range []struct {
		name    string
		setup   func(r *rig) string // the attempt acted on ("" for none)
		act     func(r *rig, attempt string) error
		wantErr bool
		pending bool   // the card acted on is still pending, same attempt
		status  string // in memory and in the store ("" none)
		outcome string // the last outcome recorded
		events  string // the kinds emitted by the failed transition
	}{
		{name: "publish the first proposal",
			setup:   func(r *rig) string { return "" },
			act:     func(r *rig, _ string) error { return r.card.Publish(r.ctx, "Fix the bug", planA, false) },
			wantErr: true, status: ""},
		{name: "a proposal from the model",
			setup: func(r *rig) string { return "" },
			act: func(r *rig, _ string) error {
				r.card.OnResponse(&proposal.Result{Proposal: &proposal.Proposal{Title: "Fix the bug", Body: planA}})
				return nil
			},
			status: "", events: "error"},
		{name: "publish over a pending card",
			act:     func(r *rig, _ string) error { return r.card.Publish(r.ctx, "Fix the bug better", planB, false) },
			wantErr: true, pending: true, status: Proposed},
		{name: "update the selection",
			act: func(r *rig, a string) error {
				_, err := r.card.UpdateSelection(r.ctx, a, fresh)
				return err
			},
			wantErr: true, pending: true, status: Proposed},
		{name: "cancel",
			act:     func(r *rig, a string) error { return r.card.Cancel(r.ctx, a) },
			wantErr: true, pending: true, status: Proposed},
		{name: "feedback",
			act: func(r *rig, a string) error {
				return r.card.Feedback(r.ctx, a, "smaller steps", []handoff.LineComment{{Line: 1, Text: "why?"}})
			},
			wantErr: true, pending: true, status: Proposed},
		{name: "edit",
			act: func(r *rig, a string) error {
				_, err := r.card.Edit(r.ctx, a, planB)
				return err
			},
			wantErr: true, pending: true, status: Proposed},
		{name: "restore a draft",
			setup: func(r *rig) string {
				a := r.proposed(planA)
				if err := r.card.Cancel(r.ctx, a); err != nil {
					r.t.Fatal(err)
				}
				r.host.take()
				return ""
			},
			act: func(r *rig, _ string) error {
				p, _ := r.memory()
				_, err := r.card.RestoreDraft(r.ctx, p.Hash)
				return err
			},
			wantErr: true, status: Draft, outcome: handoff.OutcomeCancelled},
		{name: "a follow-up demotes",
			act:    func(r *rig, _ string) error { r.card.Demote(r.ctx, handoff.OutcomeDemoted); return nil },
			status: Proposed, outcome: handoff.OutcomeDemoted, events: "approval_closed,error"},
		{name: "leaving Plan cancels",
			act:    func(r *rig, _ string) error { r.card.Demote(r.ctx, handoff.OutcomeCancelled); return nil },
			status: Proposed, outcome: handoff.OutcomeCancelled, events: "approval_closed,error"},
		{name: "the timeout",
			act:    func(r *rig, a string) error { r.card.TimeOut(a); return nil },
			status: Proposed, outcome: handoff.OutcomeTimedOut, events: "approval_closed,error,notice"},
		{name: "an interrupt",
			act:    func(r *rig, _ string) error { r.card.Interrupt(r.ctx, true); return nil },
			status: Proposed, outcome: handoff.OutcomeInterrupted, events: "approval_closed,error"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			r := newRig(t)
			setup := tc.setup
			if setup == nil {
				setup = func(r *rig) string { return r.proposed(planA) }
			}
			attempt := setup(r)
			before, _ := r.st.stored()
			queued := len(r.host.enqueued)
			r.st.fail(r.st.puts + 1)
			err := tc.act(r, attempt)
			if (err != nil) != tc.wantErr {
				t.Errorf("error %v, want one: %v", err, tc.wantErr)
			}
			if err != nil && !strings.Contains(err.Error(), "disk full") {
				t.Errorf("error %q does not say why", err)
			}
			r.same("after the failed commit")
			mem, ok := r.memory()
			if !ok && tc.status != "" || ok && mem.Status != tc.status {
				t.Errorf("proposal %q (%v), want %q", mem.Status, ok, tc.status)
			}
			if ok && (mem.Hash != before.Hash || mem.Rejections != before.Rejections || mem.PersonEdited) {
				t.Errorf("the proposal changed: %+v, was %+v", mem, before)
			}
			if got := r.attempt(); tc.pending && got != attempt || !tc.pending && got != "" {
				t.Errorf("attempt %q after, want pending %v (attempt %q)", got, tc.pending, attempt)
			}
			if got := r.st.lastOutcome(); got != tc.outcome {
				t.Errorf("last outcome %q, want %q", got, tc.outcome)
			}
			evs := r.host.take()
			if got := kinds(evs); got != tc.events {
				t.Errorf("events %q, want %q", got, tc.events)
			}
			for _, ev := range evs {
				if n, ok := ev.(event.Notice); ok && strings.Contains(n.Message, "draft") {
					t.Errorf("notice %q claims a draft the store does not hold", n.Message)
				}
			}
			if len(r.host.enqueued) != queued {
				t.Error("a turn was queued for a failed action")
			}
			if len(r.track.comments) != 0 {
				t.Error("comments kept for a failed feedback")
			}
			if tc.pending {
				// The card works again once the disk does.
				r.st.fail(0)
				r.lock.Lock()
				err := r.card.CheckLocked(attempt)
				r.lock.Unlock()
				if err != nil {
					t.Errorf("the reopened card refuses: %v", err)
				}
				if err := r.card.Cancel(r.ctx, attempt); err != nil {
					t.Errorf("cancel after the disk came back: %v", err)
				}
				r.same("after a cancel that worked")
			}
		})
	}
}

// TestStoreFailsFromAPointOn runs a person's whole session with the card
// over a store whose proposal commits fail from the k-th one on, for
// every k: after every step memory equals the store, and every view
// published and every proposal announced is what the store holds.
func TestStoreFailsFromAPointOn(t *testing.T) {
	type step struct {
		name string
		do   func(r *rig)
	}
	cur := func(r *rig) string { return r.attempt() }
	draftHash := func(r *rig) string { p, _ := r.memory(); return p.Hash }
	steps := []step{
		{"publish", func(r *rig) { _ = r.card.Publish(r.ctx, "Fix the bug", planA, false) }},
		{"select", func(r *rig) { _, _ = r.card.UpdateSelection(r.ctx, cur(r), fresh) }},
		{"cancel", func(r *rig) { _ = r.card.Cancel(r.ctx, cur(r)) }},
		{"restore", func(r *rig) { _, _ = r.card.RestoreDraft(r.ctx, draftHash(r)) }},
		{"feedback", func(r *rig) { _ = r.card.Feedback(r.ctx, cur(r), "smaller", nil) }},
		{"publish again", func(r *rig) { _ = r.card.Publish(r.ctx, "Fix the bug better", planB, false) }},
		{"edit", func(r *rig) { _, _ = r.card.Edit(r.ctx, cur(r), planA+"2. Test it.\n") }},
		{"hide", func(r *rig) { _, _ = r.card.SetHidden(cur(r), true) }},
		{"select again", func(r *rig) {
			_, _ = r.card.UpdateSelection(r.ctx, cur(r), handoff.Change{Axis: "context", Cycle: true})
		}},
		{"time out", func(r *rig) { r.card.TimeOut(cur(r)) }},
		{"restore again", func(r *rig) { _, _ = r.card.RestoreDraft(r.ctx, draftHash(r)) }},
		{"follow-up", func(r *rig) { r.card.Demote(r.ctx, handoff.OutcomeDemoted) }},
		{"publish a third", func(r *rig) { _ = r.card.Publish(r.ctx, "Fix the bug", planB+"3. Ship.\n", false) }},
		{"interrupt", func(r *rig) { r.card.Interrupt(r.ctx, true) }},
	}
	// Count the commits of a run that never fails.
	r := newRig(t)
	for _, s := range steps {
		s.do(r)
	}
	total := r.st.puts
	if total < len(steps)-2 {
		t.Fatalf("only %d commits in a run without failures", total)
	}
	for k := 1; k <= total+1; k++ {
		r := newRig(t)
		r.st.fail(k)
		r.host.onChanged = func() { r.same("a published view") }
		r.host.onEmit = func(ev event.Data) {
			if p, ok := ev.(event.Proposal); ok {
				if row, ok := r.st.stored(); !ok || row.Hash != p.Hash || row.Status != Proposed {
					t.Errorf("k=%d: proposal %s announced, the store holds %+v", k, p.Hash, row)
				}
			}
		}
		for _, s := range steps {
			s.do(r)
			r.same(fmt.Sprintf("k=%d %s", k, s.name))
		}
		// From the failing commit on, nothing new was stored or shown.
		if row, ok := r.st.stored(); k == 1 && ok {
			t.Errorf("k=1: the store holds %+v", row)
		}
	}
}

// TestStaleAttempt: every action on the card names its presentation; a
// stale, missing or earlier one fails closed and changes nothing.
func TestStaleAttempt(t *testing.T) {
	actions := []struct {
		name string
		act  func(r *rig, a string) error
	}{
		{"select", func(r *rig, a string) error { _, err := r.card.UpdateSelection(r.ctx, a, fresh); return err }},
		{"hide", func(r *rig, a string) error { _, err := r.card.SetHidden(a, true); return err }},
		{"cancel", func(r *rig, a string) error { return r.card.Cancel(r.ctx, a) }},
		{"feedback", func(r *rig, a string) error { return r.card.Feedback(r.ctx, a, "again", nil) }},
		{"edit", func(r *rig, a string) error { _, err := r.card.Edit(r.ctx, a, planB); return err }},
		{"decide", func(r *rig, a string) error {
			r.lock.Lock()
			defer r.lock.Unlock()
			return r.card.CheckLocked(a)
		}},
		{"time out", func(r *rig, a string) error { r.card.TimeOut(a); return ErrStale }},
	}
	stale := []struct {
		name    string
		attempt func(r *rig, first string) string
	}{
		{"missing", func(r *rig, first string) string { return "" }},
		{"forged", func(r *rig, first string) string { return "a-" + strings.Repeat("0", 32) }},
		{"a prefix", func(r *rig, first string) string { return first[:len(first)-1] }},
		{"the earlier presentation", func(r *rig, first string) string {
			if err := r.card.Publish(r.ctx, "Fix the bug better", planB, false); err != nil {
				r.t.Fatal(err)
			}
			r.host.take()
			return first
		}},
	}
	for _, a := range actions {
		for _, s := range stale {
			t.Run(a.name+"/"+s.name, func(t *testing.T) {
				r := newRig(t)
				first := r.proposed(planA)
				attempt := s.attempt(r, first)
				current := r.attempt()
				before, _ := r.st.stored()
				puts := r.st.puts
				if got := code(a.act(r, attempt)); got != CodeStaleAttempt {
					t.Errorf("code %q, want %q", got, CodeStaleAttempt)
				}
				after, _ := r.st.stored()
				if r.st.puts != puts || after != before {
					t.Errorf("the store changed: %+v, was %+v", after, before)
				}
				r.same("after a stale action")
				if r.attempt() != current || r.card.View().Hidden {
					t.Error("the card changed")
				}
				if evs := r.host.take(); len(evs) != 0 || len(r.host.enqueued) != 0 || r.st.lastOutcome() != "" {
					t.Errorf("events %q, queued %d, outcome %q", kinds(evs), len(r.host.enqueued), r.st.lastOutcome())
				}
			})
		}
	}
}

// accept is what the session's acceptance does with the card: decide
// under the aggregate lock (the attempt, close), commit, take the
// proposal. It reports whether it won.
func accept(r *rig, attempt string) bool {
	r.lock.Lock()
	if err := r.card.CheckLocked(attempt); err != nil {
		r.lock.Unlock()
		return false
	}
	a := r.card.CloseLocked()
	p, _ := r.card.ProposalLocked()
	r.lock.Unlock()
	p.Status = Accepted
	if err := r.st.PutProposal(r.ctx, p); err != nil {
		r.t.Error(err)
	}
	r.lock.Lock()
	r.card.SetLocked(p)
	r.lock.Unlock()
	r.card.RecordOutcome(r.ctx, a, handoff.OutcomeAccepted, p.Title, p.Hash)
	return true
}

// TestTimeoutRacesAccept: a timeout firing as the person accepts; the
// first decision wins, the other changes nothing: never a plan both
// accepted and demoted, never two outcomes.
func TestTimeoutRacesAccept(t *testing.T) {
	wins := map[string]int{}
	for i := 0; i < 200; i++ {
		r := newRig(t)
		r.host.loose = true // two goroutines: the lock may be the other's
		a := r.proposed(planA)
		var wg sync.WaitGroup
		start := make(chan struct{})
		var accepted bool
		wg.Add(2)
		go func() { defer wg.Done(); <-start; r.card.TimeOut(a) }()
		go func() { defer wg.Done(); <-start; accepted = accept(r, a) }()
		close(start)
		wg.Wait()
		outs, _ := r.st.ApprovalOutcomes(r.ctx, "s-1")
		row, _ := r.st.stored()
		mem, _ := r.memory()
		if len(outs) != 1 {
			t.Fatalf("outcomes %+v, want one", outs)
		}
		want := map[bool]string{true: Accepted, false: Draft}[accepted]
		wantOutcome := map[bool]string{true: handoff.OutcomeAccepted, false: handoff.OutcomeTimedOut}[accepted]
		if row.Status != want || mem.Status != want || outs[0].Outcome != wantOutcome {
			t.Fatalf("accepted %v: stored %q, memory %q, outcome %q", accepted, row.Status, mem.Status, outs[0].Outcome)
		}
		if r.attempt() != "" {
			t.Fatal("a card is still up")
		}
		wins[wantOutcome]++
	}
	t.Logf("wins: %v", wins)
}

// TestDecisionDuringSelectionCommit: while a selection change commits,
// a decision on the card is refused as settings_changed, so an
// acceptance never commits the selection the store is about to replace;
// once committed, the card decides again, with the new selection.
func TestDecisionDuringSelectionCommit(t *testing.T) {
	r := newRig(t)
	r.host.loose = true
	a := r.proposed(planA)
	block := make(chan struct{})
	r.st.mu.Lock()
	r.st.block, r.st.entered = block, make(chan struct{})
	r.st.mu.Unlock()
	done := make(chan error)
	go func() { _, err := r.card.UpdateSelection(r.ctx, a, fresh); done <- err }()
	<-r.st.entered
	if accept(r, a) {
		t.Fatal("accepted while the selection committed")
	}
	r.lock.Lock()
	err := r.card.CheckLocked(a)
	r.lock.Unlock()
	if got := code(err); got != handoff.CodeSettingsChanged {
		t.Errorf("decision refused with %q, want %q", got, handoff.CodeSettingsChanged)
	}
	close(block)
	if err := <-done; err != nil {
		t.Fatal(err)
	}
	if !accept(r, a) {
		t.Fatal("refused after the selection committed")
	}
	row, _ := r.st.stored()
	if sel := handoff.CardSelection(row.Selection, nil); sel.Context != handoff.Fresh || row.Status != Accepted {
		t.Errorf("accepted %+v", row)
	}
}

// TestFeedback: feedback is bounded (text and comments) and masked; a
// refused one changes nothing; an accepted one drafts the proposal,
// counts the rejection, keeps the comments and queues the turn.
func TestFeedback(t *testing.T) {
	big := strings.Repeat("x", 1<<10+1)
	for _, tc := range []struct {
		name     string
		text     string
		comments []handoff.LineComment
		code     string
		failKeep bool // the comments cannot be kept
	}{
		{"too large", big, nil, CodePromptTooLarge, false},
		{"too large in its comments", "ok", []handoff.LineComment{{Line: 1, Text: big[:600]}, {Line: 2, Text: big[:600]}}, CodePromptTooLarge, false},
		{"empty", "  \n", nil, CodeInvalidParams, false},
		{"masked", "use sk-secret please", []handoff.LineComment{{Line: 1, Text: "not sk-secret"}}, "", false},
		{"its comments cannot be kept", "use sk-secret please", []handoff.LineComment{{Line: 1, Text: "not sk-secret"}}, "", true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			r := newRig(t)
			a := r.proposed(planA)
			before, _ := r.st.stored()
			r.track.failComments = tc.failKeep
			err := r.card.Feedback(r.ctx, a, tc.text, tc.comments)
			if got := code(err); got != tc.code {
				t.Fatalf("code %q, want %q", got, tc.code)
			}
			r.same("after feedback")
			row, _ := r.st.stored()
			if tc.code != "" {
				if row != before || r.attempt() != a || len(r.host.enqueued) != 0 || len(r.host.take()) != 0 {
					t.Errorf("a refused feedback changed something: %+v, attempt %q", row, r.attempt())
				}
				return
			}
			if row.Status != Draft || row.Rejections != 1 || r.attempt() != "" || r.st.lastOutcome() != handoff.OutcomeFeedback {
				t.Errorf("after feedback: %+v, attempt %q, outcome %q", row, r.attempt(), r.st.lastOutcome())
			}
			if len(r.host.enqueued) != 1 || strings.Contains(r.host.enqueued[0], "sk-secret") || !strings.Contains(r.host.enqueued[0], "[redacted]") {
				t.Errorf("queued %q", r.host.enqueued)
			}
			want := "approval_closed"
			if tc.failKeep {
				want = "error,approval_closed" // told, and the feedback stands
			} else if c := r.track.comments[row.Hash]; len(c) != 1 || strings.Contains(c[0].Text, "sk-secret") {
				t.Errorf("comments kept %+v", c)
			}
			if got := kinds(r.host.take()); got != want {
				t.Errorf("events %q, want %q", got, want)
			}
		})
	}
}

// TestRestoreDraft: a draft comes back only as the person last saw it:
// its hash, its file unchanged, Plan on; the selection the card shows is
// stored with it.
func TestRestoreDraft(t *testing.T) {
	for _, tc := range []struct {
		name   string
		change func(r *rig) string // returns the hash to restore
		code   string
	}{
		{"the draft", func(r *rig) string { return r.draft().Hash }, ""},
		{"no draft", func(r *rig) string { r.proposed(planA); p, _ := r.memory(); return p.Hash }, CodeNoProposal},
		{"another hash", func(r *rig) string { r.draft(); return proposal.HashBody(planB) }, CodeStaleAttempt},
		{"no hash", func(r *rig) string { r.draft(); return "" }, CodeStaleAttempt},
		{"Plan off", func(r *rig) string { h := r.draft().Hash; r.host.plan = false; return h }, CodeNoProposal},
		{"its file changed", func(r *rig) string {
			h := r.draft().Hash
			if err := os.WriteFile(filepath.Join(r.dir, "plans", "current.md"), []byte(planB), 0o644); err != nil {
				r.t.Fatal(err)
			}
			return h
		}, CodeStaleAttempt},
		{"its file removed", func(r *rig) string {
			h := r.draft().Hash
			if err := os.Remove(filepath.Join(r.dir, "plans", "current.md")); err != nil {
				r.t.Fatal(err)
			}
			return h
		}, CodeStaleAttempt},
	} {
		t.Run(tc.name, func(t *testing.T) {
			r := newRig(t)
			hash := tc.change(r)
			before, _ := r.st.stored()
			beforeAttempt := r.attempt()
			v, err := r.card.RestoreDraft(r.ctx, hash)
			if got := code(err); got != tc.code {
				t.Fatalf("code %q (%v), want %q", got, err, tc.code)
			}
			r.same("after restore")
			row, _ := r.st.stored()
			if tc.code != "" {
				if row != before || r.attempt() != beforeAttempt {
					t.Errorf("a refused restore changed something: %+v", row)
				}
				return
			}
			if row.Status != Proposed || row.Selection == "" || !v.Pending || v.Attempt == "" || v.Attempt != r.attempt() {
				t.Errorf("restored %+v, card %+v", row, v.Card)
			}
		})
	}
}

// draft leaves a cancelled proposal.
func (r *rig) draft() store.Proposal {
	r.t.Helper()
	a := r.proposed(planA)
	if err := r.card.Cancel(r.ctx, a); err != nil {
		r.t.Fatal(err)
	}
	r.host.take()
	p, _ := r.memory()
	return p
}

// TestLoad: the resume rule. A stored proposal stays actionable (and is
// presented again under a new attempt) only if Plan is on, it was
// proposed and its file matches; otherwise it is committed as a draft —
// and when that commit fails the load fails with nothing in memory.
func TestLoad(t *testing.T) {
	for _, tc := range []struct {
		name    string
		prepare func(r *rig)
		plan    bool
		fail    bool
		status  string // "" none; "error" the load fails
		pending bool
	}{
		{"nothing stored", func(r *rig) {}, true, false, "", false},
		{"proposed", func(r *rig) { r.proposed(planA) }, true, false, Proposed, true},
		{"proposed, Plan off", func(r *rig) { r.proposed(planA) }, false, false, Draft, false},
		{"proposed, its file changed", func(r *rig) {
			r.proposed(planA)
			os.WriteFile(filepath.Join(r.dir, "plans", "current.md"), []byte(planB), 0o644)
		}, true, false, Draft, false},
		{"a draft", func(r *rig) { r.draft() }, true, false, Draft, false},
		{"its demotion fails", func(r *rig) { r.proposed(planA) }, false, true, "error", false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			r := newRig(t)
			tc.prepare(r)
			old := r.attempt()
			if tc.fail {
				r.st.fail(r.st.puts + 1)
			}
			r.card = r.open() // a restart
			err := r.card.Load(r.ctx, tc.plan)
			if (err != nil) != (tc.status == "error") {
				t.Fatalf("load: %v", err)
			}
			mem, ok := r.memory()
			row, _ := r.st.stored()
			switch {
			case tc.status == "error":
				if ok || row.Status != Proposed {
					t.Errorf("a failed load left %+v in memory, %q stored", mem, row.Status)
				}
			case tc.status == "":
				if ok {
					t.Errorf("loaded %+v", mem)
				}
			default:
				r.same("after load")
				if mem.Status != tc.status {
					t.Errorf("status %q, want %q", mem.Status, tc.status)
				}
			}
			if got := r.attempt(); (got != "") != tc.pending || got != "" && got == old {
				t.Errorf("attempt %q (was %q), want pending %v under a new one", got, old, tc.pending)
			}
		})
	}
}

// TestSetHidden: a hidden card stays pending and decidable.
func TestSetHidden(t *testing.T) {
	r := newRig(t)
	a := r.proposed(planA)
	v, err := r.card.SetHidden(a, true)
	if err != nil || !v.Hidden || !v.Pending {
		t.Fatalf("hide: %+v, %v", v.Card, err)
	}
	if !accept(r, a) {
		t.Error("a hidden card cannot be decided")
	}
}

// TestDemoteWithoutCard: a follow-up with no actionable proposal records
// and commits nothing.
func TestDemoteWithoutCard(t *testing.T) {
	r := newRig(t)
	r.draft()
	puts, outs := r.st.puts, len(r.st.outcomes)
	r.card.Demote(r.ctx, handoff.OutcomeDemoted)
	if r.st.puts != puts || len(r.st.outcomes) != outs || len(r.host.take()) != 0 {
		t.Error("a demotion without a card changed something")
	}
}

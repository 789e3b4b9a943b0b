package goal

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"regexp"
	"strings"
	"testing"
	"time"
	"unicode/utf8"
)

var t0 = time.Date(2026, 11, 30, 9, 0, 0, 0, time.UTC)

// mk returns a goal in the given state; budget and used tokens set directly.
func mk(st Status, budget, used int64) *Goal {
	g, err := New("g-1", "Implement the plan", budget, "", Policy{}, t0)
	if err != nil {
		panic(err)
	}
	g.Status = st
	g.TokensUsed = used
	if st != Active {
		g.Reason = "was " + st.String()
	}
	return g
}

func TestStatusNames(t *testing.T) {
	tests := []struct {
		s          Status
		name       string
		unfinished bool
	}{
		{Active, "active", true},
		{Paused, "paused", true},
		{Blocked, "blocked", true},
		{BudgetLimited, "budget-limited", true},
		{Complete, "complete", false},
	}
	for _, tt := range tests {
		if got := tt.s.String(); got != tt.name {
			t.Errorf("%d.String() = %q, want %q", tt.s, got, tt.name)
		}
		p, err := ParseStatus(tt.name)
		if err != nil || p != tt.s {
			t.Errorf("ParseStatus(%q) = %v, %v", tt.name, p, err)
		}
		if got := tt.s.Unfinished(); got != tt.unfinished {
			t.Errorf("%v.Unfinished() = %v", tt.s, got)
		}
		b, err := json.Marshal(struct{ S Status }{tt.s})
		if err != nil || string(b) != `{"S":"`+tt.name+`"}` {
			t.Errorf("marshal %v = %s, %v", tt.s, b, err)
		}
	}
	for _, bad := range []string{"", "Active", "budget_limited", "done", "cleared"} {
		if _, err := ParseStatus(bad); err == nil {
			t.Errorf("ParseStatus(%q) succeeded", bad)
		}
	}
	if Status(0).Unfinished() || Status(0).String() != "Status(0)" {
		t.Errorf("zero Status: Unfinished=%v String=%q", Status(0).Unfinished(), Status(0))
	}
	if _, err := json.Marshal(Status(0)); err == nil {
		t.Error("marshalling an invalid Status succeeded")
	}
}

func TestGoalJSONRoundTrip(t *testing.T) {
	g, _ := New(NewID(), "obj", 1000, "work://plans/accepted-x.md#abc", Policy{"m", "high", "edits"}, t0)
	g.Settle(TurnUsage{InputTokens: 600, Wall: time.Second})
	b, err := json.Marshal(g)
	if err != nil {
		t.Fatal(err)
	}
	var back Goal
	if err := json.Unmarshal(b, &back); err != nil {
		t.Fatal(err)
	}
	if back != *g {
		t.Errorf("round trip:\n got %+v\nwant %+v", back, *g)
	}
}

func TestNew(t *testing.T) {
	tests := []struct {
		name      string
		id, obj   string
		budget    int64
		wantErr   error
		wantObj   string
		wantError bool
	}{
		{name: "ok", id: "g-1", obj: "  Ship it \n", budget: 100, wantObj: "Ship it"},
		{name: "unlimited", id: "g-1", obj: "x", budget: 0, wantObj: "x"},
		{name: "blank objective", id: "g-1", obj: " \t\n", wantErr: ErrBlankObjective},
		{name: "negative budget", id: "g-1", obj: "x", budget: -1, wantErr: ErrNegativeBudget},
		{name: "blank id", id: " ", obj: "x", wantError: true},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			p := Policy{Model: "m", Effort: "high", Mode: "edits"}
			g, err := New(tt.id, tt.obj, tt.budget, "work://plans/accepted-a.md#00ff", p, t0)
			if tt.wantErr != nil || tt.wantError {
				if err == nil || (tt.wantErr != nil && !errors.Is(err, tt.wantErr)) {
					t.Fatalf("err = %v, want %v", err, tt.wantErr)
				}
				if g != nil {
					t.Error("non-nil goal with error")
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			want := Goal{ID: tt.id, Objective: tt.wantObj, Status: Active, Budget: tt.budget,
				PlanRef: "work://plans/accepted-a.md#00ff", Policy: p, CreatedAt: t0, UpdatedAt: t0}
			if *g != want {
				t.Errorf("got %+v\nwant %+v", *g, want)
			}
		})
	}
}

func TestNewID(t *testing.T) {
	re := regexp.MustCompile(`^g-[0-9a-f]{32}$`)
	seen := map[string]bool{}
	for range 1000 {
		id := NewID()
		if !re.MatchString(id) {
			t.Fatalf("NewID() = %q", id)
		}
		if seen[id] {
			t.Fatalf("duplicate id %q", id)
		}
		seen[id] = true
	}
}

func TestSettle(t *testing.T) {
	type turn struct {
		in, out   int64
		wantNotes []int // thresholds of returned notes
	}
	tests := []struct {
		name       string
		budget     int64
		status     Status
		turns      []turn
		wantStatus Status
		wantUsed   int64
		wantSent   int
	}{
		{
			name: "unlimited never notes", budget: 0,
			turns:      []turn{{1e6, 1e6, nil}, {5, 5, nil}},
			wantStatus: Active, wantUsed: 2e6 + 10,
		},
		{
			name: "each threshold once", budget: 1000,
			turns: []turn{
				{300, 100, nil},       // 40%
				{50, 50, []int{50}},   // 50% exactly
				{100, 0, nil},         // 60%
				{150, 50, []int{80}},  // 80% exactly
				{50, 0, nil},          // 85%
				{100, 50, []int{100}}, // 100% → budget-limited
				{10, 10, nil},         // a late settlement: booked, no repeat
			},
			wantStatus: BudgetLimited, wantUsed: 1020, wantSent: 100,
		},
		{
			name: "just below thresholds", budget: 1000,
			turns:      []turn{{499, 0, nil}, {300, 0, []int{50}}, {200, 0, []int{80}}},
			wantStatus: Active, wantUsed: 999, wantSent: 80,
		},
		{
			name: "one turn crossing several notes only the highest", budget: 100,
			turns:      []turn{{70, 15, []int{80}}, {5, 0, nil}},
			wantStatus: Active, wantUsed: 90, wantSent: 80,
		},
		{
			name: "overshoot in one turn", budget: 100,
			turns:      []turn{{500, 500, []int{100}}},
			wantStatus: BudgetLimited, wantUsed: 1000, wantSent: 100,
		},
		{
			name: "paused goal is booked but not budget-limited", budget: 100, status: Paused,
			turns:      []turn{{100, 0, []int{100}}},
			wantStatus: Paused, wantUsed: 100, wantSent: 100,
		},
		{
			name: "completed in the same turn stays complete", budget: 100, status: Complete,
			turns:      []turn{{200, 0, []int{100}}},
			wantStatus: Complete, wantUsed: 200, wantSent: 100,
		},
		{
			name: "negative usage counts as zero", budget: 100,
			turns:      []turn{{-50, -1, nil}, {10, -3, nil}},
			wantStatus: Active, wantUsed: 10,
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			st := tt.status
			if st == 0 {
				st = Active
			}
			g := mk(st, tt.budget, 0)
			for i, tu := range tt.turns {
				notes := g.Settle(TurnUsage{InputTokens: tu.in, OutputTokens: tu.out, Wall: time.Second})
				var got []int
				for _, n := range notes {
					got = append(got, n.Percent)
					if !strings.Contains(n.Text, fmt.Sprint(g.Budget)) && !strings.Contains(n.Text, group(g.Budget)) {
						t.Errorf("turn %d: note %q does not mention the budget", i, n.Text)
					}
				}
				if fmt.Sprint(got) != fmt.Sprint(tu.wantNotes) {
					t.Errorf("turn %d: notes %v, want %v", i, got, tu.wantNotes)
				}
			}
			if g.Status != tt.wantStatus {
				t.Errorf("status %v, want %v", g.Status, tt.wantStatus)
			}
			if g.TokensUsed != tt.wantUsed {
				t.Errorf("TokensUsed %d, want %d", g.TokensUsed, tt.wantUsed)
			}
			if g.Turns != len(tt.turns) || g.TimeUsed != time.Duration(len(tt.turns))*time.Second {
				t.Errorf("Turns %d TimeUsed %v, want %d turns", g.Turns, g.TimeUsed, len(tt.turns))
			}
			if g.NotesSent != tt.wantSent {
				t.Errorf("NotesSent %d, want %d", g.NotesSent, tt.wantSent)
			}
			if g.Status == BudgetLimited && !strings.Contains(g.Reason, "budget") {
				t.Errorf("budget-limited reason %q", g.Reason)
			}
		})
	}
}

func TestUpdate(t *testing.T) {
	tests := []struct {
		name        string
		from        Status
		status, sum string
		wantErr     error
		want        Status
		wantReason  string
	}{
		{"complete", Active, "complete", " All done. ", nil, Complete, "All done."},
		{"complete without summary", Active, "complete", "", nil, Complete, ""},
		{"blocked", Active, "blocked", "Needs DB credentials", nil, Blocked, "Needs DB credentials"},
		{"blocked without summary", Active, "blocked", "  \n", ErrBlankSummary, Active, ""},
		{"paused is not the model's", Active, "paused", "x", ErrInvalidUpdate, Active, ""},
		{"active is not an update", Active, "active", "x", ErrInvalidUpdate, Active, ""},
		{"budget-limited is not the model's", Active, "budget-limited", "x", ErrInvalidUpdate, Active, ""},
		{"not active", Paused, "complete", "done", ErrNotActive, Paused, "was paused"},
		{"already complete", Complete, "complete", "done", ErrNotActive, Complete, "was complete"},
		{"blocked goal cannot complete", Blocked, "complete", "done", ErrNotActive, Blocked, "was blocked"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			g := mk(tt.from, 0, 0)
			err := g.Update(tt.status, tt.sum)
			if !errors.Is(err, tt.wantErr) {
				t.Fatalf("err = %v, want %v", err, tt.wantErr)
			}
			if g.Status != tt.want || g.Reason != tt.wantReason {
				t.Errorf("got %v %q, want %v %q", g.Status, g.Reason, tt.want, tt.wantReason)
			}
		})
	}
	g := mk(Active, 0, 0)
	if err := g.Update("blocked", strings.Repeat("é", 3*MaxSummaryLen)); err != nil {
		t.Fatal(err)
	}
	if n := utf8.RuneCountInString(g.Reason); n != MaxSummaryLen {
		t.Errorf("summary kept %d runes, want %d", n, MaxSummaryLen)
	}
}

func TestPersonCommands(t *testing.T) {
	tests := []struct {
		name         string
		from         Status
		budget, used int64
		do           func(*Goal) error
		wantErr      error
		want         Status
		wantReason   string // "-" means: unchanged from mk's "was <status>"
		wantBudget   int64
	}{
		{"pause active", Active, 0, 0, func(g *Goal) error { g.Pause("lunch"); return nil }, nil, Paused, "lunch", 0},
		{"pause blank reason", Active, 0, 0, func(g *Goal) error { g.Pause(" "); return nil }, nil, Paused, ReasonUser, 0},
		{"pause blocked keeps blocked", Blocked, 0, 0, func(g *Goal) error { g.Pause("x"); return nil }, nil, Blocked, "-", 0},
		{"pause budget-limited keeps it", BudgetLimited, 10, 10, func(g *Goal) error { g.Pause("x"); return nil }, nil, BudgetLimited, "-", 10},
		{"pause complete", Complete, 0, 0, func(g *Goal) error { g.Pause("x"); return nil }, nil, Complete, "-", 0},

		{"resume paused", Paused, 0, 0, (*Goal).Resume, nil, Active, "", 0},
		{"resume blocked", Blocked, 0, 0, (*Goal).Resume, nil, Active, "", 0},
		{"resume budget-limited still exhausted", BudgetLimited, 100, 100, (*Goal).Resume, ErrBudgetExhausted, BudgetLimited, "-", 100},
		{"resume paused but exhausted", Paused, 100, 150, (*Goal).Resume, ErrBudgetExhausted, Paused, "-", 100},
		{"resume active", Active, 0, 0, (*Goal).Resume, ErrNotResumable, Active, "", 0},
		{"resume complete", Complete, 0, 0, (*Goal).Resume, ErrNotResumable, Complete, "-", 0},
		{"raise then resume budget-limited", BudgetLimited, 100, 100, func(g *Goal) error {
			if err := g.SetBudget(200); err != nil {
				return err
			}
			if g.Status != BudgetLimited {
				return fmt.Errorf("SetBudget changed status to %v", g.Status)
			}
			return g.Resume()
		}, nil, Active, "", 200},
		{"remove budget then resume", BudgetLimited, 100, 100, func(g *Goal) error {
			g.SetBudget(0)
			return g.Resume()
		}, nil, Active, "", 0},

		{"set budget negative", Active, 100, 0, func(g *Goal) error { return g.SetBudget(-5) }, ErrNegativeBudget, Active, "", 100},
		{"set budget on complete", Complete, 100, 0, func(g *Goal) error { return g.SetBudget(5) }, ErrComplete, Complete, "-", 100},
		{"lower budget below use limits at once", Active, 1000, 300, func(g *Goal) error { return g.SetBudget(300) }, nil, BudgetLimited, "token budget reached: 300 of 300 tokens used", 300},
		{"lower budget on paused keeps paused", Paused, 1000, 300, func(g *Goal) error { return g.SetBudget(200) }, nil, Paused, "-", 200},
		{"raise budget-limited stays until resume", BudgetLimited, 100, 100, func(g *Goal) error { return g.SetBudget(1000) }, nil, BudgetLimited, "-", 1000},

		{"edit", Blocked, 0, 0, func(g *Goal) error { return g.Edit("  New objective ") }, nil, Blocked, "-", 0},
		{"edit blank", Active, 0, 0, func(g *Goal) error { return g.Edit("\n") }, ErrBlankObjective, Active, "", 0},
		{"edit complete", Complete, 0, 0, func(g *Goal) error { return g.Edit("x") }, ErrComplete, Complete, "-", 0},

		{"restore active", Active, 0, 0, func(g *Goal) error { g.RestorePaused(); return nil }, nil, Paused, ReasonRestart, 0},
		{"restore blocked", Blocked, 0, 0, func(g *Goal) error { g.RestorePaused(); return nil }, nil, Blocked, "-", 0},
		{"restore budget-limited", BudgetLimited, 1, 1, func(g *Goal) error { g.RestorePaused(); return nil }, nil, BudgetLimited, "-", 1},
		{"restore paused keeps reason", Paused, 0, 0, func(g *Goal) error { g.RestorePaused(); return nil }, nil, Paused, "-", 0},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			g := mk(tt.from, tt.budget, tt.used)
			before := g.Reason
			err := tt.do(g)
			if !errors.Is(err, tt.wantErr) {
				t.Fatalf("err = %v, want %v", err, tt.wantErr)
			}
			wantReason := tt.wantReason
			if wantReason == "-" {
				wantReason = before
			}
			if g.Status != tt.want || g.Reason != wantReason || g.Budget != tt.wantBudget {
				t.Errorf("got %v %q budget %d, want %v %q budget %d", g.Status, g.Reason, g.Budget, tt.want, wantReason, tt.wantBudget)
			}
		})
	}

	g := mk(Blocked, 0, 0)
	if err := g.Edit("  New objective "); err != nil || g.Objective != "New objective" {
		t.Errorf("Edit: %v, objective %q", err, g.Objective)
	}
}

func TestSetBudgetRearmsNotes(t *testing.T) {
	tests := []struct {
		name          string
		budget, used  int64
		sent          int
		newBudget     int64
		wantSent      int
		nextIn        int64
		wantNextNotes string
	}{
		// Limited at 100 %, budget tripled: now 33 %, so 50 % fires again.
		{"raise re-arms", 100, 100, 100, 300, 0, 60, "[50]"},
		{"raise keeps passed thresholds sent", 100, 100, 100, 150, 50, 0, "[]"},
		// Lowered from 8.5 % to 85 %: the model has not been told yet.
		{"lower delivers the crossed note", 10_000, 850, 0, 1000, 0, 0, "[80]"},
		{"removed budget silences notes", 100, 60, 50, 0, 0, 1000, "[]"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			g := mk(Active, tt.budget, tt.used)
			g.NotesSent = tt.sent
			if tt.used >= tt.budget {
				g.Status = BudgetLimited
			}
			if err := g.SetBudget(tt.newBudget); err != nil {
				t.Fatal(err)
			}
			if g.NotesSent != tt.wantSent {
				t.Errorf("NotesSent = %d, want %d", g.NotesSent, tt.wantSent)
			}
			if g.Status == BudgetLimited {
				if err := g.Resume(); err != nil {
					t.Fatal(err)
				}
			}
			var got []int
			for _, n := range g.Settle(TurnUsage{InputTokens: tt.nextIn}) {
				got = append(got, n.Percent)
			}
			if s := fmt.Sprint(got); s != tt.wantNextNotes {
				t.Errorf("next notes %s, want %s", s, tt.wantNextNotes)
			}
		})
	}
}

func TestOnTurnFailure(t *testing.T) {
	boom := errors.New("connection reset by peer")
	tests := []struct {
		name               string
		from               Status
		err                error
		transient, retried bool
		wantRetry          bool
		want               Status
		wantReason         string // prefix
	}{
		{"transient first time retries", Active, boom, true, false, true, Active, ""},
		{"transient after retry pauses", Active, boom, true, true, false, Paused, "turn failed again after a retry: connection reset"},
		{"permanent pauses", Active, errors.New("HTTP 400: bad schema"), false, false, false, Paused, "turn failed: HTTP 400: bad schema"},
		{"interrupt pauses", Active, fmt.Errorf("openai: %w", context.Canceled), false, false, false, Paused, ReasonInterrupted},
		{"interrupt is never retried", Active, context.Canceled, true, false, false, Paused, ReasonInterrupted},
		{"nil error", Active, nil, false, false, false, Paused, "turn failed"},
		{"paused meanwhile is left alone", Paused, boom, true, false, false, Paused, "was paused"},
		{"complete is left alone", Complete, boom, false, false, false, Complete, "was complete"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			g := mk(tt.from, 0, 0)
			if got := g.OnTurnFailure(tt.err, tt.transient, tt.retried); got != tt.wantRetry {
				t.Errorf("retry = %v, want %v", got, tt.wantRetry)
			}
			if g.Status != tt.want || !strings.HasPrefix(g.Reason, tt.wantReason) {
				t.Errorf("got %v %q, want %v %q…", g.Status, g.Reason, tt.want, tt.wantReason)
			}
		})
	}

	g := mk(Active, 0, 0)
	g.OnTurnFailure(errors.New(strings.Repeat("x", 10_000)+"\xff"), false, false)
	if n := utf8.RuneCountInString(g.Reason); n != MaxReasonLen || !strings.HasSuffix(g.Reason, "…") || !utf8.ValidString(g.Reason) {
		t.Errorf("reason not bounded: %d runes, valid=%v", n, utf8.ValidString(g.Reason))
	}
}

func TestDecide(t *testing.T) {
	withPlan := func(st Status, budget, used int64) *Goal {
		g := mk(st, budget, used)
		g.PlanRef = "work://plans/accepted-1.md#abcd"
		return g
	}
	idle := Situation{PlanRefMatches: true}
	tests := []struct {
		name string
		g    *Goal
		s    Situation
		want Action
		why  string
	}{
		{"nil goal", nil, idle, Wait, "no goal"},
		{"paused", withPlan(Paused, 0, 0), idle, Wait, "goal is paused"},
		{"blocked", withPlan(Blocked, 0, 0), idle, Wait, "goal is blocked"},
		{"budget-limited", withPlan(BudgetLimited, 10, 10), idle, Wait, "goal is budget-limited"},
		{"complete", withPlan(Complete, 0, 0), idle, Wait, "goal is complete"},
		{"busy", withPlan(Active, 0, 0), Situation{Busy: true, QueuedReady: 2, PlanRefMatches: true}, Wait, "a request is running"},
		{"busy beats plan mismatch", withPlan(Active, 0, 0), Situation{Busy: true}, Wait, "a request is running"},
		{"interaction pending", withPlan(Active, 0, 0), Situation{InteractionPending: true, PlanRefMatches: true}, Wait, "an interaction is pending"},
		{"plan changed", withPlan(Active, 0, 0), Situation{QueuedReady: 1}, Pause, ReasonPlanChanged},
		{"no plan ref ignores match flag", mk(Active, 0, 0), Situation{}, Continue, "goal active"},
		{"queued first", withPlan(Active, 0, 0), Situation{QueuedReady: 1, PlanRefMatches: true}, RunQueued, "a queued follow-up is ready"},
		{"queued even when budget exhausted", withPlan(Active, 10, 10), Situation{QueuedReady: 1, PlanRefMatches: true}, RunQueued, "a queued follow-up is ready"},
		{"budget exhausted", withPlan(Active, 10, 10), idle, Wait, "token budget exhausted"},
		{"no goal runs queued input", nil, Situation{QueuedReady: 1}, RunQueued, "a queued follow-up is ready"},
		{"paused goal runs queued input as ordinary", withPlan(Paused, 0, 0), Situation{QueuedReady: 1, KickoffPending: true}, RunQueued, "a queued follow-up is ready"},
		{"busy without goal", nil, Situation{Busy: true, QueuedReady: 1}, Wait, "a request is running"},
		{"interaction holds queued input", nil, Situation{InteractionPending: true, QueuedReady: 1}, Wait, "an interaction is pending"},
		{"kickoff before queued", withPlan(Active, 0, 0), Situation{QueuedReady: 2, KickoffPending: true, PlanRefMatches: true}, Kickoff, "the kickoff is pending"},
		{"plan changed beats kickoff", withPlan(Active, 0, 0), Situation{KickoffPending: true}, Pause, ReasonPlanChanged},
		{"kickoff without plan", mk(Active, 0, 0), Situation{KickoffPending: true}, Kickoff, "the kickoff is pending"},
		{"budget remains", withPlan(Active, 10, 9), idle, Continue, "goal active"},
		{"unlimited", withPlan(Active, 0, 1e12), idle, Continue, "goal active"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			var before Goal
			if tt.g != nil {
				before = *tt.g
			}
			d := Decide(tt.g, tt.s)
			if d.Action != tt.want || d.Reason != tt.why {
				t.Errorf("Decide = {%v %q}, want {%v %q}", d.Action, d.Reason, tt.want, tt.why)
			}
			if tt.g != nil && *tt.g != before {
				t.Error("Decide modified the goal")
			}
		})
	}
	if (Decision{}).Action != Wait {
		t.Error("zero Decision must be Wait")
	}
	for a, want := range map[Action]string{Wait: "wait", Continue: "continue", RunQueued: "run-queued", Pause: "pause", Kickoff: "kickoff", 9: "Action(9)"} {
		if a.String() != want {
			t.Errorf("%d.String() = %q, want %q", a, a, want)
		}
	}
}

func TestSummary(t *testing.T) {
	tests := []struct {
		name  string
		g     *Goal
		turns int
		want  string
	}{
		{"budget", mk(Active, 10_000, 1_234), 3, "Goal active · 1,234/10,000 tokens (12%) · 3 turns"},
		{"one turn no budget", mk(Paused, 0, 1_234_567), 1, "Goal paused · 1,234,567 tokens (no budget) · 1 turn"},
		{"zero", mk(Active, 100, 0), 0, "Goal active · 0/100 tokens (0%) · 0 turns"},
		{"over budget", mk(BudgetLimited, 1000, 1500), 7, "Goal budget-limited · 1,500/1,000 tokens (150%) · 7 turns"},
		{"nil", nil, 0, "No goal"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if tt.g != nil {
				tt.g.Turns = tt.turns
			}
			if got := tt.g.Summary(); got != tt.want {
				t.Errorf("Summary() = %q, want %q", got, tt.want)
			}
		})
	}
}

func TestGroup(t *testing.T) {
	for n, want := range map[int64]string{0: "0", 7: "7", 999: "999", 1000: "1,000", 123456: "123,456", 1234567: "1,234,567", -1234: "-1,234"} {
		if got := group(n); got != want {
			t.Errorf("group(%d) = %q, want %q", n, got, want)
		}
	}
}

func TestRequestEndSettlesWithAccounting(t *testing.T) {
	g := mk(Active, 1000, 0)
	if err := g.RequestEnd("blocked", " "); !errors.Is(err, ErrBlankSummary) || g.EndRequested != nil {
		t.Fatalf("blank blocked: %v %+v", err, g.EndRequested)
	}
	if err := g.RequestEnd("complete", " done "); err != nil {
		t.Fatal(err)
	}
	if g.Status != Active {
		t.Fatalf("requesting an end changed the status to %v", g.Status)
	}
	g.Settle(TurnUsage{InputTokens: 1000})
	if g.Status != Complete || g.Reason != "done" || g.TokensUsed != 1000 || g.Turns != 1 || g.EndRequested != nil {
		t.Fatalf("after settle %+v", g)
	}

	// The person pausing between the request and the settlement wins.
	g = mk(Active, 0, 0)
	g.RequestEnd("complete", "")
	g.Pause("")
	g.Settle(TurnUsage{})
	if g.Status != Paused || g.EndRequested != nil {
		t.Fatalf("paused then settled: %+v", g)
	}

	// A crash before settlement: the requested end is applied at restore.
	g = mk(Active, 0, 0)
	g.RequestEnd("blocked", "needs credentials")
	b, _ := json.Marshal(g)
	var back Goal
	if err := json.Unmarshal(b, &back); err != nil {
		t.Fatal(err)
	}
	back.RestorePaused()
	if back.Status != Blocked || back.Reason != "needs credentials" || back.EndRequested != nil {
		t.Fatalf("restored %+v", back)
	}
	if err := mk(Paused, 0, 0).RequestEnd("complete", ""); !errors.Is(err, ErrNotActive) {
		t.Fatalf("request on paused goal: %v", err)
	}
}

package share_test

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/chromedp/chromedp"

	"planbridge/handoff"
	"planbridge/internal/agent"
	"planbridge/internal/session"
	"planbridge/internal/share"
)

const chromium = "/usr/bin/chromium"

// browser is a headless Chromium tab that records page errors (script
// exceptions, console errors, CSP violations).
type browser struct {
	ctx context.Context // for actions after the first run; has the test deadline

	mu     sync.Mutex // guards errors
	errors []string
}

// newBrowser starts a fresh headless Chromium. It fails, not skips, when
// Chromium is missing: the share page is only tested for real.
func newBrowser(t *testing.T) *browser {
	t.Helper()
	return newBrowserWith(t)
}

// newBrowserWith starts Chromium with extra allocator options.
func newBrowserWith(t *testing.T, extra ...chromedp.ExecAllocatorOption) *browser {
	t.Helper()
	if _, err := os.Stat(chromium); err != nil {
		t.Fatalf("Debian chromium is required for the share page tests: %v", err)
	}
	opts := []chromedp.ExecAllocatorOption{
		chromedp.ExecPath(chromium),
		chromedp.Headless,
		chromedp.NoSandbox, // the tests run as root
		chromedp.DisableGPU,
		chromedp.NoFirstRun,
		chromedp.NoDefaultBrowserCheck,
		chromedp.Flag("disable-background-networking", true),
		chromedp.Flag("disable-component-update", true),
		chromedp.Flag("disable-sync", true),
		chromedp.Flag("disable-quic", true),
		chromedp.Flag("disable-dev-shm-usage", true),
		chromedp.UserDataDir(t.TempDir()),
	}
	opts = append(opts, extra...)
	actx, cancel := chromedp.NewExecAllocator(context.Background(), opts...)
	t.Cleanup(cancel)
	bctx, cancel2 := chromedp.NewContext(actx)
	t.Cleanup(cancel2)
	// The first run starts the browser and must not carry a deadline.
	if err := chromedp.Do(bctx, chromedp.Navigate("about:blank")); err != nil {
		t.Fatalf("start chromium: %v", err)
	}
	ctx, cancel3 := context.WithTimeout(bctx, 40*time.Second)
	t.Cleanup(cancel3)
	b := &browser{ctx: ctx}
	msgs := chromedp.Console(bctx)
	go func() {
		for m, err := range msgs {
			if err != nil {
				return
			}
			if m.Type == chromedp.ConsoleError || m.Type == chromedp.ConsoleException {
				b.mu.Lock()
				b.errors = append(b.errors, m.String())
				b.mu.Unlock()
			}
		}
	}()
	t.Cleanup(func() {
		b.mu.Lock()
		defer b.mu.Unlock()
		for _, e := range b.errors {
			// A refused action's fetch is logged by Chromium as a failed
			// resource load, and so is the 410 of a room that ended
			// between an event and the /state refresh it scheduled (the
			// page handles it: it shows the ending); Chromium also warns
			// that an untrustworthy (plain-HTTP, not loopback) origin's
			// COOP header is ignored. Anything else (a CSP violation, an
			// exception) is a page bug.
			if !strings.Contains(e, "status of 501") && !strings.Contains(e, "status of 403") && !strings.Contains(e, "status of 410") &&
				!strings.Contains(e, "Cross-Origin-Opener-Policy header has been ignored") {
				t.Errorf("page error: %s", e)
			}
		}
	})
	return b
}

func (b *browser) do(t *testing.T, actions ...chromedp.Action[chromedp.Void]) {
	t.Helper()
	if err := chromedp.Do(b.ctx, actions...); err != nil {
		t.Fatal(err)
	}
}

func (b *browser) eval(t *testing.T, expr string) string {
	t.Helper()
	v, err := chromedp.Run(b.ctx, chromedp.Evaluate[string](expr))
	if err != nil {
		t.Fatalf("evaluate %s: %v", expr, err)
	}
	return v
}

// text is the textContent of the first element matching sel ("" if none).
func (b *browser) text(t *testing.T, sel string) string {
	t.Helper()
	return b.eval(t, `(document.querySelector(`+jsString(sel)+`)||{}).textContent||""`)
}

// waitText polls the text of sel until it contains want. A page that is
// navigating meanwhile (a clicked link) cannot be evaluated: that is
// retried, not a failure.
func (b *browser) waitText(t *testing.T, sel, want string) {
	t.Helper()
	for {
		text, err := chromedp.Run(b.ctx, chromedp.Evaluate[string](`(document.querySelector(`+jsString(sel)+`)||{}).textContent||""`))
		if err == nil && strings.Contains(text, want) {
			return
		}
		select {
		case <-b.ctx.Done():
			t.Fatalf("timed out waiting for %q in %s; it has %q (%v)", want, sel, text, err)
		case <-time.After(50 * time.Millisecond):
		}
	}
}

func (b *browser) hidden(t *testing.T, id string) bool {
	t.Helper()
	return b.eval(t, `String(document.getElementById(`+jsString(id)+`).hidden)`) == "true"
}

func jsString(s string) string { return "'" + strings.ReplaceAll(s, "'", `\'`) + "'" }

func TestBrowserViewShowsTranscriptAndProposal(t *testing.T) {
	f := newFixture(t, script())
	f.propose()
	view := f.share(share.View)[share.View]
	b := newBrowser(t)
	b.do(t, chromedp.Navigate(view.URL), chromedp.WaitVisible(chromedp.CSS("#proposal h1")))
	b.waitText(t, "#proposal h1", "Rename the greeting")
	b.waitText(t, "#proposal", "Change hello to hi in greet.txt")
	b.waitText(t, "#transcript", "rename the greeting") // the user prompt
	b.waitText(t, "#transcript", "Let me look.")        // streamed assistant text
	b.waitText(t, "#transcript", "list_dir")            // a tool call
	b.waitText(t, "#settings", "Here")
	b.waitText(t, "#settings", "Instructions")
	b.waitText(t, "#tier", "view")
	for _, id := range []string{"accept-here", "accept-worktree", "feedback-box", "prompt-box"} {
		if !b.hidden(t, id) {
			t.Errorf("view page shows #%s", id)
		}
	}
	// Live: what happens in the session now reaches the open page.
	if _, err := f.sess.Queue("and then run the tests"); err != nil {
		t.Fatal(err)
	}
	b.waitText(t, "#transcript", "Queued: and then run the tests")
	if got := b.eval(t, `Array.from(document.scripts, s => s.getAttribute('src')).join(' ')`); got != "/assets/app.js" {
		t.Errorf("page scripts %q, want only /assets/app.js", got)
	}
}

func TestBrowserFullFeedbackReachesModel(t *testing.T) {
	f := newFixture(t, script())
	f.propose()
	full := f.share(share.Full)[share.Full]
	b := newBrowser(t)
	b.do(t, chromedp.Navigate(full.URL), chromedp.WaitVisible(chromedp.ID("feedback")))
	if b.hidden(t, "accept-here") {
		t.Error("full page hides Accept Here for a Here selection")
	}
	b.do(t,
		chromedp.SendKeys(chromedp.ID("feedback"), "Please be polite about it"),
		chromedp.Click(chromedp.ID("feedback-btn")))
	b.waitText(t, "#action-status", "Feedback sent")
	// The feedback reached the model: the script's next response is the
	// revised plan, now the pending proposal.
	waitFor(t, "the revised proposal", func() bool {
		v := f.sess.Approval()
		return v.Pending && v.Title == "Rename the greeting politely"
	})
	var sawFeedback bool
	for _, e := range f.eventsOf("user") {
		sawFeedback = sawFeedback || strings.Contains(string(e.Data), "Feedback: Please be polite about it")
	}
	if !sawFeedback {
		t.Fatal("no feedback user event")
	}
	b.waitText(t, "#proposal h1", "Rename the greeting politely")
	b.waitText(t, "#transcript", "Feedback: Please be polite about it")
}

func TestBrowserOwnerWorktreeAccept(t *testing.T) {
	f := newFixtureIn(t, gitWorkspace(t), script())
	v := f.propose()
	f.setWorktree(v.Attempt)
	links := f.share(share.Full, share.Owner)
	b := newBrowser(t)
	// A full page sees the Worktree selection but no way to accept it.
	b.do(t, chromedp.Navigate(links[share.Full].URL), chromedp.WaitVisible(chromedp.ID("feedback")))
	b.waitText(t, "#settings", "Worktree")
	b.waitText(t, "#accept-reason", "owner link")
	if !b.hidden(t, "accept-worktree") || !b.hidden(t, "accept-here") {
		t.Error("full page offers acceptance of a Worktree selection")
	}
	// The owner page types a branch and accepts.
	b.do(t, chromedp.Navigate(links[share.Owner].URL), chromedp.WaitVisible(chromedp.ID("branch")),
		chromedp.SendKeys(chromedp.ID("branch"), "pb/rename-greeting"),
		chromedp.Click(chromedp.ID("accept-worktree-btn")))
	var status string
	for status == "" {
		if b.ctx.Err() != nil {
			t.Fatal("timed out waiting for the acceptance result on the page")
		}
		time.Sleep(50 * time.Millisecond)
		status = b.text(t, "#action-status")
	}
	t.Logf("owner page after Accept in Worktree: %q", status)
	if !strings.HasPrefix(status, "Accepted") {
		t.Fatalf("owner Worktree acceptance: page shows %q", status)
	}
	// The fork appears, is shared at the same tiers, and the page offers it.
	fork := f.forkOf()
	b.waitText(t, "#banner", "continues in a Worktree fork")
	b.waitText(t, "#banner", "Open the Worktree session (owner link)")
	tiers := map[share.Tier]bool{}
	for _, l := range f.srv.Links(fork) {
		tiers[l.Tier] = true
	}
	if !tiers[share.Full] || !tiers[share.Owner] || len(tiers) != 2 {
		t.Fatalf("fork shared at %v, want full and owner", tiers)
	}
	f.remember(share.Link{URL: b.eval(t, `document.querySelector('#banner a.open-link').href`)})
	b.do(t, chromedp.Click(chromedp.CSS("#banner a.open-link")))
	b.waitText(t, "#tier", "owner")
	b.waitText(t, "#conn", "live")
	if fi := f.sess.Info(); fi.ProposalStatus != "accepted" {
		t.Fatalf("old session after the fork: %+v", fi)
	}
}

func TestBrowserHandoffShowsOpenLink(t *testing.T) {
	f := newFixture(t, script())
	f.propose()
	view := f.share(share.View)[share.View]
	fork, err := f.mgr.Create(f.ctx, t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	b := newBrowser(t)
	b.do(t, chromedp.Navigate(view.URL), chromedp.WaitVisible(chromedp.CSS("#proposal h1")))
	b.waitText(t, "#conn", "live")
	if err := f.srv.Handoff(f.ctx, f.sess.ID(), fork.ID()); err != nil {
		t.Fatal(err)
	}
	b.waitText(t, "#banner", "continues in a Worktree fork")
	b.waitText(t, "#banner", "Open the Worktree session (view link)")
	href := b.eval(t, `document.querySelector('#banner a.open-link').href`)
	var newURL string
	for _, l := range f.srv.Links(fork.ID()) {
		if l.Tier != share.View {
			t.Fatalf("fork shared at %s, want only view", l.Tier)
		}
	}
	newURL = href
	if !strings.Contains(newURL, "#k=") || strings.HasPrefix(newURL, strings.Split(view.URL, "#")[0]+"#") {
		t.Fatalf("open link %q", newURL)
	}
	f.remember(share.Link{URL: newURL})
	// Following it opens the fork's room.
	b.do(t, chromedp.Click(chromedp.CSS("#banner a.open-link")))
	b.waitText(t, "#tier", "view")
	b.waitText(t, "#conn", "live")
	if !strings.Contains(b.eval(t, "location.href"), strings.Split(strings.Split(newURL, "/s/")[1], "#")[0]) {
		t.Fatalf("did not navigate to the fork's room")
	}
}

// TestBrowserShowsImplementationReport: the report an implementation ends
// with shows on a view page, read-only, with the file outside the plan
// marked and the plan's text rendered as text (never markup).
func TestBrowserShowsImplementationReport(t *testing.T) {
	plan := "<proposed_plan>\n# Greet\n\n## Key Changes\n1. Change hello to hi in greet.txt\n\n## Validation\n- `cat greet.txt`\n- `echo <img src=x onerror=document.title='pwned'>`\n</proposed_plan>\n"
	steps := []string{fmt.Sprintf(`{"text": %q}`, plan),
		`{"text": "Implementing.", "tool_calls": [` +
			`{"name": "edit_file", "arguments": {"path": "greet.txt", "old": "hello", "new": "hi"}},` +
			`{"name": "bash", "arguments": {"command": "cat greet.txt"}},` +
			`{"name": "update_plan_step", "arguments": {"step": "s1", "status": "completed"}}]}`,
		`{"text": "Done.\n"}`, `{"text": "Done.\n"}`}
	f := newFixtureIn(t, gitWorkspace(t), steps)
	if _, err := f.sess.Submit(f.ctx, "/plan greet"); err != nil {
		t.Fatal(err)
	}
	if err := f.sess.Wait(f.ctx); err != nil {
		t.Fatal(err)
	}
	v := f.sess.Approval()
	v, err := f.sess.UpdateSelection(f.ctx, v.Attempt, handoff.Change{Axis: "mode", Value: "edits"})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := f.sess.Accept(f.ctx, v.Attempt, ""); err != nil {
		t.Fatal(err)
	}
	waitFor(t, "the report", func() bool { return f.sess.StoredReport() != nil })
	view := f.share(share.View)[share.View]
	b := newBrowser(t)
	b.do(t, chromedp.Navigate(view.URL), chromedp.WaitVisible(chromedp.CSS("#report")))
	b.waitText(t, "#report-summary", "1/1 steps · 1 file · 0 outside the plan")
	b.waitText(t, "#report-body", "modified greet.txt +1 -1")
	// The fixture has no shell: the command was called but never started.
	b.waitText(t, "#report-body", "ran (no exit status): cat greet.txt")
	b.waitText(t, "#report-body", "not run: echo <img src=x onerror=document.title='pwned'>")
	if n := b.eval(t, `String(document.querySelectorAll('#report img').length)`); n != "0" {
		t.Fatalf("the report rendered markup: %s img elements", n)
	}
	if title := b.eval(t, "document.title"); title == "pwned" {
		t.Fatal("script from the plan title ran")
	}
	if got := b.eval(t, `String(document.querySelectorAll('#report button, #report input, #report textarea').length)`); got != "0" {
		t.Fatalf("the report has %s controls; it is read-only", got)
	}
}

// TestBrowserGoalReadable: the Goal panel reads as text — objective,
// status, budget use, turns — and never as the event's JSON.
func TestBrowserGoalReadable(t *testing.T) {
	f := newFixture(t, script())
	view := f.share(share.View)[share.View]
	ctx := context.Background()
	if _, err := f.sess.GoalCommand(ctx, "rename every greeting"); err != nil {
		t.Fatal(err)
	}
	if _, err := f.sess.GoalCommand(ctx, "budget 10000"); err != nil {
		t.Fatal(err)
	}
	b := newBrowser(t)
	b.do(t, chromedp.Navigate(view.URL))
	b.waitText(t, "#goal", "rename every greeting")
	b.waitText(t, "#goal", "of 10,000 tokens (")
	text := b.text(t, "#goal")
	for _, want := range []string{"Objective", "Status", "Budget", "Turns"} {
		if !strings.Contains(text, want) {
			t.Errorf("goal panel lacks %q: %q", want, text)
		}
	}
	for _, bad := range []string{"time_used", "plan_ref", "kickoff_pending", "tokens_used", "objective", "{", "\""} {
		if strings.Contains(text, bad) {
			t.Errorf("goal panel shows raw %q: %q", bad, text)
		}
	}
	if b.hidden(t, "goal") {
		t.Error("goal panel hidden")
	}
	// Cleared: the panel goes away rather than showing a null.
	if _, err := f.sess.GoalCommand(ctx, "clear"); err != nil {
		t.Fatal(err)
	}
	for !b.hidden(t, "goal") {
		select {
		case <-b.ctx.Done():
			t.Fatalf("goal panel still shown after clear: %q", b.text(t, "#goal"))
		case <-time.After(50 * time.Millisecond):
		}
	}
}

// TestBrowserShowsRenderedVersionDiff: after a revision every tier's page
// shows what changed from the previous version, added and removed lines
// styled apart, and a line of markup in the plan shown as text.
func TestBrowserShowsRenderedVersionDiff(t *testing.T) {
	v1 := "<proposed_plan>\n# Greet\n\n## Key Changes\n- Change hello to hi in greet.txt\n- Keep greet.go\n</proposed_plan>\n"
	v2 := "<proposed_plan>\n# Greet\n\n## Key Changes\n- Change hello to hey in greet.txt\n- Keep greet.go\n- Note <img src=x onerror=document.title='pwned'>\n</proposed_plan>\n"
	f := newFixtureIn(t, gitWorkspace(t), []string{fmt.Sprintf(`{"text": %q}`, v1), fmt.Sprintf(`{"text": %q}`, v2)})
	if _, err := f.sess.Submit(f.ctx, "/plan greet"); err != nil {
		t.Fatal(err)
	}
	if err := f.sess.Wait(f.ctx); err != nil {
		t.Fatal(err)
	}
	links := f.share(share.View, share.Full, share.Owner)
	b := newBrowser(t)
	// A first version has nothing to compare with.
	b.do(t, chromedp.Navigate(links[share.View].URL), chromedp.WaitVisible(chromedp.CSS("#proposal h1")))
	if !b.hidden(t, "plan-diff") {
		t.Fatal("a diff shown for the first version")
	}
	if err := f.sess.Feedback(f.ctx, f.sess.Approval().Attempt, "hey, not hi", nil); err != nil {
		t.Fatal(err)
	}
	if err := f.sess.Wait(f.ctx); err != nil {
		t.Fatal(err)
	}
	for _, tier := range []share.Tier{share.View, share.Full, share.Owner} {
		b.do(t, chromedp.Navigate(links[tier].URL), chromedp.WaitVisible(chromedp.CSS("#plan-diff")))
		b.waitText(t, "#tier", tier.String())
		b.waitText(t, "#plan-diff-title", "Changes from version 1 to version 2")
		if got := b.eval(t, `Array.from(document.querySelectorAll('#plan-diff-body span.del'), e => e.textContent).join('|')`); got != "-- Change hello to hi in greet.txt" {
			t.Errorf("%s: removed lines %q", tier, got)
		}
		want := "+- Change hello to hey in greet.txt|+- Note <img src=x onerror=document.title='pwned'>"
		if got := b.eval(t, `Array.from(document.querySelectorAll('#plan-diff-body span.add'), e => e.textContent).join('|')`); got != want {
			t.Errorf("%s: added lines %q", tier, got)
		}
		if got := b.eval(t, `Array.from(document.querySelectorAll('#plan-diff-body span.ctx'), e => e.textContent).join('|')`); !strings.Contains(got, " - Keep greet.go") {
			t.Errorf("%s: context lines %q", tier, got)
		}
		style := `(c) => getComputedStyle(document.querySelector('#plan-diff-body span.' + c)).backgroundColor`
		add, del, ctx := b.eval(t, "("+style+")('add')"), b.eval(t, "("+style+")('del')"), b.eval(t, "("+style+")('ctx')")
		if add == del || add == ctx || del == ctx {
			t.Errorf("%s: added %s, removed %s, context %s are not styled apart", tier, add, del, ctx)
		}
		if n := b.eval(t, `String(document.querySelectorAll('#plan-diff img, #proposal img').length)`); n != "0" {
			t.Errorf("%s: markup from the plan rendered: %s img elements", tier, n)
		}
		if title := b.eval(t, "document.title"); title == "pwned" {
			t.Fatalf("%s: script from the plan ran", tier)
		}
	}
}

// TestBrowserReportShowsRestorations: what a bash command wrote outside
// the scope, restored, shows in the report on the page as text.
func TestBrowserReportShowsRestorations(t *testing.T) {
	plan := "<proposed_plan>\n# Greet\n\n## Key Changes\n1. Change hello to hi in greet.txt\n</proposed_plan>\n"
	steps := []string{fmt.Sprintf(`{"text": %q}`, plan),
		`{"text": "Implementing.", "tool_calls": [` +
			`{"name": "edit_file", "arguments": {"path": "greet.txt", "old": "hello", "new": "hi"}},` +
			`{"name": "bash", "arguments": {"command": "echo x > '<img src=x onerror=document.title=1>.txt'"}}]}`,
		`{"text": "Done.\n"}`}
	f := newFixtureWith(t, gitWorkspace(t), steps, func(c *session.Config) { c.Shell = agent.BashShell{} })
	if _, err := f.sess.Submit(f.ctx, "/plan greet"); err != nil {
		t.Fatal(err)
	}
	if err := f.sess.Wait(f.ctx); err != nil {
		t.Fatal(err)
	}
	v := f.sess.Approval()
	v, err := f.sess.UpdateSelection(f.ctx, v.Attempt, handoff.Change{Axis: "mode", Value: "full-auto"})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := f.sess.Accept(f.ctx, v.Attempt, ""); err != nil {
		t.Fatal(err)
	}
	// No person is attached: the write outside the scope is restored and
	// the implementation pauses.
	waitFor(t, "the pause", func() bool { p := f.sess.TrackedPlan(); return p != nil && p.Status == session.ImplPaused })
	if _, err := f.sess.Report(f.ctx); err != nil {
		t.Fatal(err)
	}
	view := f.share(share.View)[share.View]
	b := newBrowser(t)
	b.do(t, chromedp.Navigate(view.URL), chromedp.WaitVisible(chromedp.CSS("#report")))
	b.waitText(t, "#report-body", "Restored outside the scope")
	b.waitText(t, "#report-body", "(unattended): <img src=x onerror=document.title=1>.txt")
	if n := b.eval(t, `String(document.querySelectorAll('#report img').length)`); n != "0" {
		t.Fatalf("a path rendered as markup: %s img elements", n)
	}
	if _, err := os.Stat(filepath.Join(f.sess.Info().Workspace, "<img src=x onerror=document.title=1>.txt")); err == nil {
		t.Error("the write outside the scope stayed")
	}
}

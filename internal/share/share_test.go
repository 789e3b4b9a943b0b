package share_test

import (
	"context"
	"encoding/base64"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"strings"
	"sync"
	"testing"
	"time"

	"planbridge/internal/share"
)

const wantCSP = "default-src 'none'; script-src 'self'; style-src 'self'; connect-src 'self'; img-src 'self'; frame-ancestors 'none'; base-uri 'none'; form-action 'none'"

func TestLinksAndSecurityHeaders(t *testing.T) {
	f := newFixture(t, script())
	links := f.share()
	if len(links) != 3 {
		t.Fatalf("default share minted %d links, want view, full and owner", len(links))
	}
	seen := map[string]bool{}
	for tier, l := range links {
		if strings.Contains(l.URL, "?") || !strings.HasPrefix(l.URL, "http://127.0.0.1:") || !strings.Contains(l.URL, "/s/") {
			t.Errorf("%s link %q: want http://127.0.0.1:PORT/s/ROOM#k=SECRET", tier, l.URL)
		}
		sec := secretOf(t, l)
		raw, err := base64.RawURLEncoding.DecodeString(sec)
		if err != nil || len(raw)*8 < 128 {
			t.Errorf("%s secret %q: %d bits, err %v", tier, sec, len(raw)*8, err)
		}
		if seen[sec] {
			t.Errorf("secret reused across tiers")
		}
		seen[sec] = true
		if d := time.Until(l.ExpiresAt); d < 59*time.Minute || d > 61*time.Minute {
			t.Errorf("%s expires in %s, want the default hour", tier, d)
		}
	}
	for _, l := range f.srv.Links(f.sess.ID()) {
		if l.URL != "" {
			t.Errorf("Links returned a URL (secrets are not kept): %+v", l)
		}
	}
	view := links[share.View]
	for _, path := range []string{"", "/state"} {
		r := do(t, "GET", endpoint(view, path), secretOf(t, view), nil)
		if r.Status != 200 {
			t.Fatalf("GET %q: %d %s", path, r.Status, r.Raw)
		}
		if got := r.Header.Get("Content-Security-Policy"); got != wantCSP {
			t.Errorf("GET %q CSP %q", path, got)
		}
		if r.Header.Get("X-Content-Type-Options") != "nosniff" || r.Header.Get("Referrer-Policy") != "no-referrer" {
			t.Errorf("GET %q headers %v", path, r.Header)
		}
	}
	base, _, _ := strings.Cut(f.srv.Addr(), "#")
	for _, a := range []string{"/assets/app.js", "/assets/app.css"} {
		if r := do(t, "GET", base+a, "", nil); r.Status != 200 || r.Header.Get("Content-Security-Policy") != wantCSP {
			t.Errorf("GET %s: %d %v", a, r.Status, r.Header)
		}
	}
	if r := do(t, "GET", base+"/s/0123456789abcdef", "", nil); r.Status != 404 {
		t.Errorf("unknown room page: %d", r.Status)
	}
	page := do(t, "GET", endpoint(view, ""), "", nil)
	for _, bad := range []string{"<script>", "style=", "http://", "https://"} {
		if strings.Contains(page.Raw, bad) {
			t.Errorf("page has %q: inline code or external assets", bad)
		}
	}
	// Tier subsets and lifetimes.
	links2, err := f.srv.Start(f.ctx, f.sess.ID(), []share.Tier{share.View}, 5*time.Minute)
	if err != nil || len(links2) != 1 || links2[0].Tier != share.View {
		t.Fatalf("view-only share: %v %v", links2, err)
	}
	f.remember(links2[0])
	if _, err := f.srv.Start(f.ctx, f.sess.ID(), []share.Tier{share.Tier(9)}, 0); !errors.Is(err, share.ErrBadTier) {
		t.Errorf("bad tier: %v", err)
	}
	if _, err := f.srv.Start(f.ctx, "s-nope", nil, 0); err == nil {
		t.Error("sharing an unknown session succeeded")
	}
}

// action is one guest action as a request.
type action struct {
	name, path string
	body       func(attempt string) any
	worktree   bool // the host's selection is Worktree
}

var actions = []action{
	{name: "feedback", path: "/feedback", body: func(a string) any { return map[string]string{"attempt": a, "text": "Be polite."} }},
	{name: "prompt", path: "/prompt", body: func(string) any { return map[string]string{"text": "then run the tests"} }},
	{name: "accept-here", path: "/accept", body: func(a string) any { return map[string]string{"attempt": a} }},
	{name: "park", path: "/park", body: func(a string) any { return map[string]string{"attempt": a} }},
	{name: "accept-worktree", path: "/accept", worktree: true,
		body: func(a string) any {
			return map[string]string{"attempt": a, "branch": "pb/rename", "location": "worktree"}
		}},
}

func TestEveryActionEveryTier(t *testing.T) {
	want := map[share.Tier]map[string]int{
		share.View:  {"feedback": 403, "prompt": 403, "accept-here": 403, "park": 403, "accept-worktree": 403},
		share.Full:  {"feedback": 200, "prompt": 200, "accept-here": 200, "park": 403, "accept-worktree": 403},
		share.Owner: {"feedback": 200, "prompt": 200, "accept-here": 200, "park": 200, "accept-worktree": 200},
	}
	for _, tier := range []share.Tier{share.View, share.Full, share.Owner} {
		for _, a := range actions {
			t.Run(tier.String()+"/"+a.name, func(t *testing.T) {
				ws := t.TempDir()
				if a.worktree {
					ws = gitWorkspace(t)
				}
				f := newFixtureIn(t, ws, script())
				v := f.propose()
				if a.worktree {
					f.setWorktree(v.Attempt)
				}
				l := f.share(tier)[tier]
				queued := f.sess.Info().Queued
				body := a.body(v.Attempt)
				if a.name == "park" {
					// The page names the settings it showed.
					st := f.call(l, "GET", "/state", nil)
					appr, _ := st.Body["approval"].(map[string]any)
					settings, _ := appr["settings"].(string)
					act, _ := st.Body["actions"].(map[string]any)
					if settings == "" || act["park"] != (tier == share.Owner) {
						t.Fatalf("state for park: %s", st.Raw)
					}
					body = map[string]string{"attempt": v.Attempt, "settings": settings}
					if r := f.call(l, "POST", a.path, map[string]string{"attempt": v.Attempt}); r.Status != map[bool]int{true: 409, false: 403}[tier == share.Owner] {
						t.Fatalf("park without settings: %d %s", r.Status, r.Raw)
					}
				}
				r := f.call(l, "POST", a.path, body)
				code := want[tier][a.name]
				if r.Status != code {
					t.Fatalf("status %d (%s), want %d", r.Status, r.Raw, code)
				}
				after := f.sess.Approval()
				switch {
				case code == 403:
					if !after.Pending || after.Attempt != v.Attempt || f.sess.Info().Queued != queued || len(f.eventsOf("approval_closed")) != 0 {
						t.Fatalf("a refused action changed the session: %+v", after)
					}
				case a.name == "accept-worktree":
					// The fork appears and the share moves to it.
					fork := f.forkOf()
					waitFor(t, "the fork to be shared", func() bool { return len(f.srv.Links(fork)) == 1 })
					// The old room ends just after the fork's opens (one
					// handoff, two steps): wait for it, then read why.
					waitFor(t, "the old room to end", func() bool { return f.call(l, "GET", "/state", nil).Status != 200 })
					if r := f.call(l, "GET", "/state", nil); r.Status != 410 || !strings.Contains(r.Raw, "Worktree fork") {
						t.Fatalf("old room after the fork: %d %s", r.Status, r.Raw)
					}
				case a.name == "feedback":
					if len(f.eventsOf("approval_closed")) != 1 {
						t.Fatal("feedback did not close the approval")
					}
					f.sess.Wait(f.ctx)
					if v2 := f.sess.Approval(); !v2.Pending || v2.Title != "Rename the greeting politely" {
						t.Fatalf("feedback did not produce the revised proposal: %+v", v2)
					}
					if !strings.Contains(string(f.eventsOf("user")[1].Data), "Feedback: Be polite.") {
						t.Fatalf("feedback user event: %s", f.eventsOf("user")[1].Data)
					}
				case a.name == "prompt":
					if r.Body["queued"] != true || f.sess.Info().Queued != queued+1 || !after.Pending {
						t.Fatalf("prompt was not queued behind the approval: %s %+v", r.Raw, f.sess.Info())
					}
				case a.name == "park":
					if after.Pending || f.sess.Info().ProposalStatus != "parked" || r.Body["parked"] != true || len(f.eventsOf("handoff")) != 0 {
						t.Fatalf("park: %s %+v", r.Raw, f.sess.Info())
					}
					if ps, _ := f.mgr.Parked(f.ctx, f.sess.ID(), false); len(ps) != 1 || ps[0].ID != r.Body["id"] {
						t.Fatalf("parked list %+v", ps)
					}
				case a.name == "accept-here":
					if after.Pending || f.sess.Info().ProposalStatus != "accepted" || r.Body["accepted"] != true {
						t.Fatalf("accept Here: %s %+v", r.Raw, f.sess.Info())
					}
				}
			})
		}
	}
}

func TestForgedEscalation(t *testing.T) {
	f := newFixture(t, script())
	v := f.propose()
	links := f.share()
	full, view, owner := links[share.Full], links[share.View], links[share.Owner]
	cases := []struct {
		name string
		link share.Link
		path string
		body any
		want int
	}{
		{"view feedback", view, "/feedback", map[string]string{"attempt": v.Attempt, "text": "x"}, 403},
		{"view prompt", view, "/prompt", map[string]string{"text": "x"}, 403},
		{"view accept", view, "/accept", map[string]string{"attempt": v.Attempt}, 403},
		{"full accept with a branch", full, "/accept", map[string]string{"attempt": v.Attempt, "branch": "b"}, 403},
		{"full accept claiming Worktree", full, "/accept", map[string]string{"attempt": v.Attempt, "location": "worktree"}, 403},
		{"owner branch on a Here selection", owner, "/accept", map[string]string{"attempt": v.Attempt, "branch": "b"}, 400},
		{"owner claiming Worktree on Here", owner, "/accept", map[string]string{"attempt": v.Attempt, "location": "worktree"}, 409},
		{"full with settings it did not see", full, "/accept", map[string]string{"attempt": v.Attempt, "settings": "0000"}, 409},
		{"unknown field", full, "/accept", map[string]any{"attempt": v.Attempt, "tier": "owner"}, 400},
	}
	for _, c := range cases {
		if r := f.call(c.link, "POST", c.path, c.body); r.Status != c.want {
			t.Errorf("%s: %d %s, want %d", c.name, r.Status, r.Raw, c.want)
		}
	}
	// The host switches to Worktree: a full link can no longer accept.
	f.setWorktree(v.Attempt)
	if r := f.call(full, "POST", "/accept", map[string]string{"attempt": v.Attempt}); r.Status != 403 {
		t.Errorf("full accept of a Worktree selection: %d %s", r.Status, r.Raw)
	}
	if r := f.call(owner, "POST", "/accept", map[string]string{"attempt": v.Attempt, "branch": "-bad..name"}); r.Status != 422 || r.Body["code"] != "invalid_branch" {
		t.Errorf("owner accept with an invalid branch: %d %s", r.Status, r.Raw)
	}
	var st share.State
	r := f.call(full, "GET", "/state", nil)
	json.Unmarshal([]byte(r.Raw), &st)
	if st.Actions.AcceptHere || st.Actions.AcceptWorktree || !st.Actions.Feedback || !strings.Contains(st.Actions.Reason, "owner") {
		t.Errorf("full state actions on Worktree: %+v", st.Actions)
	}
	// Another room's key does not open this one.
	g := newFixture(t, script())
	other := g.share(share.Owner)[share.Owner]
	if r := do(t, "POST", endpoint(full, "/feedback"), secretOf(t, other), map[string]string{"attempt": v.Attempt, "text": "x"}); r.Status != 401 {
		t.Errorf("foreign key: %d", r.Status)
	}
	if a := f.sess.Approval(); !a.Pending || a.Attempt != v.Attempt || f.sess.Info().Queued != 0 || len(f.eventsOf("approval_closed")) != 0 {
		t.Fatalf("refused requests changed the session: %+v", a)
	}
}

func TestStaleReplayedAndRacingAttempts(t *testing.T) {
	f := newFixture(t, script())
	v := f.propose()
	links := f.share()
	full, owner := links[share.Full], links[share.Owner]
	for _, bad := range []string{"", "a-00000000000000000000000000000000"} {
		for _, p := range []string{"/feedback", "/accept"} {
			body := map[string]string{"attempt": bad}
			if p == "/feedback" {
				body["text"] = "x"
			}
			if r := f.call(full, "POST", p, body); r.Status != 409 || r.Body["code"] != "stale_attempt" {
				t.Errorf("%s with attempt %q: %d %s", p, bad, r.Status, r.Raw)
			}
		}
	}
	if a := f.sess.Approval(); !a.Pending || a.Attempt != v.Attempt {
		t.Fatal("a stale attempt changed the approval")
	}
	// Browsers race each other and Emacs: exactly one decision wins.
	var wg sync.WaitGroup
	results := make(chan int, 9)
	for i := range 8 {
		l := full
		if i%2 == 1 {
			l = owner
		}
		wg.Add(1)
		go func() {
			defer wg.Done()
			results <- f.call(l, "POST", "/accept", map[string]string{"attempt": v.Attempt}).Status
		}()
	}
	wg.Add(1)
	go func() {
		defer wg.Done()
		if _, err := f.sess.Accept(f.ctx, v.Attempt, ""); err == nil {
			results <- 200
		} else {
			results <- 409
		}
	}()
	wg.Wait()
	close(results)
	won := 0
	for s := range results {
		switch s {
		case 200:
			won++
		case 409:
		default:
			t.Errorf("racing accept answered %d", s)
		}
	}
	if won != 1 {
		t.Fatalf("%d decisions won, want exactly one", won)
	}
	f.sess.Wait(f.ctx)
	closed := len(f.eventsOf("approval_closed"))
	// Replays after the decision change nothing.
	for _, p := range []string{"/accept", "/feedback"} {
		body := map[string]string{"attempt": v.Attempt}
		if p == "/feedback" {
			body["text"] = "again"
		}
		if r := f.call(owner, "POST", p, body); r.Status != 409 {
			t.Errorf("replayed %s: %d %s", p, r.Status, r.Raw)
		}
	}
	if n := len(f.eventsOf("approval_closed")); n != closed || n != 1 || f.sess.Info().ProposalStatus != "accepted" {
		t.Fatalf("after replays: %d approval_closed, status %s", n, f.sess.Info().ProposalStatus)
	}
}

func TestUnauthorizedExpiredAndStopped(t *testing.T) {
	f := newFixture(t, script())
	v := f.propose()
	links := f.share()
	full := links[share.Full]
	key := secretOf(t, full)
	// No key, a wrong key, and keys in the query string are refused.
	for _, u := range []string{
		endpoint(full, "/state"),
		endpoint(full, "/state?k="+key),
		endpoint(full, "/state?key="+key),
		endpoint(full, "/state?"+share.KeyHeader+"="+key),
		endpoint(full, "/events?since=0&k="+key),
	} {
		if r := do(t, "GET", u, "", nil); r.Status != 401 {
			t.Errorf("GET %s without header: %d", u, r.Status)
		}
	}
	if r := do(t, "POST", endpoint(full, "/feedback?k="+key), "", map[string]string{"attempt": v.Attempt, "text": "x"}); r.Status != 401 {
		t.Errorf("feedback with the key in the query: %d", r.Status)
	}
	if r := do(t, "GET", endpoint(full, "/state"), key+"x", nil); r.Status != 401 {
		t.Errorf("wrong key: %d", r.Status)
	}
	// An open stream ends when its link expires; new requests get 410.
	st := openSSE(t, endpoint(full, "/events"), key, nil)
	if _, ok := st.next(t, kind("approval")); !ok {
		t.Fatal("no approval event replayed")
	}
	f.clock.Advance(61 * time.Minute)
	if r := f.call(full, "GET", "/state", nil); r.Status != 410 || r.Body["code"] != "expired" {
		t.Errorf("expired link: %d %s", r.Status, r.Raw)
	}
	if r := f.call(full, "POST", "/accept", map[string]string{"attempt": v.Attempt}); r.Status != 410 {
		t.Errorf("expired link accept: %d", r.Status)
	}
	if n := len(f.srv.Links(f.sess.ID())); n != 0 {
		t.Errorf("%d live links after expiry", n)
	}
	if !f.sess.Approval().Pending {
		t.Fatal("an expired link changed the session")
	}
	// Fresh links; stopping kills them and the open streams at once.
	links = f.share(share.View, share.Full)
	st = openSSE(t, endpoint(links[share.View], "/events"), secretOf(t, links[share.View]), nil)
	if _, ok := st.next(t, kind("approval")); !ok {
		t.Fatal("no approval event replayed")
	}
	if !f.srv.Stop(f.sess.ID()) {
		t.Fatal("Stop: not shared")
	}
	fr, ok := st.next(t, named("ended"))
	if !ok || !strings.Contains(fr.Data, `"stopped"`) {
		t.Fatalf("stream after stop: %+v %v", fr, ok)
	}
	if _, ok := st.next(t, func(sseFrame) bool { return true }); ok {
		t.Fatal("stream stayed open after stop")
	}
	for _, l := range links {
		if r := f.call(l, "GET", "/state", nil); r.Status != 410 {
			t.Errorf("%s after stop: %d", l.Tier, r.Status)
		}
		if r := f.call(l, "POST", "/feedback", map[string]string{"attempt": v.Attempt, "text": "x"}); r.Status != 410 {
			t.Errorf("%s feedback after stop: %d", l.Tier, r.Status)
		}
	}
	if f.srv.Stop(f.sess.ID()) {
		t.Error("second Stop reported a share")
	}
	if a := f.sess.Approval(); !a.Pending || a.Attempt != v.Attempt {
		t.Fatal("stopped links changed the session")
	}
}

func TestEventStreamReplayLiveAndResume(t *testing.T) {
	f := newFixture(t, script())
	f.propose()
	full := f.share(share.Full)[share.Full]
	key := secretOf(t, full)
	st := openSSE(t, endpoint(full, "/events?since=0"), key, nil)
	var kinds []string
	var last string
	for {
		fr, ok := st.next(t, func(sseFrame) bool { return true })
		if !ok {
			t.Fatal("stream ended")
		}
		var ev struct {
			Seq  int64
			Kind string
		}
		json.Unmarshal([]byte(fr.Data), &ev)
		if fr.ID != fmt.Sprint(ev.Seq) {
			t.Fatalf("frame id %q for seq %d", fr.ID, ev.Seq)
		}
		kinds = append(kinds, ev.Kind)
		last = fr.ID
		if ev.Seq == f.sess.Info().LastSeq {
			break
		}
	}
	for _, k := range []string{"user", "text", "tool_call", "tool_result", "proposal", "approval"} {
		if !strings.Contains(" "+strings.Join(kinds, " ")+" ", " "+k+" ") {
			t.Errorf("replay lacks %s: %v", k, kinds)
		}
	}
	// Live: a queued prompt arrives on the open stream.
	if r := f.call(full, "POST", "/prompt", map[string]string{"text": "later"}); r.Status != 200 {
		t.Fatalf("prompt: %d %s", r.Status, r.Raw)
	}
	if _, ok := st.next(t, kind("queued")); !ok {
		t.Fatal("live event not streamed")
	}
	// Resume: since= and Last-Event-ID both skip what was seen.
	for _, hdr := range []map[string]string{nil, {"Last-Event-ID": last}} {
		u := endpoint(full, "/events?since="+last)
		if hdr != nil {
			u = endpoint(full, "/events")
		}
		re := openSSE(t, u, key, hdr)
		fr, ok := re.next(t, func(sseFrame) bool { return true })
		if !ok || fr.ID == "" || fr.ID <= last && len(fr.ID) == len(last) {
			t.Fatalf("resumed stream started at %+v after %s", fr, last)
		}
		if !strings.Contains(fr.Data, `"queued"`) {
			t.Fatalf("resumed stream first event %s, want the queued one", fr.Data)
		}
	}
}

func TestFrameBudget(t *testing.T) {
	f := newFixture(t, script(), withBudget(256))
	v := f.propose()
	full := f.share(share.Full)[share.Full]
	var st share.State
	r := f.call(full, "GET", "/state", nil)
	if err := json.Unmarshal([]byte(r.Raw), &st); err != nil {
		t.Fatal(err)
	}
	if !st.Approval.OverBudget || st.Actions.AcceptHere || !st.Actions.Feedback || !strings.Contains(st.Actions.Reason, "Emacs") {
		t.Fatalf("over budget state: %+v %+v", st.Approval.Size, st.Actions)
	}
	if !strings.Contains(st.Approval.HTML, "<h1>Rename the greeting</h1>") {
		t.Fatalf("proposal HTML: %q", st.Approval.HTML)
	}
	if r := f.call(full, "POST", "/accept", map[string]string{"attempt": v.Attempt}); r.Status != 409 || r.Body["code"] != "frame_budget" {
		t.Fatalf("accept over budget: %d %s", r.Status, r.Raw)
	}
	if !f.sess.Approval().Pending {
		t.Fatal("refused accept changed the session")
	}
	if r := f.call(full, "POST", "/feedback", map[string]string{"attempt": v.Attempt, "text": "shorter please"}); r.Status != 200 {
		t.Fatalf("feedback over budget: %d %s", r.Status, r.Raw)
	}
	// Under the default budget the same card offers acceptance.
	g := newFixture(t, script())
	g.propose()
	r = g.call(g.share(share.Full)[share.Full], "GET", "/state", nil)
	json.Unmarshal([]byte(r.Raw), &st)
	if st.Approval.OverBudget || !st.Actions.AcceptHere || st.Approval.Selection.Mode == "" || st.Approval.Settings == "" {
		t.Fatalf("default budget state: %+v", st)
	}
}

func TestHandoff(t *testing.T) {
	f := newFixture(t, script())
	f.propose()
	links := f.share(share.View, share.Owner)
	fork, err := f.mgr.Create(f.ctx, t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	streams := map[share.Tier]*sse{}
	for tier, l := range links {
		streams[tier] = openSSE(t, endpoint(l, "/events"), secretOf(t, l), nil)
		streams[tier].next(t, kind("approval"))
	}
	if err := f.srv.Handoff(f.ctx, f.sess.ID(), fork.ID()); err != nil {
		t.Fatal(err)
	}
	got := map[share.Tier]share.Link{}
	for tier, st := range streams {
		fr, ok := st.next(t, named("open"))
		if !ok {
			t.Fatalf("%s page got no open event", tier)
		}
		var l share.Link
		json.Unmarshal([]byte(fr.Data), &l)
		if l.Tier != tier {
			t.Fatalf("%s page was sent a %s link", tier, l.Tier)
		}
		f.remember(l)
		got[tier] = l
		end, ok := st.next(t, named("ended"))
		if !ok || !strings.Contains(end.Data, `"handoff"`) || !strings.Contains(end.Data, "continues") {
			t.Fatalf("%s page end: %+v", tier, end)
		}
		if r := f.call(links[tier], "GET", "/state", nil); r.Status != 410 || !strings.Contains(r.Raw, "continues in a Worktree fork") {
			t.Fatalf("old %s link: %d %s", tier, r.Status, r.Raw)
		}
		var s share.State
		r := f.call(l, "GET", "/state", nil)
		json.Unmarshal([]byte(r.Raw), &s)
		if r.Status != 200 || s.Tier != tier || s.Session.ID != fork.ID() {
			t.Fatalf("fork %s link: %d %s", tier, r.Status, r.Raw)
		}
		if !l.ExpiresAt.Equal(links[tier].ExpiresAt) {
			t.Errorf("fork %s link expires %v, old %v", tier, l.ExpiresAt, links[tier].ExpiresAt)
		}
	}
	if n := len(f.srv.Links(fork.ID())); n != 2 {
		t.Fatalf("fork shared with %d links, want view and owner", n)
	}
	if err := f.srv.Handoff(f.ctx, f.sess.ID(), fork.ID()); !errors.Is(err, share.ErrNotShared) {
		t.Fatalf("second handoff: %v", err)
	}
	// A fork that cannot be shared ends the room with the failure notice.
	l := f.share(share.Full)[share.Full]
	st := openSSE(t, endpoint(l, "/events"), secretOf(t, l), nil)
	if err := f.srv.Handoff(f.ctx, f.sess.ID(), "s-missing"); err == nil {
		t.Fatal("handoff to a missing session succeeded")
	}
	if fr, ok := st.next(t, named("ended")); !ok || !strings.Contains(fr.Data, "handoff_failed") {
		t.Fatalf("failed handoff notice: %+v", fr)
	}
	// HandoffFailed directly (the session's fork step failed).
	l = f.share(share.Full)[share.Full]
	if !f.srv.HandoffFailed(f.sess.ID(), "fork blocked") {
		t.Fatal("HandoffFailed: not shared")
	}
	if r := f.call(l, "GET", "/state", nil); r.Status != 410 || !strings.Contains(r.Raw, "fork blocked") {
		t.Fatalf("after HandoffFailed: %d %s", r.Status, r.Raw)
	}
}

func TestTokensNeverLogged(t *testing.T) {
	f := newFixture(t, script())
	v := f.propose()
	links := f.share()
	// Exercise success and every error path, including server errors.
	for _, l := range links {
		f.call(l, "GET", "/state", nil)
		f.call(l, "POST", "/feedback", map[string]string{"attempt": "stale", "text": "x"})
		do(t, "GET", endpoint(l, "/state?k="+secretOf(t, l)), "", nil)
		do(t, "GET", endpoint(l, "/state"), secretOf(t, l)+"tampered", nil)
		f.call(l, "POST", "/accept", "not an object")
	}
	f.call(links[share.Full], "POST", "/accept", map[string]string{"attempt": v.Attempt})
	f.srv.Stop(f.sess.ID())
	f.call(links[share.Owner], "GET", "/state", nil)
	c, cancel := context.WithTimeout(context.Background(), time.Second)
	defer cancel()
	f.srv.Close(c)
	logs := f.logs.String()
	if !strings.Contains(logs, "share started") || !strings.Contains(logs, "share ended") {
		t.Fatalf("the logger did not capture share activity:\n%s", logs)
	}
	for tier, l := range links {
		if strings.Contains(logs, secretOf(t, l)) {
			t.Fatalf("%s secret logged:\n%s", tier, logs)
		}
	}
}

func TestStatusForApplicationErrors(t *testing.T) {
	f := newFixture(t, script())
	full := f.share(share.Full)[share.Full]
	// No proposal: feedback is a stale attempt; an empty prompt is invalid.
	if r := f.call(full, "POST", "/feedback", map[string]string{"attempt": "a-1", "text": "x"}); r.Status != http.StatusConflict {
		t.Errorf("feedback without a proposal: %d %s", r.Status, r.Raw)
	}
	if r := f.call(full, "POST", "/prompt", map[string]string{"text": "  "}); r.Status != http.StatusBadRequest || r.Body["code"] != "invalid_params" {
		t.Errorf("empty prompt: %d %s", r.Status, r.Raw)
	}
	if r := f.call(full, "POST", "/prompt", "[]"); r.Status != http.StatusBadRequest {
		t.Errorf("bad JSON: %d %s", r.Status, r.Raw)
	}
}

package main

import (
	"strings"
	"testing"

	"planbridge/rpc"
)

type planRef struct {
	Title, Hash, Artifact, Status, Trailer string
}

// TestPlanProvenance: the accepted plan's title and hash travel with the
// implementation: /plan status, session/list and session/open (also after
// a restart), and planbridge plan-trailer, by session and by checkout,
// while the server runs and after it stopped.
func TestPlanProvenance(t *testing.T) {
	ctx := ctxT(t)
	ws := gitRepo(t, map[string]string{"greet.txt": "hello\n"})
	state := t.TempDir()
	script := writeScript(t, handoffScript(false))
	p := startServe(t, state, "--engine", "script", "--script", script)
	s, v := proposeAndWait(t, ctx, p, ws)
	// Nothing accepted yet: no trailer.
	if code, out, errb := runBinary(t, "", "plan-trailer", "--state-dir", state, s.ID); code != 1 || out != "" || !strings.Contains(errb, "no accepted plan") {
		t.Fatalf("trailer before acceptance: %d %q %q", code, out, errb)
	}
	if err := p.c.Call(ctx, "approval/accept", map[string]string{"session": s.ID, "attempt": v.Attempt}, nil); err != nil {
		t.Fatal(err)
	}
	done, err := p.c.WaitEvent(ctx, func(e rpc.Event) bool { return e.Kind == "handoff" && strings.Contains(string(e.Data), "done") })
	if err != nil {
		t.Fatal(err)
	}
	body := "# Rename the greeting\n\n## Key Changes\n- Change hello to hi in greet.txt\n\n## Validation\n- cat greet.txt"
	hash := hashOf(body)
	want := "Plan: Rename the greeting (sha256:" + hash[:12] + ")"
	if !strings.Contains(string(done.Data), `"trailer":"`+want+`"`) || !strings.Contains(string(done.Data), hash) {
		t.Fatalf("the implementation report does not name its plan: %s", done.Data)
	}
	var st struct {
		Text         string   `json:"text"`
		AcceptedPlan *planRef `json:"accepted_plan"`
	}
	if err := p.c.Call(ctx, "plan/status", map[string]string{"session": s.ID}, &st); err != nil {
		t.Fatal(err)
	}
	if st.AcceptedPlan == nil || st.AcceptedPlan.Hash != hash || st.AcceptedPlan.Title != "Rename the greeting" || st.AcceptedPlan.Trailer != want ||
		!strings.Contains(st.Text, `accepted plan "Rename the greeting" (sha256:`+hash[:12]+")") {
		t.Fatalf("/plan status: %+v %+v", st, st.AcceptedPlan)
	}
	checkInfo := func(c *rpc.Client, phase string) {
		var list []struct {
			ID           string   `json:"id"`
			AcceptedPlan *planRef `json:"accepted_plan"`
		}
		if err := c.Call(ctx, "session/list", map[string]any{}, &list); err != nil {
			t.Fatal(err)
		}
		if len(list) != 1 || list[0].AcceptedPlan == nil || list[0].AcceptedPlan.Hash != hash || list[0].AcceptedPlan.Trailer != want {
			t.Fatalf("%s: session/list %+v", phase, list)
		}
		var open struct {
			Session struct {
				AcceptedPlan *planRef `json:"accepted_plan"`
			} `json:"session"`
		}
		if err := c.Call(ctx, "session/open", map[string]string{"session": s.ID}, &open); err != nil {
			t.Fatal(err)
		}
		if open.Session.AcceptedPlan == nil || open.Session.AcceptedPlan.Hash != hash || open.Session.AcceptedPlan.Artifact != "work://plans/accepted-"+hash[:16]+".md" {
			t.Fatalf("%s: session/open %+v", phase, open.Session.AcceptedPlan)
		}
	}
	checkInfo(p.c, "live")
	trailer := func(phase string, args ...string) {
		code, out, errb := runBinary(t, "", append([]string{"plan-trailer", "--state-dir", state}, args...)...)
		if code != 0 || out != want+"\n" {
			t.Fatalf("%s: plan-trailer %v: %d %q %q", phase, args, code, out, errb)
		}
	}
	trailer("running", s.ID)
	trailer("running", "-C", ws)
	p.stop()
	trailer("stopped", "-C", ws)
	if code, _, errb := runBinary(t, "", "plan-trailer", "--state-dir", state, "-C", t.TempDir()); code != 1 || !strings.Contains(errb, "no session in") {
		t.Fatalf("other checkout: %d %q", code, errb)
	}
	if code, _, errb := runBinary(t, "", "plan-trailer", "--state-dir", state, "s-nope"); code != 1 || !strings.Contains(errb, "no session") {
		t.Fatalf("unknown session: %d %q", code, errb)
	}
	if code, _, errb := runBinary(t, "", "plan-trailer", "--state-dir", t.TempDir()+"/none"); code != 1 || !strings.Contains(errb, "no planbridge state") {
		t.Fatalf("no state: %d %q", code, errb)
	}
	p2 := startServe(t, state, "--engine", "script", "--script", script)
	checkInfo(p2.c, "restarted")
}

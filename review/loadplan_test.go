package review

import "testing"

func TestLoadPlan(t *testing.T) {
	for _, tc := range []struct {
		name       string
		data       string
		restarted  bool
		wantErr    bool
		status     string
		reason     string
		wantPaused bool
	}{
		{name: "corrupt", data: `{"status":`, wantErr: true},
		{name: "running, same process", data: `{"title":"T","status":"running"}`, status: ImplRunning},
		{name: "running after a restart comes back paused", data: `{"title":"T","status":"running"}`, restarted: true,
			status: ImplPaused, reason: "paused by restart", wantPaused: true},
		{name: "paused keeps its reason", data: `{"title":"T","status":"paused","reason":"outside the declared scope: x"}`, restarted: true,
			status: ImplPaused, reason: "outside the declared scope: x"},
		{name: "done stays done", data: `{"title":"T","status":"done"}`, restarted: true, status: ImplDone},
	} {
		t.Run(tc.name, func(t *testing.T) {
			p, paused, err := LoadPlan(tc.data, tc.restarted)
			if tc.wantErr {
				if err == nil || p != nil || paused {
					t.Fatalf("LoadPlan = %+v, %v, %v; want an error", p, paused, err)
				}
				return
			}
			if err != nil || p.Status != tc.status || p.Reason != tc.reason || paused != tc.wantPaused || p.Title != "T" {
				t.Fatalf("LoadPlan = %+v, %v, %v; want %s %q, paused %v", p, paused, err, tc.status, tc.reason, tc.wantPaused)
			}
		})
	}
}

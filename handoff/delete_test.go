package handoff

import (
	"errors"
	"testing"
	"time"

	"planbridge/goal"
)

func TestCheckDelete(t *testing.T) {
	g := func(status goal.Status) *goal.Goal {
		gl, err := goal.New("g-1", "ship it", 0, "", goal.Policy{}, time.Now())
		if err != nil {
			t.Fatal(err)
		}
		gl.Status = status
		return gl
	}
	readErr := errors.New("disk I/O error")
	for _, tc := range []struct {
		name    string
		st      DeleteState
		code    string // the refusal's code; "" for CodeSessionInUse
		want    string // the refusal's words; "" for none
		wantErr error  // a read error handed back as it is
	}{
		{name: "nothing owned", st: DeleteState{}},
		{name: "a turn runs", st: DeleteState{Busy: true, Starting: true, Queued: 2, Source: "s-src"}, code: CodeBusy,
			want: "a turn is running in this session; wait for it or interrupt it, then delete"},
		{name: "a start runs", st: DeleteState{Starting: true, Queued: 2}, code: CodeBusy,
			want: "a parked plan is being started in this session; wait for it, then delete"},
		{name: "prompts wait", st: DeleteState{Queued: 2, Fork: "s-fork"},
			want: "2 prompt(s) are queued in this session; run them (M-x planbridge-recover) or interrupt, then delete"},
		{name: "a fork being handed over", st: DeleteState{Source: "s-src", Record: true, Shared: 1},
			want: "this Worktree fork is being handed its implementation by s-src; wait for the hand-over, then delete"},
		{name: "a failed read of the source's record", st: DeleteState{SourceErr: readErr, Fork: "s-fork"}, wantErr: readErr},
		{name: "a complete Goal does not hold it", st: DeleteState{Goal: g(goal.Complete)}},
		{name: "a live fork", st: DeleteState{Fork: "s-fork", Record: true, Goal: g(goal.Active), Shared: 1},
			want: "this session handed its implementation to the Worktree fork s-fork; delete that first"},
		{name: "the fork wins over a failed read", st: DeleteState{Fork: "s-fork", RecordErr: readErr, SharedErr: readErr},
			want: "this session handed its implementation to the Worktree fork s-fork; delete that first"},
		{name: "a failed record read", st: DeleteState{RecordErr: readErr, Goal: g(goal.Active)}, wantErr: readErr},
		{name: "a retry record", st: DeleteState{Record: true, Implementation: "running"},
			want: "this session has an accepted plan whose implementation is unfinished; finish it (M-x planbridge-recover) first"},
		{name: "an implementation paused", st: DeleteState{Implementation: "paused", Goal: g(goal.Paused)},
			want: "this session's plan implementation is paused; finish it first"},
		{name: "a paused Goal", st: DeleteState{Goal: g(goal.Paused), SharedErr: readErr},
			want: "this session's Goal is paused; clear it (/goal clear) first"},
		{name: "a blocked Goal", st: DeleteState{Goal: g(goal.Blocked)},
			want: "this session's Goal is blocked; clear it (/goal clear) first"},
		{name: "a failed share count", st: DeleteState{SharedErr: readErr}, wantErr: readErr},
		{name: "an open share link", st: DeleteState{Shared: 2},
			want: "this session is shared; stop sharing (M-x planbridge-share-stop) first"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			err := CheckDelete(tc.st)
			switch {
			case tc.wantErr != nil:
				if err != tc.wantErr {
					t.Fatalf("CheckDelete = %v, want the read error %v", err, tc.wantErr)
				}
			case tc.want == "":
				if err != nil {
					t.Fatalf("CheckDelete = %v, want nil", err)
				}
			default:
				code := tc.code
				if code == "" {
					code = CodeSessionInUse
				}
				r, ok := AsRefusal(err)
				if !ok || r.Code != code || r.Message != tc.want {
					t.Fatalf("CheckDelete = %#v, want %s %q", err, code, tc.want)
				}
			}
		})
	}
}

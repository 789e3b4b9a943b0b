package store

import (
	"context"
	"reflect"
	"testing"
)

// TestCommitForkSessionCopiesTheTranscript: the fork gets exactly the
// source's messages before its fork point, every column of them, and the
// source's record names it, in one transaction; the source's transcript
// is untouched.
func TestCommitForkSessionCopiesTheTranscript(t *testing.T) {
	ctx := context.Background()
	s, err := Open(ctx, t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	if err := s.PutSession(ctx, Session{ID: "s-src", Workspace: "/w", Mode: "ask"}); err != nil {
		t.Fatal(err)
	}
	src := []Message{
		{Idx: 0, Segment: 0, Role: "user", Content: "plan it"},
		{Idx: 1, Segment: 0, Role: "assistant", Content: "", ToolCalls: `[{"id":"c1","name":"read_file"}]`, Thinking: `[{"text":"t"}]`},
		{Idx: 2, Segment: 0, Role: "tool", Content: "file", ToolCallID: "c1", Name: "read_file"},
		{Idx: 3, Segment: 1, Role: "assistant", Content: "<proposed_plan>…"},
		{Idx: 4, Segment: 1, Role: "user", Content: "after the fork point"},
	}
	if err := s.AppendMessages(ctx, "s-src", src); err != nil {
		t.Fatal(err)
	}
	for _, point := range []int64{0, 4, 9} {
		fork := Session{ID: "s-fork" + string(rune('a'+point)), Workspace: "/w/.worktrees/x", Mode: "ask", ParentID: "s-src", ForkPoint: point}
		if err := s.CommitForkSession(ctx, ForkSession{Fork: fork, SourceID: "s-src", SourceRecord: `{"fork":"` + fork.ID + `"}`}); err != nil {
			t.Fatalf("point %d: %v", point, err)
		}
		got, err := s.Messages(ctx, fork.ID)
		if err != nil {
			t.Fatal(err)
		}
		var want []Message
		for _, m := range src {
			if m.Idx < point {
				want = append(want, m)
			}
		}
		if !reflect.DeepEqual(got, want) {
			t.Errorf("point %d: the fork holds %+v, want %+v", point, got, want)
		}
		if rec, err := s.GetRetryRecord(ctx, "s-src"); err != nil || rec != `{"fork":"`+fork.ID+`"}` {
			t.Errorf("point %d: the source's record is %q %v", point, rec, err)
		}
	}
	if got, err := s.Messages(ctx, "s-src"); err != nil || !reflect.DeepEqual(got, src) {
		t.Errorf("the source's transcript is now %+v %v", got, err)
	}
}

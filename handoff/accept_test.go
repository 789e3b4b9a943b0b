package handoff

import (
	"context"
	"errors"
	"syscall"
	"testing"
)

type fakeAccept struct {
	archives  map[string]string // path → body (write-once)
	records   []*Record
	started   int
	committed int // Committed calls (the session in line with the commit)
	refuse    error
	failOp    string
	crashAt   string
}

func (f *fakeAccept) Validate(ctx context.Context) (Accepting, error) {
	if f.refuse != nil {
		return Accepting{}, f.refuse
	}
	return Accepting{Selection: Selection{Location: Here, Context: Current, Execution: Goal, Mode: "ask"},
		Title: "T", Body: "# T\n", Hash: "0123456789abcdef0123"}, nil
}

func (f *fakeAccept) Archive(ctx context.Context, a Artifact, body string) error {
	if old, ok := f.archives[a.Path]; ok && old != body {
		return errors.New("exists with different content")
	}
	f.archives[a.Path] = body
	return nil
}

func (f *fakeAccept) Commit(ctx context.Context, rec *Record, in Accepting) error {
	if f.failOp == "acceptance" {
		return syscall.ENOSPC
	}
	c := *rec
	f.records = append(f.records, &c)
	return nil
}

func (f *fakeAccept) Committed(ctx context.Context, rec *Record, in Accepting) {
	if len(f.records) == 0 || f.records[len(f.records)-1].Marshal() != rec.Marshal() {
		panic("Committed before its commit")
	}
	f.committed++
}

func (f *fakeAccept) Start(rec *Record) error { f.started++; return nil }

func (f *fakeAccept) Failpoint(name string) {
	if name == f.crashAt {
		panic(crash{name})
	}
}

func accept(f *fakeAccept) (crashed string, err error) {
	defer func() {
		if r := recover(); r != nil {
			crashed = r.(crash).at
		}
	}()
	_, err = Accept(context.Background(), f)
	return "", err
}

// TestAcceptSteps: a refusal changes nothing; a crash after the archive
// leaves no record and accepting again reuses the archive; a crash after
// the commit leaves exactly one record (the pipeline resumes from it); a
// failing commit starts nothing; the Goal id is reserved in the record.
func TestAcceptSteps(t *testing.T) {
	f := &fakeAccept{archives: map[string]string{}, refuse: errors.New("stale")}
	if _, err := accept(f); err == nil || len(f.archives) != 0 || len(f.records) != 0 {
		t.Fatalf("refusal: %v %+v", err, f)
	}
	f = &fakeAccept{archives: map[string]string{}, crashAt: "handoff.archived"}
	if c, _ := accept(f); c != "handoff.archived" || len(f.records) != 0 || len(f.archives) != 1 {
		t.Fatalf("crash after archive: %q %+v", c, f)
	}
	f.crashAt = ""
	if _, err := accept(f); err != nil || len(f.archives) != 1 || len(f.records) != 1 || f.started != 1 {
		t.Fatalf("accepting again: %v %+v", err, f)
	}
	if f.records[0].GoalID == "" || f.records[0].Step != StepRecorded || f.records[0].Artifact.Path != "plans/accepted-0123456789abcdef.md" {
		t.Fatalf("record %+v", f.records[0])
	}
	f = &fakeAccept{archives: map[string]string{}, failOp: "acceptance"}
	if _, err := accept(f); !errors.Is(err, syscall.ENOSPC) || f.started != 0 || len(f.records) != 0 || f.committed != 0 {
		t.Fatalf("failing commit: %v %+v", err, f)
	}
}

// TestAcceptFailpoints: a crash at each of Accept's failpoints leaves what
// the step before it committed and nothing after it: no record before
// the acceptance commit, exactly one from then on; the session brought in
// line only past handoff.committed; the pipeline started only past
// handoff.recorded.
func TestAcceptFailpoints(t *testing.T) {
	for _, c := range []struct {
		at                          string
		records, committed, started int
	}{
		{"handoff.archived", 0, 0, 0},
		{"handoff.committed", 1, 0, 0},
		{"handoff.recorded", 1, 1, 0},
		{"", 1, 1, 1},
	} {
		f := &fakeAccept{archives: map[string]string{}, crashAt: c.at}
		crashed, err := accept(f)
		if crashed != c.at || err != nil {
			t.Fatalf("%q: crashed at %q, %v", c.at, crashed, err)
		}
		if len(f.archives) != 1 || len(f.records) != c.records || f.committed != c.committed || f.started != c.started {
			t.Errorf("%q: %d archives, %d records, %d committed, %d started; want 1, %d, %d, %d",
				c.at, len(f.archives), len(f.records), f.committed, f.started, c.records, c.committed, c.started)
		}
	}
}

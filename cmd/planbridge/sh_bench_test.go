package main

import (
	"context"
	"os/exec"
	"testing"

	"planbridge/bashclass"
)

// BenchmarkRunTrue is "planbridge sh true" with a true that is a program:
// true is a builtin of the interpreter, so the benchmark runs uname, the
// cheapest allowed program, to classify, interpret and start it under the
// whole sandbox (launcher, bwrap, Landlock, seccomp, limits, cgroup). It
// lives here so that the launcher is a binary with all of planbridge's
// packages (their initialisation is part of every sandbox start).
// BenchmarkBareTrue starts the same program directly; benchreport prints
// the difference, the sandbox's start-up cost.
func BenchmarkRunTrue(b *testing.B) {
	r := &bashclass.Runner{Dir: b.TempDir()}
	if res, err := r.Run(context.Background(), "uname >/dev/null"); err != nil || res.ExitCode != 0 || res.Refused {
		b.Fatalf("Run(uname) = %v, %+v", err, res)
	}
	b.ResetTimer()
	for i := 0; i < b.N; i++ {
		if _, err := r.Run(context.Background(), "uname >/dev/null"); err != nil {
			b.Fatal(err)
		}
	}
}

// BenchmarkBareTrue starts uname directly, the baseline of
// [BenchmarkRunTrue].
func BenchmarkBareTrue(b *testing.B) {
	for i := 0; i < b.N; i++ {
		if err := exec.Command("/usr/bin/uname").Run(); err != nil {
			b.Fatal(err)
		}
	}
}

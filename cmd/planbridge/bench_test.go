package main

import (
	"context"
	"os/exec"
	"sort"
	"testing"
	"time"

	"planbridge/rpc"
)

// BenchmarkRPCRoundTrip measures a trivial request (plan/status) from a
// client through the real binary's stdio and back; it reports the p50.
func BenchmarkRPCRoundTrip(b *testing.B) {
	ctx := context.Background()
	cmd := exec.Command(binary, "serve", "--state-dir", b.TempDir())
	in, _ := cmd.StdinPipe()
	out, _ := cmd.StdoutPipe()
	if err := cmd.Start(); err != nil {
		b.Fatal(err)
	}
	defer func() { in.Close(); cmd.Wait() }()
	c := rpc.NewClient(ctx, out, in)
	var s struct{ ID string }
	if err := c.Call(ctx, "session/create", map[string]string{"workspace": b.TempDir()}, &s); err != nil {
		b.Fatal(err)
	}
	params := map[string]string{"session": s.ID}
	lat := make([]time.Duration, 0, b.N)
	b.ResetTimer()
	for i := 0; i < b.N; i++ {
		t0 := time.Now()
		if err := c.Call(ctx, "plan/status", params, nil); err != nil {
			b.Fatal(err)
		}
		lat = append(lat, time.Since(t0))
	}
	b.StopTimer()
	sort.Slice(lat, func(i, j int) bool { return lat[i] < lat[j] })
	b.ReportMetric(float64(lat[len(lat)/2].Nanoseconds()), "p50-ns")
}

// BenchmarkColdStart measures starting `planbridge serve` until the first
// response (initialize) arrives.
func BenchmarkColdStart(b *testing.B) {
	ctx := context.Background()
	dir := b.TempDir()
	for i := 0; i < b.N; i++ {
		cmd := exec.Command(binary, "serve", "--state-dir", dir)
		in, _ := cmd.StdinPipe()
		out, _ := cmd.StdoutPipe()
		if err := cmd.Start(); err != nil {
			b.Fatal(err)
		}
		c := rpc.NewClient(ctx, out, in)
		if err := c.Call(ctx, "initialize", map[string]any{}, nil); err != nil {
			b.Fatal(err)
		}
		b.StopTimer()
		c.Close()
		in.Close()
		cmd.Wait()
		b.StartTimer()
	}
}

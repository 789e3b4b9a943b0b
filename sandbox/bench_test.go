package sandbox

import (
	"context"
	"os/exec"
	"testing"
)

func benchSandbox(b *testing.B, cfg Config) {
	cfg.ReadRoots = []string{b.TempDir()}
	sb, err := New(cfg)
	if err != nil {
		b.Fatal(err)
	}
	b.ResetTimer()
	for i := 0; i < b.N; i++ {
		cmd, err := sb.Command(context.Background(), cfg.ReadRoots[0], []string{"true"}, nil)
		if err != nil {
			b.Fatal(err)
		}
		if out, err := cmd.CombinedOutput(); err != nil {
			b.Fatalf("%v: %s", err, out)
		}
		release(cmd)
	}
}

// BenchmarkSandboxTrue starts true under every layer.
func BenchmarkSandboxTrue(b *testing.B) { benchSandbox(b, Config{}) }

// BenchmarkSandboxTrueNoBwrap starts true under every layer but bwrap.
func BenchmarkSandboxTrueNoBwrap(b *testing.B) { benchSandbox(b, Config{NoBwrap: true}) }

// BenchmarkBareTrue starts true directly.
func BenchmarkBareTrue(b *testing.B) {
	for i := 0; i < b.N; i++ {
		if err := exec.Command("/usr/bin/true").Run(); err != nil {
			b.Fatal(err)
		}
	}
}

// duArgv stats every file of a system directory: a program that makes
// tens of thousands of system calls, so the filter's cost per call
// shows against BenchmarkBareDu.
var duArgv = []string{"du", "-s", "/usr/share/doc"}

// BenchmarkSandboxDuNoBwrap runs duArgv under every layer but bwrap.
func BenchmarkSandboxDuNoBwrap(b *testing.B) {
	sb, err := New(Config{ReadRoots: []string{b.TempDir()}, NoBwrap: true})
	if err != nil {
		b.Fatal(err)
	}
	for i := 0; i < b.N; i++ {
		cmd, err := sb.Command(context.Background(), sb.cfg.ReadRoots[0], duArgv, nil)
		if err != nil {
			b.Fatal(err)
		}
		if out, err := cmd.CombinedOutput(); err != nil {
			b.Fatalf("%v: %s", err, out)
		}
		release(cmd)
	}
}

// BenchmarkBareDu runs duArgv directly.
func BenchmarkBareDu(b *testing.B) {
	for i := 0; i < b.N; i++ {
		if out, err := exec.Command(duArgv[0], duArgv[1:]...).CombinedOutput(); err != nil {
			b.Fatalf("%v: %s", err, out)
		}
	}
}

package review

import (
	"math/rand/v2"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
)

// TestUnifiedPatchOracle applies Unified's output with patch(1): the result
// must be the new text, for random edits of random texts.
func TestUnifiedPatchOracle(t *testing.T) {
	rng := rand.New(rand.NewPCG(1, 2))
	words := []string{"alpha", "beta", "", "- step", "## Validation", "gamma", "delta"}
	gen := func(n int) []string {
		out := make([]string, n)
		for i := range out {
			out[i] = words[rng.IntN(len(words))]
		}
		return out
	}
	dir := t.TempDir()
	for iter := range 150 {
		a := gen(rng.IntN(25))
		b := append([]string(nil), a...)
		for range rng.IntN(6) {
			switch k := rng.IntN(3); {
			case k == 0 && len(b) > 0:
				i := rng.IntN(len(b))
				b = append(b[:i], b[i+1:]...)
			case k == 1:
				i := rng.IntN(len(b) + 1)
				b = append(b[:i], append([]string{words[rng.IntN(len(words))] + "x"}, b[i:]...)...)
			case len(b) > 0:
				b[rng.IntN(len(b))] = "changed"
			}
		}
		at, bt := join(a), join(b)
		d := Unified("a/plan.md", "b/plan.md", at, bt, rng.IntN(4))
		if (d == "") != (at == bt) {
			t.Fatalf("iter %d: empty diff %v for equal %v", iter, d == "", at == bt)
		}
		f := filepath.Join(dir, "plan.md")
		os.WriteFile(f, []byte(at), 0o644)
		if d == "" {
			continue
		}
		cmd := exec.Command("patch", "--no-backup-if-mismatch", "-F0", f)
		cmd.Stdin = strings.NewReader(d)
		out, err := cmd.CombinedOutput()
		if err != nil {
			t.Fatalf("iter %d: patch: %v %s\n%s", iter, err, out, d)
		}
		// Hunks must apply exactly where their headers say.
		if strings.Contains(string(out), "offset") || strings.Contains(string(out), "fuzz") {
			t.Fatalf("iter %d: patch had to adjust: %s\n%s", iter, out, d)
		}
		if got, _ := os.ReadFile(f); string(got) != bt {
			t.Fatalf("iter %d: patched %q, want %q\n%s", iter, got, bt, d)
		}
		// Reversed, the "+" side's line numbers must be exact too.
		cmd = exec.Command("patch", "-R", "--no-backup-if-mismatch", "-F0", f)
		cmd.Stdin = strings.NewReader(d)
		out, err = cmd.CombinedOutput()
		if err != nil || strings.Contains(string(out), "offset") || strings.Contains(string(out), "fuzz") {
			t.Fatalf("iter %d: reverse patch: %v %s\n%s", iter, err, out, d)
		}
		if got, _ := os.ReadFile(f); string(got) != at {
			t.Fatalf("iter %d: reverse patched %q, want %q", iter, got, at)
		}
	}
}

func join(lines []string) string {
	if len(lines) == 0 {
		return ""
	}
	return strings.Join(lines, "\n") + "\n"
}

func TestCarryStatuses(t *testing.T) {
	prev := "# Plan\n## Key Changes\n- one\n- two\n- three\n- four\n- seven here\n## Validation\n- run\n"
	next := "# Plan\n## Key Changes\n- zero\n- one\n- three\n- four\n- seven, revised\n## Validation\n- run\n"
	got := Carry(prev, next, []Comment{{Line: 7, Text: "why?"}, {Line: 3, Text: "ok"}, {Line: 4, Text: "drop"}, {Line: 99, Text: "nowhere"}})
	want := []struct {
		status string
		line   int
	}{{CommentAddressed, 7}, {CommentOpen, 4}, {CommentStale, 0}, {CommentStale, 0}}
	for i, w := range want {
		if got[i].Status != w.status || got[i].Line != w.line {
			t.Errorf("comment %d: %+v, want %s at %d", i, got[i], w.status, w.line)
		}
	}
	if got[0].Quote != "- seven here" || got[0].Text != "why?" || got[0].Comment.Line != 7 {
		t.Fatalf("%+v", got[0])
	}
	// A moved line stays open at its new place.
	moved := Carry("a\nb\nc\n", "b\nc\na\n", []Comment{{Line: 1, Text: "x"}})
	if moved[0].Status != CommentOpen || moved[0].Line != 3 {
		t.Fatalf("moved %+v", moved)
	}
}

func TestUnifiedHugeFallsBack(t *testing.T) {
	var a, b strings.Builder
	for i := range 3000 {
		a.WriteString("a" + strings.Repeat("x", i%7) + "\n")
		b.WriteString("b" + strings.Repeat("y", i%5) + "\n")
	}
	d := Unified("a", "b", a.String(), b.String(), 3)
	if strings.Count(d, "\n-") != 3000 || strings.Count(d, "\n+") != 3001 { // +++ header included
		t.Fatalf("fallback diff: %d removed %d added", strings.Count(d, "\n-"), strings.Count(d, "\n+"))
	}
}

// Command benchreport reads `go test -bench` output on stdin and prints the
// ratios DESIGN.md §7 budgets, each measured in the same run.
package main

import (
	"bufio"
	"fmt"
	"os"
	"regexp"
	"strconv"
	"strings"
)

// ratio compares two benchmarks of one run against a budget.
type ratio struct {
	what        string
	num, den    string  // "Benchmark" or "Benchmark:metric" (default metric ns/op)
	budget      float64 // num/den must be ≤ budget (0: report only)
	strictBelow bool    // budget is "< budget" rather than "≤"
}

var ratios = []ratio{
	{"gate: Bash classification vs bare parse", "BenchmarkClassify", "BenchmarkParse", 1.5, false},
	{"proposal: streamed extraction (1 KiB chunks) vs one goldmark parse", "BenchmarkScannerStream1MiB", "BenchmarkGoldmarkParse1MiB", 3, false},
	{"status: ours vs git status --porcelain (20k files)", "BenchmarkStatus", "BenchmarkGitStatusCLI", 1, true},
	{"status: stock go-git Worktree.Status vs git (reference)", "BenchmarkGoGitStatus", "BenchmarkGitStatusCLI", 0, false},
	{"engines: Anthropic Messages stream decode vs the same response as Chat Completions", "BenchmarkAnthropicDecode", "BenchmarkOpenAIDecode", 0, false},
	{"acp: first-token latency through planbridge's acp engine vs the agent (Codex) alone", "BenchmarkACPFirstToken:acp-ns/op", "BenchmarkACPFirstToken:agent-ns/op", 0, false},
	{"fork: our linked worktree vs git worktree add (20k files)", "BenchmarkAddWorktreeVsGit:ours-ns/op", "BenchmarkAddWorktreeVsGit:git-ns/op", 1, false},
	{"events: a turn streamed as 5,000 deltas vs as one (end to end, write-ahead)", "BenchmarkTurnDeltas5000", "BenchmarkTurnDeltas1", 3, false},
	{"sandbox: a system-call-heavy du (seccomp allowlist, Landlock, no bwrap) vs du alone", "BenchmarkSandboxDuNoBwrap", "BenchmarkBareDu", 0, false},
	{"scope: holding one bash command to the scope (snapshot before, compare after) vs one git status (20k files)", "BenchmarkScopeWatch", "BenchmarkScopeWatchGitStatus", 0, false},
}

// absolute budgets on single metrics.
var absolutes = []struct {
	what, bench, metric string
	max                 float64
	unit                string
}{
	{"JSON-RPC round trip p50 (trivial request)", "BenchmarkRPCRoundTrip", "p50-ns", 1e6, "ns"},
	{"cold start of planbridge serve to first response", "BenchmarkColdStart", "ns/op", 50e6, "ns"},
	// Half of issue 17's 0.5 s for reopening a 1 MiB transcript in Emacs.
	{"session/open of a 1 MiB log of tool steps, through the JSON-RPC adapter", "BenchmarkSessionOpen1MiB", "ns/op", 250e6, "ns"},
}

// differences are targets on the cost one benchmark adds over another of
// the same run (num − den), in ns; a miss is printed, not failed.
var differences = []struct {
	what, num, den string
	target         float64
}{
	{"shell: planbridge sh true overhead over a bare true (sandbox start)", "BenchmarkRunTrue", "BenchmarkBareTrue", 10e6},
}

var line = regexp.MustCompile(`^(Benchmark[^\s-]+)(?:-\d+)?\s+\d+\s+(.*)$`)

func main() {
	metrics := map[string]map[string]float64{}
	sc := bufio.NewScanner(os.Stdin)
	for sc.Scan() {
		m := line.FindStringSubmatch(sc.Text())
		if m == nil {
			continue
		}
		f := strings.Fields(m[2])
		vals := map[string]float64{}
		for i := 0; i+1 < len(f); i += 2 {
			if v, err := strconv.ParseFloat(f[i], 64); err == nil {
				vals[f[i+1]] = v
			}
		}
		metrics[m[1]] = vals
	}
	fmt.Println("\n== budgets (ratios measured in this run) ==")
	fail := false
	for _, r := range ratios {
		n, okn := metric(metrics, r.num)
		d, okd := metric(metrics, r.den)
		if !okn || !okd {
			fmt.Printf("MISSING %-62s (%s / %s not in this run)\n", r.what, r.num, r.den)
			continue
		}
		q := n / d
		verdict := "info"
		if r.budget > 0 {
			ok := q <= r.budget
			if r.strictBelow {
				ok = q < r.budget
			}
			verdict = "ok"
			if !ok {
				verdict, fail = "OVER", true
			}
		}
		if r.budget == 0 {
			fmt.Printf("%-7s %-62s %6.2f× (reference only)\n", verdict, r.what, q)
			continue
		}
		fmt.Printf("%-7s %-62s %6.2f× (budget %s%.0f×)\n", verdict, r.what, q, map[bool]string{true: "<", false: "≤"}[r.strictBelow], r.budget)
	}
	for _, a := range absolutes {
		v, ok := metrics[a.bench][a.metric]
		if !ok {
			fmt.Printf("MISSING %-62s\n", a.what)
			continue
		}
		verdict := "ok"
		if v > a.max {
			verdict, fail = "OVER", true
		}
		fmt.Printf("%-7s %-62s %8.3f ms (budget %.0f ms; %.2f× of budget)\n", verdict, a.what, v/1e6, a.max/1e6, v/a.max)
	}
	for _, d := range differences {
		n, okn := metric(metrics, d.num)
		b, okb := metric(metrics, d.den)
		if !okn || !okb {
			fmt.Printf("MISSING %-62s (%s − %s not in this run)\n", d.what, d.num, d.den)
			continue
		}
		verdict := "ok"
		if n-b > d.target {
			verdict = "MISSED"
		}
		fmt.Printf("%-7s %-62s %8.3f ms (%.3f − %.3f ms; target %.0f ms)\n", verdict, d.what, (n-b)/1e6, n/1e6, b/1e6, d.target/1e6)
	}
	for _, info := range []struct{ what, bench, unit string }{
		{"Bash classification throughput on one core", "BenchmarkClassify", "cmds/s"},
	} {
		if v, ok := metrics[info.bench][info.unit]; ok {
			fmt.Printf("%-7s %-62s %8.0f %s\n", "info", info.what, v, info.unit)
		}
	}
	if fail {
		os.Exit(1)
	}
}

// metric looks up "Bench" (ns/op) or "Bench:unit".
func metric(m map[string]map[string]float64, name string) (float64, bool) {
	bench, unit, ok := strings.Cut(name, ":")
	if !ok {
		unit = "ns/op"
	}
	v, found := m[bench][unit]
	return v, found
}

package bashclass

import (
	"reflect"
	"strings"
	"testing"
	"time"

	"mvdan.cc/sh/v3/syntax"
)

func TestClassifyTable(t *testing.T) {
	if n := len(verdictTable); n < 300 {
		t.Fatalf("verdict table has %d rows, want at least 300", n)
	}
	seen := map[string]bool{}
	allowed := 0
	for _, row := range verdictTable {
		if seen[row.cmd] {
			t.Errorf("duplicate row %q", row.cmd)
		}
		seen[row.cmd] = true
		v := Classify(row.cmd)
		if v.Allow != row.allow {
			t.Errorf("Classify(%q).Allow = %v (reason %q), want %v", row.cmd, v.Allow, v.Reason, row.allow)
			continue
		}
		if v.Allow {
			allowed++
			if v.Reason != "" || len(v.Segments) == 0 {
				t.Errorf("Classify(%q) allowed with reason %q and %d segments", row.cmd, v.Reason, len(v.Segments))
			}
			continue
		}
		if v.Reason == "" {
			t.Errorf("Classify(%q) denied without a reason", row.cmd)
		}
		if !strings.Contains(v.Reason, row.reason) {
			t.Errorf("Classify(%q).Reason = %q, want it to contain %q", row.cmd, v.Reason, row.reason)
		}
	}
	t.Logf("%d rows: %d allowed, %d denied", len(verdictTable), allowed, len(verdictTable)-allowed)
}

func TestSegments(t *testing.T) {
	tests := []struct {
		src  string
		want [][]string
	}{
		{"git status --short && git diff --stat", [][]string{{"git", "status", "--short"}, {"git", "diff", "--stat"}}},
		{"rg -n TODO | head", [][]string{{"rg", "-n", "TODO"}, {"head"}}},
		{"find . -name '*.go' | wc -l", [][]string{{"find", ".", "-name", "*.go"}, {"wc", "-l"}}},
		{`echo "a b" 'c d' e\ f`, [][]string{{"echo", "a b", "c d", "e f"}}},
		{`echo $HOME "x${HOME}y" *.go`, [][]string{{"echo", "$HOME", `"x${HOME}y"`, "*.go"}}},
		{"echo {a,b}c", [][]string{{"echo", "ac", "bc"}}},
		{"if true; then ls; fi\nfor f in a; do cat $f; done", [][]string{{"true"}, {"ls"}, {"cat", "$f"}}},
	}
	for _, tt := range tests {
		v := Classify(tt.src)
		if !v.Allow {
			t.Errorf("Classify(%q) denied: %s", tt.src, v.Reason)
			continue
		}
		var got [][]string
		for _, s := range v.Segments {
			got = append(got, s.Argv)
			if s.Start < 0 || s.End > len(tt.src) || s.Start >= s.End {
				t.Errorf("Classify(%q): segment %v has bad offsets %d..%d", tt.src, s.Argv, s.Start, s.End)
				continue
			}
			if text := tt.src[s.Start:s.End]; !strings.HasPrefix(text, s.Argv[0]) {
				t.Errorf("Classify(%q): segment %v covers %q", tt.src, s.Argv, text)
			}
		}
		if !reflect.DeepEqual(got, tt.want) {
			t.Errorf("Classify(%q) segments = %q, want %q", tt.src, got, tt.want)
		}
	}
	v := Classify("git status --short && git diff --stat")
	if s := v.Segments[1]; s.Start != 22 || s.End != 37 {
		t.Errorf("second segment offsets = %d..%d, want 22..37", s.Start, s.End)
	}
}

// TestBadInput checks that hostile input is denied with a reason, quickly.
func TestBadInput(t *testing.T) {
	deep := func(open, mid, close string, n int) string {
		return strings.Repeat(open, n) + mid + strings.Repeat(close, n)
	}
	tests := []struct {
		name, src, reason string
	}{
		{"nul", "ls\x00rm -rf /", "NUL"},
		{"nul only", "\x00", "NUL"},
		{"1MB", "echo " + strings.Repeat("a", 1<<20), "command too long"},
		{"64KiB+1", strings.Repeat("x", MaxCommandLen+1), "command too long"},
		{"deep subshells", deep("(", "ls", ")", 10000), "nesting too deep"},
		{"deep groups", deep("{ ", "ls;", " }", 10000), "nesting too deep"},
		{"deep cmdsubst", deep("$(", "ls", ")", 10000), "nesting too deep"},
		{"deep if", deep("if true; then ", "ls", "; fi", 3000), "nesting too deep"},
		{"deep while", deep("while true; do ", "ls", "; done", 3000), "nesting too deep"},
		{"deep pipes", strings.Repeat("ls | ", 5000) + "ls", "nesting too deep"},
		{"deep and", strings.Repeat("true && ", 5000) + "ls", "nesting too deep"},
		{"deep quotes", deep("\"$(echo ", "x", ")\"", 5000), "nesting too deep"},
		{"huge brace", "echo {1..100000000}", "brace expansion"},
		{"brace product", "echo {1..100}{1..100}", "brace expansion"},
		{"unterminated", "echo '", "cannot parse"},
		{"garbage", ")))(((", "cannot parse"},
		{"binary", "\xff\xfe\x01", ""},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			start := time.Now()
			v := Classify(tt.src)
			if d := time.Since(start); d > time.Second {
				t.Errorf("took %v", d)
			}
			if v.Allow {
				t.Fatalf("allowed")
			}
			if v.Reason == "" || !strings.Contains(v.Reason, tt.reason) {
				t.Errorf("reason %q, want it to contain %q", v.Reason, tt.reason)
			}
		})
	}
	// Moderate nesting that real commands use stays allowed.
	if v := Classify(deep("( ", "ls", " )", 10)); !v.Allow {
		t.Errorf("10 nested subshells denied: %s", v.Reason)
	}
}

// reprint prints a parsed program back to source with syntax.Printer.
func reprint(t testing.TB, src string) (string, bool) {
	f, err := syntax.NewParser(syntax.Variant(syntax.LangBash)).Parse(strings.NewReader(src), "")
	if err != nil {
		return "", false
	}
	var b strings.Builder
	if err := syntax.NewPrinter().Print(&b, f); err != nil {
		t.Fatalf("print %q: %v", src, err)
	}
	return b.String(), true
}

func argvs(v Verdict) [][]string {
	out := make([][]string, len(v.Segments))
	for i, s := range v.Segments {
		out[i] = s.Argv
	}
	return out
}

// FuzzClassify checks that Classify never panics and that whatever it
// allows re-parses, after printing, to an allowed program with the same
// segment argv: the verdict does not depend on formatting.
func FuzzClassify(f *testing.F) {
	for _, row := range verdictTable {
		f.Add(row.cmd)
	}
	for _, s := range []string{"", "\x00", "$(", "'", "${", "a\\\nb", "echo $'\\x41'", "echo \"a\\\"b\"", "ls #x\n"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, src string) {
		v := Classify(src)
		if !v.Allow {
			if v.Reason == "" {
				t.Fatalf("Classify(%q) denied without a reason", src)
			}
			return
		}
		printed, ok := reprint(t, src)
		if !ok {
			t.Fatalf("Classify(%q) allowed but it does not parse", src)
		}
		v2 := Classify(printed)
		if !v2.Allow {
			t.Fatalf("Classify(%q) allowed, but its reprint %q is denied: %s", src, printed, v2.Reason)
		}
		if a, b := argvs(v), argvs(v2); !reflect.DeepEqual(a, b) {
			t.Fatalf("Classify(%q) segments %q, reprint %q segments %q", src, a, printed, b)
		}
	})
}

// FuzzCheckArgv feeds the per-program models argvs (words separated by
// NUL, the first naming the program): checkArgv never panics and gives a
// reason when it refuses; what it allows can be launched, and an allowed
// command run by xargs keeps every word xargs appends an operand: the
// argv as launched, with words that look like options appended, is
// still allowed by the same policy.
func FuzzCheckArgv(f *testing.F) {
	for _, row := range verdictTable {
		for _, s := range Classify(row.cmd).Segments {
			f.Add(strings.Join(s.Argv, "\x00"))
		}
	}
	for _, s := range []string{"sort\x00--random-source\x00--\x00-o\x00x", "xargs\x00-0\x00wc\x00-l", "find\x00.\x00-exec\x00cat\x00{}\x00+",
		"git\x00log\x00--end-of-options", "xxd\x00-c", "awk\x00@", "sed\x00s/a/b/w x"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, in string) {
		argv := strings.Split(in, "\x00")
		if len(argv) > 64 || argv[0] == "" {
			return
		}
		reason := checkArgv(argv)
		if reason != "" {
			return
		}
		launched := append([]string{argv[0]}, launchArgv(argv[0], argv[1:])...)
		if argv[0] == "xargs" {
			// xargs appends input words: with the launch's "--", words
			// that look like dangerous options stay operands.
			at, r := splitXargs(launched[1:])
			if r != "" {
				t.Fatalf("launched xargs argv %q does not parse: %s", launched, r)
			}
			if at < len(launched)-1 {
				cmd := launched[1+at:]
				c := commands[cmd[0]]
				if c.nest == nestDD {
					if _, ended := checkWith(cmd[0], c, cmd[1:], 1); !ended {
						t.Fatalf("launched xargs command %q leaves options open for appended words", cmd)
					}
				}
			}
		}
	})
}

// FuzzScriptCheckers: the awk and sed checkers never panic, and what the
// awk checker allows contains none of the refused names as a token.
func FuzzScriptCheckers(f *testing.F) {
	for _, s := range []string{"{print}", "BEGIN{print 1/2}", "/a/,/b/", "s/a/b/g", "{print > \"x\"}", "y/a/b/", "@f()", "x++/2", "/[/]/"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, src string) {
		if checkAwkProgram(src) == "" && strings.Contains(src, "@") && !strings.ContainsAny(src, "\"/#") {
			t.Fatalf("awk program %q with @ outside strings, regexps and comments allowed", src)
		}
		_ = checkSedScript(src)
	})
}

// benchCorpus is the command set of the benchmarks: every table row that
// parses.
func benchCorpus(b *testing.B) []string {
	var out []string
	for _, row := range verdictTable {
		if _, err := syntax.NewParser(syntax.Variant(syntax.LangBash)).Parse(strings.NewReader(row.cmd), ""); err == nil {
			out = append(out, row.cmd)
		}
	}
	return out
}

// BenchmarkClassify classifies the whole corpus per iteration; compare
// with BenchmarkParse for the cost over a bare parse (budget: 1.5x).
func BenchmarkClassify(b *testing.B) {
	corpus := benchCorpus(b)
	b.ReportAllocs()
	b.ResetTimer()
	for b.Loop() {
		for _, src := range corpus {
			Classify(src)
		}
	}
	reportPerCommand(b, len(corpus))
}

// BenchmarkCheckArgv is the argv policy alone (the option models) over
// the segments of the same corpus: the part of BenchmarkClassify that is
// not parsing or walking the syntax tree.
func BenchmarkCheckArgv(b *testing.B) {
	var argvs [][]string
	for _, src := range benchCorpus(b) {
		for _, s := range Classify(src).Segments {
			argvs = append(argvs, s.Argv)
		}
	}
	b.ReportAllocs()
	b.ResetTimer()
	for b.Loop() {
		for _, argv := range argvs {
			checkArgv(argv)
		}
	}
	reportPerCommand(b, len(argvs))
}

// BenchmarkParse is the bare mvdan.cc/sh parse of the same corpus.
func BenchmarkParse(b *testing.B) {
	corpus := benchCorpus(b)
	b.ReportAllocs()
	b.ResetTimer()
	for b.Loop() {
		for _, src := range corpus {
			syntax.NewParser(syntax.Variant(syntax.LangBash)).Parse(strings.NewReader(src), "")
		}
	}
	reportPerCommand(b, len(corpus))
}

func reportPerCommand(b *testing.B, n int) {
	perOp := b.Elapsed().Seconds() / float64(b.N)
	b.ReportMetric(perOp*1e9/float64(n), "ns/cmd")
	b.ReportMetric(float64(n)/perOp, "cmds/s")
}

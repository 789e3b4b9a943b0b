package proposal

import (
	"crypto/sha256"
	"encoding/hex"
	"math/rand/v2"
	"reflect"
	"strings"
	"testing"
)

const plan = "# Fix the parser\n## Summary\nMake it right.\n## Key Changes\n- Change A\n- Change B"

type extractCase struct {
	name    string
	in      string
	body    string // expected proposal body; "" means no proposal
	diag    string // "" none, else "warning: <substring>" or "hint: <substring>"
	visible string
}

var extractCases = []extractCase{
	{
		name:    "plain",
		in:      "Here is the plan.\n<proposed_plan>\n" + plan + "\n</proposed_plan>\nThanks.\n",
		body:    plan,
		visible: "Here is the plan.\nThanks.\n",
	},
	{
		name:    "no tags",
		in:      "Just talking.\nNo plan here.",
		visible: "Just talking.\nNo plan here.",
	},
	{
		name:    "empty input",
		in:      "",
		visible: "",
	},
	{
		name:    "CRLF",
		in:      "Intro\r\n<proposed_plan>\r\n# T\r\n\r\n- a\r\n</proposed_plan>\r\nOutro\r\n",
		body:    "# T\n\n- a",
		visible: "Intro\nOutro\n",
	},
	{
		name:    "lone CR",
		in:      "Intro\r<proposed_plan>\r# T\r</proposed_plan>\rOutro",
		body:    "# T",
		visible: "Intro\nOutro",
	},
	{
		name:    "indented tags dedent body",
		in:      "Intro\n    <proposed_plan>\n    # T\n      - nested\n    body\n    </proposed_plan>\nOutro\n",
		body:    "# T\n  - nested\nbody",
		visible: "Intro\nOutro\n",
	},
	{
		name:    "closing tag indented differently",
		in:      "  <proposed_plan>\n  # T\n\t</proposed_plan>\n",
		body:    "# T",
		visible: "",
	},
	{
		name:    "trailing blanks after tags",
		in:      "<proposed_plan> \t\n# T\n</proposed_plan>  \nafter",
		body:    "# T",
		visible: "after",
	},
	{
		name:    "glued prose before opening tag",
		in:      "Done.<proposed_plan>\n# T\n</proposed_plan>\nMore\n",
		body:    "# T",
		visible: "Done.\nMore\n",
	},
	{
		name:    "glued prose and indentation",
		in:      "  Done. <proposed_plan>\n  # T\n  </proposed_plan>\n",
		body:    "# T",
		visible: "  Done. \n",
	},
	{
		name:    "leading and trailing blank lines dropped",
		in:      "<proposed_plan>\n\n  \n# T\n\nbody\n \n\n</proposed_plan>\n",
		body:    "# T\n\nbody",
		visible: "",
	},
	{
		name:    "opening tag followed by text",
		in:      "<proposed_plan> # Title\n- step\n</proposed_plan>\n",
		diag:    "warning: does not end its line",
		visible: "<proposed_plan> # Title\n- step\n</proposed_plan>\n",
	},
	{
		name:    "closing tag with trailing text",
		in:      "<proposed_plan>\n# T\n</proposed_plan> Let me know.\n",
		diag:    "warning: not alone on its line",
		visible: "",
	},
	{
		name:    "closing tag glued after text",
		in:      "<proposed_plan>\n# T\n- last step</proposed_plan>\n",
		diag:    "warning: not alone on its line",
		visible: "",
	},
	{
		name:    "two complete blocks, last wins",
		in:      "<proposed_plan>\n# First\n</proposed_plan>\nbetween\n<proposed_plan>\n# Second\n</proposed_plan>\nend",
		body:    "# Second",
		visible: "between\nend",
	},
	{
		name:    "complete block then unterminated one",
		in:      "<proposed_plan>\n# First\n</proposed_plan>\nbetween\n<proposed_plan>\n# Second\nstill going",
		body:    "# First",
		visible: "between\n",
	},
	{
		name:    "complete block then blank one",
		in:      "<proposed_plan>\n# First\n</proposed_plan>\n<proposed_plan>\n\n</proposed_plan>\n",
		body:    "# First",
		visible: "",
	},
	{
		name:    "unterminated block",
		in:      "Intro\n<proposed_plan>\n# T\n- a\n",
		diag:    "warning: never closed",
		visible: "Intro\n",
	},
	{
		name:    "unterminated block without final newline",
		in:      "Intro\n<proposed_plan>",
		diag:    "warning: never closed",
		visible: "Intro\n",
	},
	{
		name:    "second opening tag restarts",
		in:      "<proposed_plan>\n# Draft\n<proposed_plan>\n# Real\n</proposed_plan>\n",
		body:    "# Real",
		visible: "",
	},
	{
		name:    "stray closing tag",
		in:      "Some text\n</proposed_plan>\nmore\n",
		diag:    "warning: no opening tag",
		visible: "Some text\n</proposed_plan>\nmore\n",
	},
	{
		name:    "blank body",
		in:      "<proposed_plan>\n</proposed_plan>\n",
		diag:    "warning: blank",
		visible: "",
	},
	{
		name:    "whitespace-only body",
		in:      "x\n<proposed_plan>\n   \n\t\n \n</proposed_plan>\ny",
		diag:    "warning: blank",
		visible: "x\ny",
	},
	{
		name:    "attribute on the tag",
		in:      "<proposed_plan id=1>\n# T\n</proposed_plan>\n",
		diag:    "warning: attributes",
		visible: "<proposed_plan id=1>\n# T\n</proposed_plan>\n",
	},
	{
		name:    "wrong case",
		in:      "<PROPOSED_PLAN>\n# T\n</PROPOSED_PLAN>\n",
		diag:    "warning: lowercase",
		visible: "<PROPOSED_PLAN>\n# T\n</PROPOSED_PLAN>\n",
	},
	{
		name:    "inline mentions never warn",
		in:      "I will use <proposed_plan> tags and close with </proposed_plan> later.\nAlso `<proposed_plan>` here.\n",
		visible: "I will use <proposed_plan> tags and close with </proposed_plan> later.\nAlso `<proposed_plan>` here.\n",
	},
	{
		name:    "tags only in a fenced example",
		in:      "Format:\n```\n<proposed_plan>\n# T\n</proposed_plan>\n```\nok",
		diag:    "hint: inside a code fence",
		visible: "Format:\n```\n<proposed_plan>\n# T\n</proposed_plan>\n```\nok",
	},
	{
		name:    "tilde fenced example, unclosed fence runs to the end",
		in:      "~~~~md\n<proposed_plan>\n# T\n</proposed_plan>\n~~~\n",
		diag:    "hint: inside a code fence",
		visible: "~~~~md\n<proposed_plan>\n# T\n</proposed_plan>\n~~~\n",
	},
	{
		name: "fenced example then a real plan",
		in: "Example:\n```text\n<proposed_plan>\n# Example\n</proposed_plan>\n```\nNow the real one.\n" +
			"<proposed_plan>\n# Real\n- do it\n</proposed_plan>\n",
		body:    "# Real\n- do it",
		visible: "Example:\n```text\n<proposed_plan>\n# Example\n</proposed_plan>\n```\nNow the real one.\n",
	},
	{
		name:    "fenced block inside a plan holds a closing tag",
		in:      "<proposed_plan>\n# T\n```xml\n</proposed_plan>\n```\nafter fence\n</proposed_plan>\nbye",
		body:    "# T\n```xml\n</proposed_plan>\n```\nafter fence",
		visible: "bye",
	},
	{
		name:    "fence inside a plan never closed makes it unterminated",
		in:      "<proposed_plan>\n# T\n```\n</proposed_plan>\n",
		diag:    "warning: never closed",
		visible: "",
	},
	{
		name:    "fence indented four is no fence",
		in:      "    ```\n<proposed_plan>\n# T\n</proposed_plan>\n",
		body:    "# T",
		visible: "    ```\n",
	},
	{
		name:    "backtick fence with backtick in info is no fence",
		in:      "``` a`b\n<proposed_plan>\n# T\n</proposed_plan>\n",
		body:    "# T",
		visible: "``` a`b\n",
	},
	{
		name:    "opening tag inside inner fence does not restart",
		in:      "<proposed_plan>\n# T\n~~~\n<proposed_plan>\n~~~\n</proposed_plan>\n",
		body:    "# T\n~~~\n<proposed_plan>\n~~~",
		visible: "",
	},
	{
		name:    "inner fence detected after dedent",
		in:      "    <proposed_plan>\n    # T\n    ```\n    </proposed_plan>\n    ```\n    </proposed_plan>\n",
		body:    "# T\n```\n</proposed_plan>\n```",
		visible: "",
	},
	{
		name:    "tag that is also a fence info string is a fence",
		in:      "```<proposed_plan>\n# T\n```\n",
		diag:    "hint: inside a code fence",
		visible: "```<proposed_plan>\n# T\n```\n",
	},
	{
		name:    "proposal without trailing newline",
		in:      "<proposed_plan>\n# T\n</proposed_plan>",
		body:    "# T",
		visible: "",
	},
}

func checkResult(t *testing.T, c extractCase, got Result) {
	t.Helper()
	if c.body == "" {
		if got.Proposal != nil {
			t.Errorf("proposal = %q, want none", got.Proposal.Body)
		}
	} else {
		if got.Proposal == nil {
			t.Fatalf("no proposal, want body %q (diagnostics %v)", c.body, got.Diagnostics)
		}
		if got.Proposal.Body != c.body {
			t.Errorf("body = %q, want %q", got.Proposal.Body, c.body)
		}
		sum := sha256.Sum256([]byte(c.body))
		if got.Proposal.Hash != hex.EncodeToString(sum[:]) {
			t.Errorf("hash = %s, want sha256 of the body", got.Proposal.Hash)
		}
	}
	switch {
	case c.diag == "":
		if len(got.Diagnostics) != 0 {
			t.Errorf("diagnostics = %v, want none", got.Diagnostics)
		}
	default:
		kind, want, _ := strings.Cut(c.diag, ": ")
		if len(got.Diagnostics) != 1 {
			t.Fatalf("diagnostics = %v, want exactly one %s", got.Diagnostics, kind)
		}
		d := got.Diagnostics[0]
		if d.Kind != kind || !strings.Contains(d.Message, want) {
			t.Errorf("diagnostic = %+v, want %s containing %q", d, kind, want)
		}
		if kind == KindWarning && !strings.Contains(d.Message, "Resend the full plan") {
			t.Errorf("warning %q does not ask to resend the plan", d.Message)
		}
	}
	if got.Visible != c.visible {
		t.Errorf("visible = %q, want %q", got.Visible, c.visible)
	}
}

func TestExtract(t *testing.T) {
	for _, c := range extractCases {
		t.Run(c.name, func(t *testing.T) {
			checkResult(t, c, Extract(c.in))
		})
	}
}

// stream feeds text to a Scanner in chunks of the given sizes (cycled) and
// returns the result and the concatenation of what Write returned.
func stream(text string, sizes ...int) (Result, string) {
	s := NewScanner()
	var vis strings.Builder
	for i := 0; text != ""; i++ {
		n := min(sizes[i%len(sizes)], len(text))
		vis.WriteString(s.Write(text[:n]))
		text = text[n:]
	}
	return s.Close(), vis.String()
}

// checkStream asserts that chunked scanning equals Extract and that the
// streamed visible text is a prefix of the final one (so hidden text never
// leaked while streaming).
func checkStream(t *testing.T, in string, sizes ...int) {
	t.Helper()
	want := Extract(in)
	got, vis := stream(in, sizes...)
	if !reflect.DeepEqual(got, want) {
		t.Fatalf("chunks %v: result differs\n got %+v\nwant %+v", sizes, got, want)
	}
	if !strings.HasPrefix(want.Visible, vis) {
		t.Fatalf("chunks %v: streamed visible %q is not a prefix of %q", sizes, vis, want.Visible)
	}
}

func TestScannerChunkedEqualsExtract(t *testing.T) {
	for _, c := range extractCases {
		t.Run(c.name, func(t *testing.T) {
			for _, sizes := range [][]int{{1}, {2}, {3}, {4096}, {1, 5, 2, 17}} {
				checkStream(t, c.in, sizes...)
			}
			got, _ := stream(c.in, 1)
			checkResult(t, c, got)
		})
	}
}

func TestScannerRandomChunks(t *testing.T) {
	rng := rand.New(rand.NewPCG(1, 2))
	for _, c := range extractCases {
		for range 20 {
			sizes := make([]int, 1+rng.IntN(5))
			for i := range sizes {
				sizes[i] = 1 + rng.IntN(12)
			}
			checkStream(t, c.in, sizes...)
		}
	}
}

// TestScannerHidesWhileStreaming checks the view at every byte: prose shows
// up before its line ends, and nothing of a block ever does.
func TestScannerHidesWhileStreaming(t *testing.T) {
	in := "Intro line\nLong paragraph that goes on  <proposed_plan>\n# Secret\n</proposed_plan>\nOutro"
	s := NewScanner()
	var vis strings.Builder
	for i := 0; i < len(in); i++ {
		vis.WriteString(s.Write(in[i : i+1]))
		if strings.Contains(vis.String(), "<") || strings.Contains(vis.String(), "Secret") {
			t.Fatalf("after %q the view shows %q", in[:i+1], vis.String())
		}
		if in[:i+1] == "Intro line\nLong" && vis.String() != "Intro line\nLong" {
			t.Fatalf("prose held back: view %q", vis.String())
		}
	}
	r := s.Close()
	if r.Visible != "Intro line\nLong paragraph that goes on  \nOutro" || vis.String() != r.Visible {
		t.Fatalf("visible %q, streamed %q", r.Visible, vis.String())
	}
}

func TestScannerFlushesHeldBackTextAtClose(t *testing.T) {
	for _, c := range []struct {
		writes  []string
		returns []string
		visible string
	}{
		{[]string{"prose <propo"}, []string{"prose "}, "prose <propo"},
		{[]string{"prose <propo", "   "}, []string{"prose ", "<propo   "}, "prose <propo   "},
		{[]string{"  ", "\t"}, []string{"", ""}, "  \t"},
		{[]string{"x<proposed_plan>", "  "}, []string{"x", ""}, "x"},
		{[]string{"```\n", "<propo"}, []string{"```\n", "<propo"}, "```\n<propo"},
	} {
		s := NewScanner()
		for i, w := range c.writes {
			if got := s.Write(w); got != c.returns[i] {
				t.Errorf("%q: Write(%q) = %q, want %q", c.writes, w, got, c.returns[i])
			}
		}
		r := s.Close()
		if r.Visible != c.visible {
			t.Errorf("%q: Visible = %q, want %q", c.writes, r.Visible, c.visible)
		}
		if again := s.Close(); !reflect.DeepEqual(again, r) {
			t.Errorf("second Close differs")
		}
		if s.Write("more") != "" {
			t.Errorf("Write after Close returned text")
		}
	}
}

func TestProposalTitle(t *testing.T) {
	for _, c := range []struct{ in, title string }{
		{"<proposed_plan>\n" + plan + "\n</proposed_plan>", "Fix the parser"},
		{"<proposed_plan>\nIntro line\n# Late *title*\n</proposed_plan>", "Late title"},
		{"<proposed_plan>\n\n  First line  \nsecond\n</proposed_plan>", "First line"},
	} {
		r := Extract(c.in)
		if r.Proposal == nil || r.Proposal.Title != c.title {
			t.Errorf("Extract(%q) = %+v, want title %q", c.in, r.Proposal, c.title)
		}
	}
}

// bigResponse builds a response of about size bytes: prose, a fenced example
// of the tags, and one large plan.
func bigResponse(size int) string {
	var b strings.Builder
	b.WriteString("I looked at the code. Here is how the tags look:\n\n```\n<proposed_plan>\n# Example\n</proposed_plan>\n```\n\n")
	b.WriteString("Done.<proposed_plan>\n# Rewrite the importer\n\n## Summary\n\nA large plan.\n\n## Key Changes\n\n")
	for i := 0; b.Len() < size-200; i++ {
		switch i % 7 {
		case 3:
			b.WriteString("```go\nfunc f() { return } // </proposed_plan> inside code\n```\n")
		case 5:
			b.WriteString("| a | b |\n|---|---|\n| 1 | 2 |\n\n")
		default:
			b.WriteString("- [ ] Step with `code`, **bold** text and a [link](https://example.com/x) to follow up on.\n")
		}
	}
	b.WriteString("\n## Validation\n\nRun the tests.\n</proposed_plan>\nThat is the plan.\n")
	return b.String()
}

func TestLargeResponseChunked(t *testing.T) {
	in := bigResponse(1 << 20)
	want := Extract(in)
	if want.Proposal == nil || want.Proposal.Title != "Rewrite the importer" {
		t.Fatalf("no proposal in the large response: %+v", want.Diagnostics)
	}
	if !strings.HasSuffix(want.Visible, "Done.\nThat is the plan.\n") {
		t.Fatalf("visible tail = %q", want.Visible[max(0, len(want.Visible)-60):])
	}
	for _, size := range []int{1, 4096} {
		got, vis := stream(in, size)
		if !reflect.DeepEqual(got, want) || vis != want.Visible {
			t.Fatalf("chunk size %d: result differs from Extract", size)
		}
	}
	crlf := strings.ReplaceAll(in, "\n", "\r\n")
	if got, _ := stream(crlf, 4096); !reflect.DeepEqual(got, want) {
		t.Fatalf("CRLF version in 4 KiB chunks differs")
	}
}

func TestRoundTrip(t *testing.T) {
	for _, c := range extractCases {
		r := Extract(c.in)
		if r.Proposal == nil {
			continue
		}
		again := Extract(openTag + "\n" + r.Proposal.Body + "\n" + closeTag + "\n")
		if again.Proposal == nil || again.Proposal.Body != r.Proposal.Body {
			t.Errorf("%s: body %q does not re-extract to itself: %+v", c.name, r.Proposal.Body, again)
		}
	}
}

func FuzzExtract(f *testing.F) {
	for _, c := range extractCases {
		f.Add(c.in)
	}
	f.Add(bigResponse(4096))
	f.Fuzz(func(t *testing.T, in string) {
		r := Extract(in)
		if r.Proposal != nil {
			if len(r.Diagnostics) != 0 {
				t.Fatalf("proposal and diagnostics together: %v", r.Diagnostics)
			}
			again := Extract(openTag + "\n" + r.Proposal.Body + "\n" + closeTag + "\n")
			if again.Proposal == nil || again.Proposal.Body != r.Proposal.Body {
				t.Fatalf("body %q does not re-extract to itself: %+v", r.Proposal.Body, again)
			}
		}
		if len(r.Diagnostics) > 1 {
			t.Fatalf("more than one diagnostic: %v", r.Diagnostics)
		}
		for _, sizes := range [][]int{{1}, {3, 1, 7}, {4096}} {
			got, vis := stream(in, sizes...)
			if !reflect.DeepEqual(got, r) {
				t.Fatalf("chunks %v: got %+v, want %+v", sizes, got, r)
			}
			if !strings.HasPrefix(r.Visible, vis) {
				t.Fatalf("chunks %v: streamed %q not a prefix of %q", sizes, vis, r.Visible)
			}
		}
	})
}

// TestLongLineLinear streams one 1 MiB line byte by byte; a quadratic scanner
// would take minutes.
func TestLongLineLinear(t *testing.T) {
	for _, in := range []string{
		strings.Repeat("prose <propo ", 1<<20/13) + "<proposed_plan>",
		"<proposed_plan>" + strings.Repeat(" ", 1<<20),
		"```\n" + strings.Repeat("x", 1<<20),
		strings.Repeat("\r", 1<<16) + strings.Repeat(" ", 1<<20) + "\r",
	} {
		checkStream(t, in, 1)
	}
}

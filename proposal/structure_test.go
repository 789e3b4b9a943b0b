package proposal

import (
	"fmt"
	"strings"
	"testing"
	"unicode/utf8"
)

func TestParse(t *testing.T) {
	body := "# Rewrite *the* importer\n\nIntro.\n\n## Summary\n\nShort.\n\n- not a step\n\n## Key Changes\n\n" +
		"- [x] First `step`\n  - detail, not a step\n- [ ] Second step\n\n```\n- code, not a step\n```\n\n" +
		"Setext Section\n--------------\n\nBody\n\n## Validation\n\n1. Run tests\n"
	st := Parse(body)
	if st.Title != "Rewrite the importer" {
		t.Errorf("Title = %q", st.Title)
	}
	var titles []string
	for _, s := range st.Sections {
		titles = append(titles, s.Title)
	}
	if got := strings.Join(titles, "|"); got != "Summary|Key Changes|Setext Section|Validation" {
		t.Errorf("sections = %q", got)
	}
	if got := st.Sections[0].Body; got != "Short.\n\n- not a step" {
		t.Errorf("Summary body = %q", got)
	}
	if got := st.Sections[1].Body; !strings.HasPrefix(got, "- [x] First `step`") || !strings.HasSuffix(got, "```") {
		t.Errorf("Key Changes body = %q", got)
	}
	if got := st.Sections[3].Body; got != "1. Run tests" {
		t.Errorf("Validation body = %q", got)
	}
	want := []Step{{Text: "First step", Done: true}, {Text: "Second step"}}
	if fmt.Sprint(st.Steps) != fmt.Sprint(want) {
		t.Errorf("Steps = %+v, want %+v", st.Steps, want)
	}
	if st.Clipped {
		t.Errorf("Clipped = true")
	}
}

func TestParseStepsWithoutStepSection(t *testing.T) {
	st := Parse("First line title\n\n- a\n- b\n\n## Notes\n\n* c\n")
	if st.Title != "First line title" {
		t.Errorf("Title = %q", st.Title)
	}
	if fmt.Sprint(st.Steps) != fmt.Sprint([]Step{{Text: "a"}, {Text: "b"}, {Text: "c"}}) {
		t.Errorf("Steps = %+v", st.Steps)
	}
}

func TestParseClips(t *testing.T) {
	var b strings.Builder
	b.WriteString("# T\n## Steps\n")
	for i := range 100 {
		fmt.Fprintf(&b, "- step %d\n", i)
	}
	st := Parse(b.String())
	if !st.Clipped || len(st.Steps) != MaxSteps+1 || st.Steps[MaxSteps].Text != "… [clipped: 36 more steps]" {
		t.Errorf("steps: clipped=%v len=%d last=%+v", st.Clipped, len(st.Steps), st.Steps[len(st.Steps)-1])
	}

	long := strings.Repeat("é", MaxStepChars+10)
	st = Parse("- " + long)
	if !st.Clipped || !strings.HasSuffix(st.Steps[0].Text, "… [clipped: 10 more characters]") ||
		utf8.RuneCountInString(st.Steps[0].Text) > MaxStepChars+40 {
		t.Errorf("long step not clipped: %d runes", utf8.RuneCountInString(st.Steps[0].Text))
	}

	huge := "# T\n\n" + strings.Repeat("word ", MaxBodyChars)
	st = Parse(huge)
	if !st.Clipped || st.Title != "T" {
		t.Errorf("huge body: clipped=%v title=%q", st.Clipped, st.Title)
	}
}

func TestRenderHTML(t *testing.T) {
	for _, c := range []struct{ name, in, want, not string }{
		{"script block", "<script>alert(1)</script>\n", "", "<script"},
		{"inline html", "hi <img src=x onerror=alert(1)> there", "hi ", "onerror"},
		{"javascript link", "[x](javascript:alert(1))", `<a href="">x</a>`, "javascript"},
		{"mixed case and entity", "[x](JaVa&#x09;Script&#58;alert(1))", `<a href="">x</a>`, "cript"},
		{"escaped colon", "[x](javascript\\:alert(1))", `<a href="">x</a>`, "javascript"},
		{"leading space entity", "[x](&#32;javascript:alert(1))", `<a href="">x</a>`, "javascript"},
		{"vbscript link", "[x](vbscript:msgbox)", `<a href="">`, "vbscript"},
		{"data image", "![i](data:image/png;base64,AAAA)", `<img src=""`, "data:"},
		{"data autolink", "<data:text/html;base64,PHNjcmlwdD4=>", "data:text/html", "<a"},
		{"javascript autolink", "<javascript:alert(1)>", "javascript:alert(1)", "<a"},
		{"reference link", "[x][r]\n\n[r]: javascript:alert(1)", `<a href="">x</a>`, "javascript"},
		{"safe link kept", "[x](https://example.com/a?b=1)", `<a href="https://example.com/a?b=1">x</a>`, ""},
		{"relative data path kept", "[x](data/file.txt)", `<a href="data/file.txt">`, ""},
		{"table", "| a | b |\n|---|---|\n| 1 | 2 |\n", "<table>", ""},
		{"task list", "- [x] done\n", `<input checked="" disabled="" type="checkbox"`, ""},
	} {
		got := RenderHTML(c.in)
		if !strings.Contains(got, c.want) || (c.not != "" && strings.Contains(got, c.not)) {
			t.Errorf("%s: RenderHTML(%q) = %q, want it to contain %q and not %q", c.name, c.in, got, c.want, c.not)
		}
	}
}

func TestRenderClips(t *testing.T) {
	body := strings.Repeat("a", MaxBodyChars+123)
	if h := RenderHTML(body); !strings.Contains(h, `<p class="proposal-clipped">… [clipped: 123 more characters]</p>`) {
		t.Errorf("RenderHTML lacks the clip marker: %q", h[len(h)-100:])
	}
	txt := RenderText(body)
	if !strings.HasSuffix(txt, "\n\n… [clipped: 123 more characters]") || strings.Count(txt, "a") != MaxBodyChars+2 /* "characters" */ {
		t.Errorf("RenderText clip wrong: %q", txt[len(txt)-60:])
	}
	if RenderText("short\r\nbody\x1b[31m") != "short\nbody[31m" {
		t.Errorf("RenderText = %q", RenderText("short\r\nbody\x1b[31m"))
	}
}

func TestReminders(t *testing.T) {
	full := ReminderFull()
	for _, want := range []string{"work://", "read-only", "exactly one", Template} {
		if !strings.Contains(full, want) {
			t.Errorf("ReminderFull lacks %q", want)
		}
	}
	if !strings.HasSuffix(full, Template) {
		t.Errorf("ReminderFull does not end with the template")
	}
	// The template inside the reminder is itself a well-formed block.
	if r := Extract(Template); r.Proposal == nil || r.Proposal.Title != "Concrete Plan Title" {
		t.Errorf("Template does not extract: %+v", r)
	}
	ref := ReminderRef()
	if strings.Contains(ref, "\n") || !strings.Contains(ref, "<proposed_plan>") {
		t.Errorf("ReminderRef = %q", ref)
	}
}

func FuzzRender(f *testing.F) {
	for _, s := range []string{plan, "<script>x</script>", "[x](javascript:alert(1))", "- [x] a\n  - b\n## Steps\n1. c", "| a |\n|---|\n| b |"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, body string) {
		st := Parse(body)
		if len(st.Steps) > MaxSteps+1 {
			t.Fatalf("%d steps", len(st.Steps))
		}
		h := strings.ToLower(RenderHTML(body))
		for _, bad := range []string{"<script", `href="javascript:`, `src="javascript:`, `href="data:`, `src="data:`} {
			if strings.Contains(h, bad) {
				t.Fatalf("RenderHTML output contains %q: %q", bad, h)
			}
		}
		_ = RenderText(body)
	})
}

package proposal

import (
	"fmt"
	"math/rand/v2"
	"slices"
	"strings"
	"testing"

	"github.com/yuin/goldmark/ast"
	"github.com/yuin/goldmark/text"
)

// fenceLinesTracker returns, per the line tracker, the line numbers that open
// a fence and the line numbers that are fence content.
func fenceLinesTracker(doc string) (opens, content []int) {
	var f fence
	// A final line feed ends the last line; it does not start another.
	for i, l := range strings.Split(strings.TrimSuffix(doc, "\n"), "\n") {
		switch f.step(l) {
		case fenceOpen:
			opens = append(opens, i)
		case fenceContent:
			content = append(content, i)
		}
	}
	return opens, content
}

// fenceLinesGoldmark returns the same from goldmark's AST.
func fenceLinesGoldmark(doc string) (opens, content []int) {
	src := []byte(doc)
	lineOf := func(off int) int { return strings.Count(doc[:off], "\n") }
	root := markdown.Parser().Parse(text.NewReader(src))
	_ = ast.Walk(root, func(n ast.Node, entering bool) (ast.WalkStatus, error) {
		if fc, ok := n.(*ast.FencedCodeBlock); ok && entering {
			opens = append(opens, lineOf(fc.Pos()))
			for i := 0; i < fc.Lines().Len(); i++ {
				seg := fc.Lines().At(i)
				content = append(content, lineOf(min(seg.Start, len(src))))
			}
		}
		return ast.WalkContinue, nil
	})
	return opens, content
}

// fenceCorpus holds top-level documents (no block quotes, list items or HTML
// blocks, which the tracker does not model) with tricky fences.
var fenceCorpus = []string{
	"```\ncode\n```\nafter",
	"```go\n<proposed_plan>\n```",
	"text\n```\ninterrupts a paragraph\n```",
	"   ```\nthree spaces\n   ```",
	"    ```\nfour spaces is no fence\n    ```",
	"\t```\ntab is four columns",
	" \t```\nspace and tab",
	"``` a`b\nbacktick in info: no fence\n```",
	"~~~ a`b\nbacktick in tilde info is fine\n~~~",
	"````\n```\nshorter closer is content\n````",
	"```\n````\nlonger closer closes",
	"~~~\n```\nother char is content\n~~~",
	"```\n``` trailing text is content\n```",
	"```\n    ```\nindented four is content\n```",
	"```\n   ```   \nindented three with blanks closes",
	"```\nunclosed\n<proposed_plan>",
	"``\ntwo is no fence\n``",
	"```\n\n\n```",
	"```\n```\n```\n```",
	"~~~~~\n~~~~\n~~~~~~",
	"```x```\nnot a fence",
	"~~~x~~~\nfence with info",
	"para\n    ```\nlazy indented",
	"\n    code\n```\nfence after indented code\n```",
}

func TestFenceMatchesGoldmark(t *testing.T) {
	docs := slices.Clone(fenceCorpus)
	// Random documents from fence-ish lines widen the corpus.
	vocab := []string{"```", "````", "~~~", "~~~~", "   ```", "    ```", "  ~~~", "\t```", " \t~~~",
		"```go", "``` a`b", "~~~ a`b", "``` x", "```  ", "``", "text", "more text", "", "  ", "<proposed_plan>",
		"</proposed_plan>", "    indented", "````` ", "~~~~~~~", "```x```"}
	rng := rand.New(rand.NewPCG(7, 11))
	for range 3000 {
		lines := make([]string, 1+rng.IntN(10))
		for i := range lines {
			lines[i] = vocab[rng.IntN(len(vocab))]
		}
		docs = append(docs, strings.Join(lines, "\n"))
	}
	for _, doc := range docs {
		to, tc := fenceLinesTracker(doc)
		gotOpens, gotContent := fenceLinesGoldmark(doc)
		if fmt.Sprint(to, tc) != fmt.Sprint(gotOpens, gotContent) {
			t.Errorf("doc %q:\ntracker  opens %v content %v\ngoldmark opens %v content %v", doc, to, tc, gotOpens, gotContent)
		}
	}
}

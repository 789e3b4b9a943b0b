package sandbox_test

import (
	"os"
	"strings"
	"testing"

	"planbridge/bashclass"
)

// TestReadOnlyCorpusAllowed: every command of the corpus TestReadOnlyCorpus
// runs is one Plan's shell allows, so the corpus measures the programs and
// options the classifier really lets run.
func TestReadOnlyCorpusAllowed(t *testing.T) {
	b, err := os.ReadFile("testdata/readonly-corpus.txt")
	if err != nil {
		t.Fatal(err)
	}
	n := 0
	for _, l := range strings.Split(string(b), "\n") {
		if l = strings.TrimSpace(l); l == "" || strings.HasPrefix(l, "#") {
			continue
		}
		n++
		if v := bashclass.Classify(l); !v.Allow {
			t.Errorf("%q is refused: %s", l, v.Reason)
		}
	}
	if n < 100 {
		t.Errorf("the corpus has %d commands", n)
	}
}

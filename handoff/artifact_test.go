package handoff

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"planbridge/proposal"
)

func TestArtifactRoundTrip(t *testing.T) {
	body := "# Title\n\n- step"
	hash := proposal.HashBody(body)
	other := "# Other"
	for _, tc := range []struct {
		name    string
		file    *string // nil: no file
		stored  string
		want    string
		differs bool
		err     string
	}{
		{name: "stored and file agree", file: ptrStr(string(ArtifactData(body))), stored: body, want: body},
		{name: "file changed: the stored body, flagged", file: ptrStr(string(ArtifactData(other))), stored: body, want: body, differs: true},
		{name: "file gone: the stored body, flagged", stored: body, want: body, differs: true},
		{name: "file without its line feed", file: ptrStr(body), stored: body, want: body},
		{name: "old row: the file", file: ptrStr(string(ArtifactData(body))), want: body},
		{name: "old row, file changed", file: ptrStr(string(ArtifactData(other))), err: "work://plans/current.md does not match its recorded hash: it was changed outside planbridge"},
		{name: "old row, no file", err: "read work://plans/current.md: "},
		{name: "stored body not the hashed one: the file", file: ptrStr(string(ArtifactData(body))), stored: other, want: body},
		{name: "one extra line feed is content", file: ptrStr(body + "\n\n"), err: "does not match its recorded hash"},
	} {
		work := t.TempDir()
		if tc.file != nil {
			p := filepath.Join(work, "plans", "current.md")
			if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
				t.Fatal(err)
			}
			if err := os.WriteFile(p, []byte(*tc.file), 0o644); err != nil {
				t.Fatal(err)
			}
		}
		got, differs, err := ProposalBody(work, CurrentPlan, hash, tc.stored)
		if tc.err != "" {
			if err == nil || !strings.Contains(err.Error(), tc.err) || strings.Contains(err.Error(), "\n") {
				t.Errorf("%s: err %v, want one containing %q", tc.name, err, tc.err)
			}
			continue
		}
		if err != nil || got != tc.want || differs != tc.differs {
			t.Errorf("%s: %q, differs %v, %v; want %q, %v", tc.name, got, differs, err, tc.want, tc.differs)
		}
	}
}

func ptrStr(s string) *string { return &s }

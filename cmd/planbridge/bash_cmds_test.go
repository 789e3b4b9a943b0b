package main

import (
	"bytes"
	"encoding/json"
	"os"
	"strings"
	"testing"
)

func TestRunClassify(t *testing.T) {
	tests := []struct {
		args  []string
		stdin string
		code  int
		out   string
	}{
		{args: []string{"git status --short && git diff --stat"}, code: 0, out: "allow\n"},
		{args: []string{"sort -uo f x"}, code: 1, out: "deny: sort option -o (in \"-uo\") writes a file\n"},
		{args: []string{"rm -rf /"}, code: 1, out: "deny: \"rm\" is not a read-only command\n"},
		{args: []string{"-"}, stdin: "ls | wc -l\n", code: 0, out: "allow\n"},
		{args: nil, stdin: "ls\n", code: 2},
		{args: []string{"a", "b"}, code: 2},
	}
	for _, tt := range tests {
		var out, errb bytes.Buffer
		code := runClassify(tt.args, strings.NewReader(tt.stdin), &out, &errb)
		if code != tt.code || tt.out != "" && out.String() != tt.out {
			t.Errorf("classify %q = %d %q (stderr %q), want %d %q", tt.args, code, out.String(), errb.String(), tt.code, tt.out)
		}
	}
}

func TestRunClassifyJSONL(t *testing.T) {
	in := `"ls -la"` + "\n" + `"echo $(id)"` + "\n\n" + `"find . -delete"` + "\n"
	var out, errb bytes.Buffer
	if code := runClassify([]string{"--jsonl"}, strings.NewReader(in), &out, &errb); code != 0 {
		t.Fatalf("exit %d: %s", code, errb.String())
	}
	want := []classifyLine{
		{Command: "ls -la", Verdict: "allow"},
		{Command: "echo $(id)", Verdict: "deny", Reason: "command substitution $(...) is not allowed"},
		{Command: "find . -delete", Verdict: "deny", Reason: "find primary -delete deletes files"},
	}
	lines := strings.Split(strings.TrimSuffix(out.String(), "\n"), "\n")
	if len(lines) != len(want) {
		t.Fatalf("got %d lines: %q", len(lines), out.String())
	}
	for i, line := range lines {
		var got classifyLine
		if err := json.Unmarshal([]byte(line), &got); err != nil {
			t.Fatalf("line %q: %v", line, err)
		}
		if got != want[i] {
			t.Errorf("line %d = %+v, want %+v", i, got, want[i])
		}
	}
	if code := runClassify([]string{"--jsonl"}, strings.NewReader("ls\n"), &out, &errb); code != 2 {
		t.Errorf("non-JSON line: exit %d, want 2", code)
	}
}

func TestRunSh(t *testing.T) {
	dir := t.TempDir()
	var out, errb bytes.Buffer
	if code := runSh([]string{"-C", dir, "rm -rf x"}, nil, &out, &errb); code != 126 || !strings.Contains(errb.String(), `"rm" is not a read-only command`) {
		t.Errorf("refused: exit %d, stderr %q", code, errb.String())
	}
	out.Reset()
	errb.Reset()
	if code := runSh([]string{"-C", dir, "echo hi; false"}, nil, &out, &errb); code != 1 || out.String() != "hi\n" {
		t.Errorf("echo hi; false: exit %d, output %q, stderr %q", code, out.String(), errb.String())
	}
	out.Reset()
	errb.Reset()
	writeTestFile(t, dir+"/-delete")
	if code := runSh([]string{"-C", dir, "find *"}, nil, &out, &errb); code != 126 || !strings.Contains(errb.String(), "find primary -delete") {
		t.Errorf("find * over -delete: exit %d, stderr %q", code, errb.String())
	}
	if code := runSh(nil, nil, &out, &errb); code != 2 {
		t.Errorf("no command: exit %d, want 2", code)
	}
}

func writeTestFile(t *testing.T, path string) {
	t.Helper()
	if err := os.WriteFile(path, []byte("x\n"), 0o644); err != nil {
		t.Fatal(err)
	}
}

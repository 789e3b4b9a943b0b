package main

import (
	"encoding/json"
	"fmt"
	"io"

	"planbridge/proposal"
)

// maxResponseBytes bounds what "planbridge extract" reads from stdin.
const maxResponseBytes = 64 << 20

// extractOutput is the JSON document "planbridge extract" prints.
type extractOutput struct {
	Proposal    *extractProposal    `json:"proposal"`
	Diagnostics []extractDiagnostic `json:"diagnostics"` // never null
	Visible     string              `json:"visible"`
}

type extractProposal struct {
	Title string `json:"title"`
	Body  string `json:"body"`
	Hash  string `json:"hash"`
}

type extractDiagnostic struct {
	Kind    string `json:"kind"`
	Message string `json:"message"`
}

// runExtract implements "planbridge extract": it reads one assistant response
// on stdin, runs [proposal.Extract] and prints
// {"proposal": null | {"title","body","hash"}, "diagnostics": [{"kind","message"}], "visible": "…"}
// followed by a line feed. It exits 0 whether or not a proposal was found,
// and 2 on usage or input errors.
func runExtract(args []string, stdin io.Reader, stdout, stderr io.Writer) int {
	fs := newFlags("extract", stderr)
	pos, code, ok := parseFlags(fs, args, false, stdout, stderr)
	if !ok {
		return code
	}
	if len(pos) > 0 {
		return usageError(fs, stderr, "the response is read from stdin; it takes no arguments")
	}
	b, err := io.ReadAll(io.LimitReader(stdin, maxResponseBytes+1))
	if err != nil {
		fmt.Fprintln(stderr, "planbridge extract:", err)
		return 2
	}
	if len(b) > maxResponseBytes {
		fmt.Fprintf(stderr, "planbridge extract: response larger than %d bytes\n", maxResponseBytes)
		return 2
	}
	r := proposal.Extract(string(b))
	out := extractOutput{Diagnostics: []extractDiagnostic{}, Visible: r.Visible}
	if p := r.Proposal; p != nil {
		out.Proposal = &extractProposal{Title: p.Title, Body: p.Body, Hash: p.Hash}
	}
	for _, d := range r.Diagnostics {
		out.Diagnostics = append(out.Diagnostics, extractDiagnostic{Kind: d.Kind, Message: d.Message})
	}
	enc := json.NewEncoder(stdout)
	enc.SetEscapeHTML(false) // tags stay readable: "<proposed_plan>", not "\u003c…"
	if err := enc.Encode(out); err != nil {
		fmt.Fprintln(stderr, "planbridge extract:", err)
		return 1
	}
	return 0
}

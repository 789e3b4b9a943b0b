package main

import (
	"encoding/json"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"regexp"

	"planbridge/internal/tracking"
	"planbridge/review"
)

var sessionIDRE = regexp.MustCompile(`^[A-Za-z0-9_-]{1,128}$`)

// runReport prints the stored implementation report of SESSION (default:
// the session whose report was built last), read from the state directory.
func runReport(args []string, stdin io.Reader, stdout, stderr io.Writer) int {
	flags := newFlags("report", stderr)
	var cf commonFlags
	cf.register(flags)
	asJSON := flags.Bool("json", false, "print the report as JSON")
	pos, code, parsed := parseFlags(flags, args, true, stdout, stderr)
	if !parsed {
		return code
	}
	if len(pos) > 1 {
		return usageError(flags, stderr, fmt.Sprintf("unexpected argument %q", pos[1]))
	}
	state := cf.dir()
	id := ""
	if len(pos) == 1 {
		id = pos[0]
		if !sessionIDRE.MatchString(id) {
			return usageError(flags, stderr, fmt.Sprintf("%q is not a session id", id))
		}
	} else {
		// review/<base>/report.json, or review/report.json before bases had
		// their own directories.
		matches, _ := filepath.Glob(filepath.Join(state, "sessions", "*", "review", "*", "report.json"))
		legacy, _ := filepath.Glob(filepath.Join(state, "sessions", "*", "review", "report.json"))
		var newest os.FileInfo
		for _, m := range append(matches, legacy...) {
			dir := filepath.Dir(filepath.Dir(m)) // the session directory
			if filepath.Base(filepath.Dir(m)) != "review" {
				dir = filepath.Dir(dir)
			}
			if fi, err := os.Stat(m); err == nil && (newest == nil || fi.ModTime().After(newest.ModTime())) {
				newest, id = fi, filepath.Base(dir)
			}
		}
		if id == "" {
			fmt.Fprintf(stderr, "planbridge report: no session in %s has an implementation report yet (one is built when an implementation ends, or with /review)\n", state)
			return 1
		}
	}
	r, err := review.ReadStoredReport(tracking.ReviewDir(state, id))
	if err != nil {
		if os.IsNotExist(err) {
			fmt.Fprintf(stderr, "planbridge report: session %s has no implementation report yet (one is built when an implementation ends, or with /review)\n", id)
		} else {
			fmt.Fprintf(stderr, "planbridge report: session %s: %v\n", id, err)
		}
		return 1
	}
	if *asJSON {
		out, _ := json.MarshalIndent(r, "", "  ")
		fmt.Fprintf(stdout, "%s\n", out)
		return 0
	}
	fmt.Fprintf(stdout, "Session %s\n%s", id, r.Text())
	return 0
}

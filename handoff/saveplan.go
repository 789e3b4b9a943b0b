package handoff

import (
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"strings"

	"planbridge/internal/atomicfile"
)

// CodeSaveFailed is the [Refusal] of every failure of [SaveToProject]; its
// message names the workspace-relative path only.
const CodeSaveFailed = "save_failed"

// saveFailed is the [CodeSaveFailed] refusal with the message format makes.
func saveFailed(format string, args ...any) error {
	return &Refusal{Code: CodeSaveFailed, Message: fmt.Sprintf(format, args...)}
}

// maxPlanSuffix bounds the "-N" suffixes tried for same-day, same-title plans.
const maxPlanSuffix = 100

// SaveToProject writes an accepted plan's text (data) into the workspace
// as docs/plans/<date>-<slug of title>.md and returns that
// workspace-relative path. It never overwrites: the same text saved again
// reuses its file, and a name taken by other content (or by anything that
// is not a regular file) gets the first free "-2", "-3", … suffix, up to
// -100. docs and docs/plans are created one level at a time (mode 0777
// under the umask, like mkdir(1)) and never through a symbolic link.
// Every failure is a [CodeSaveFailed] refusal.
func SaveToProject(workspace, date, title string, data []byte) (string, error) {
	dir := filepath.Join("docs", "plans")
	fail := func(rel string, err error) error {
		msg := err.Error()
		var pe *fs.PathError
		if errors.As(err, &pe) {
			msg = pe.Op + ": " + pe.Err.Error()
		}
		return saveFailed("cannot save the plan as %s: %s", rel, msg)
	}
	for _, d := range []string{"docs", dir} {
		fi, err := os.Lstat(filepath.Join(workspace, d))
		switch {
		case err == nil && fi.Mode()&fs.ModeSymlink != 0:
			return "", saveFailed("cannot save the plan: %s is a symbolic link", d)
		case err == nil && !fi.IsDir():
			return "", saveFailed("cannot save the plan: %s is not a directory", d)
		case errors.Is(err, fs.ErrNotExist):
			if err := os.Mkdir(filepath.Join(workspace, d), 0o777); err != nil && !errors.Is(err, fs.ErrExist) {
				return "", fail(d, err)
			}
		case err != nil:
			return "", fail(d, err)
		}
	}
	base := date + "-" + slug(title)
	for n := 1; n <= maxPlanSuffix; n++ {
		name := base + ".md"
		if n > 1 {
			name = fmt.Sprintf("%s-%d.md", base, n)
		}
		rel := filepath.Join(dir, name)
		full := filepath.Join(workspace, rel)
		if fi, err := os.Lstat(full); err == nil && !fi.Mode().IsRegular() {
			continue // a directory, symlink, … holds the name: never write through it
		}
		_, err := atomicfile.WriteOnce(full, data, 0o644)
		switch {
		case err == nil:
			return rel, nil
		case errors.Is(err, atomicfile.ErrExists) || errors.Is(err, fs.ErrExist):
			continue
		default:
			return "", fail(rel, err)
		}
	}
	return "", saveFailed("cannot save the plan: %s/%s-2.md … -%d.md are all taken", dir, base, maxPlanSuffix)
}

// slug is title's lower-case ASCII words joined by dashes, at most about
// 60 characters ("plan" when there are none).
func slug(title string) string {
	var b strings.Builder
	dash := false
	for _, r := range strings.ToLower(title) {
		switch {
		case r >= 'a' && r <= 'z' || r >= '0' && r <= '9':
			b.WriteRune(r)
			dash = false
		case !dash && b.Len() > 0:
			b.WriteByte('-')
			dash = true
		}
		if b.Len() >= 60 {
			break
		}
	}
	out := strings.Trim(b.String(), "-")
	if out == "" {
		return "plan"
	}
	return out
}

package worktree

import (
	"errors"
	"fmt"
	"io/fs"
	"os"
	"os/user"
	"path/filepath"
	"strings"

	gitconfig "github.com/go-git/go-git/v5/plumbing/format/config"
)

// config holds the few settings the status walk and the fork honour.
type config struct {
	excludesFile   string // expanded core.excludesFile, or the XDG default
	fileMode       bool   // core.fileMode (default true)
	objectFormat   string // extensions.objectFormat
	worktreeConfig bool   // extensions.worktreeConfig
}

// configFiles lists the configuration files git reads, lowest precedence
// first, following the GIT_CONFIG_NOSYSTEM, GIT_CONFIG_SYSTEM,
// GIT_CONFIG_GLOBAL, XDG_CONFIG_HOME and HOME environment variables.
// include.path directives are not followed.
func configFiles(common string) []string {
	var files []string
	if !envBool("GIT_CONFIG_NOSYSTEM") {
		if s := os.Getenv("GIT_CONFIG_SYSTEM"); s != "" {
			files = append(files, s)
		} else {
			files = append(files, "/etc/gitconfig")
		}
	}
	if g, ok := os.LookupEnv("GIT_CONFIG_GLOBAL"); ok {
		if g != "" {
			files = append(files, g)
		}
	} else {
		if x := xdgConfigHome(); x != "" {
			files = append(files, filepath.Join(x, "git", "config"))
		}
		if h := os.Getenv("HOME"); h != "" {
			files = append(files, filepath.Join(h, ".gitconfig"))
		}
	}
	return append(files, filepath.Join(common, "config"))
}

func xdgConfigHome() string {
	if x := os.Getenv("XDG_CONFIG_HOME"); x != "" {
		return x
	}
	if h := os.Getenv("HOME"); h != "" {
		return filepath.Join(h, ".config")
	}
	return ""
}

func envBool(name string) bool {
	v, ok := parseBool(os.Getenv(name))
	return ok && v
}

// parseBool parses a git boolean; a key without a value reads as "".
func parseBool(s string) (value, ok bool) {
	switch strings.ToLower(strings.TrimSpace(s)) {
	case "", "true", "yes", "on", "1":
		return true, true
	case "false", "no", "off", "0":
		return false, true
	}
	return false, false
}

func loadConfig(gitDir, common string) (config, error) {
	c := config{fileMode: true}
	var excludes string
	apply := func(name string) error {
		f, err := os.Open(name)
		if errors.Is(err, fs.ErrNotExist) || errors.Is(err, syscallENOTDIR) {
			return nil
		}
		if err != nil {
			return fmt.Errorf("worktree: config: %w", err)
		}
		defer f.Close()
		gc := gitconfig.New()
		if err := gitconfig.NewDecoder(f).Decode(gc); err != nil {
			return fmt.Errorf("worktree: config %s: %w", name, err)
		}
		for _, s := range gc.Sections {
			switch {
			case s.IsName("core"):
				for _, o := range s.Options {
					switch {
					case o.IsKey("excludesFile"):
						excludes = o.Value
					case o.IsKey("fileMode"):
						if v, ok := parseBool(o.Value); ok {
							c.fileMode = v
						}
					}
				}
			case s.IsName("extensions"):
				for _, o := range s.Options {
					switch {
					case o.IsKey("objectFormat"):
						c.objectFormat = strings.ToLower(o.Value)
					case o.IsKey("worktreeConfig"):
						c.worktreeConfig, _ = parseBool(o.Value)
					}
				}
			}
		}
		return nil
	}
	for _, name := range configFiles(common) {
		if err := apply(name); err != nil {
			return c, err
		}
	}
	if c.worktreeConfig {
		if err := apply(filepath.Join(gitDir, "config.worktree")); err != nil {
			return c, err
		}
	}
	if excludes == "" {
		if x := xdgConfigHome(); x != "" {
			excludes = filepath.Join(x, "git", "ignore")
		}
	}
	c.excludesFile = expandUser(excludes)
	return c, nil
}

// expandUser expands a leading "~/" or "~user/" as git does for pathname
// settings.
func expandUser(p string) string {
	if !strings.HasPrefix(p, "~") {
		return p
	}
	name, rest, _ := strings.Cut(p[1:], "/")
	var home string
	if name == "" {
		home = os.Getenv("HOME")
	} else if u, err := user.Lookup(name); err == nil {
		home = u.HomeDir
	}
	if home == "" {
		return p
	}
	return filepath.Join(home, rest)
}

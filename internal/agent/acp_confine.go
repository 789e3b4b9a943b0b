package agent

import (
	"errors"
	"fmt"
	"net/url"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"sort"
	"strconv"
	"strings"

	"planbridge/sandbox"

	"golang.org/x/sys/unix"
)

// ConfineACP is planbridge's [ACPConfig.Confine]: an agent process that
// serves Plan turns runs under the sandbox's agent profile, root or not,
// with a private home and tmp (see confinePlanACP); whether or not it asks
// first, it cannot write but its own state directory. Without Landlock the
// Plan agent does not start (the turn fails with the reason) unless the
// person opted out ([ACPUnconfinedVar]). Other turns' agents are left as
// they are: the gate and the permission mode hold them.
func ConfineACP(cmd *exec.Cmd, conf Confinement) error {
	if !conf.Plan {
		return nil
	}
	return confinePlanACP(cmd, conf)
}

// ACPUnconfinedVar, set to 1 in planbridge's or the agent's environment,
// is the person's explicit opt-out for machines where the Plan agent
// cannot be confined (no Landlock): Plan turns then run with only the
// gate holding what the agent asks, and doctor and /plan status say so
// as NO OS CONFINEMENT. Where confinement works it is ignored.
const ACPUnconfinedVar = "PLANBRIDGE_ACP_UNCONFINED_PLAN"

// newAgentSandbox builds the agent profile (a variable for tests of a
// machine without Landlock).
var newAgentSandbox = sandbox.NewAgent

// confinePlanACP wraps cmd in the agent profile. The agent's own
// directory (conf.Writable[0]/plan) holds its private home and tmp, the
// only places it may write: Claude Code writes ~/.claude.json (through a
// temporary file beside it, so the home directory itself must be
// writable) and dies in session/new when it cannot, and every agent keeps
// sessions, caches and logs under its home. The person's real home is not
// granted: a Plan agent that could write ~/.claude/settings.json (hooks),
// ~/.codex/config.toml or ~/.bashrc would run code unconfined through the
// next non-Plan agent or shell. The private home is seeded with copies of
// the agents' configuration and credential files (an allowlist, regular
// files only), refreshed at every start, so the agent is logged in and
// configured as the person is, and nothing it writes reaches the originals.
func confinePlanACP(cmd *exec.Cmd, conf Confinement) error {
	if len(conf.Writable) == 0 {
		return fmt.Errorf("confining the Plan agent: no state directory to confine it to")
	}
	root := filepath.Join(conf.Writable[0], "plan")
	home := filepath.Join(root, "home")
	tmp := filepath.Join(root, "tmp")
	if err := os.MkdirAll(root, 0o700); err != nil {
		return fmt.Errorf("confining the Plan agent: %w", err)
	}
	// Everything beneath root is the agent's to change, and planbridge
	// writes there unconfined (the seeds): it works from a descriptor of
	// root, whose parent the agent cannot write, and never follows a link
	// the last agent left (home replaced by a link into the workspace
	// must not make planbridge write the workspace).
	rfd, err := unix.Open(root, unix.O_DIRECTORY|unix.O_NOFOLLOW|unix.O_CLOEXEC|unix.O_RDONLY, 0)
	if err != nil {
		return fmt.Errorf("confining the Plan agent: %s: %w", root, err)
	}
	defer unix.Close(rfd)
	for _, d := range []string{"home", "tmp"} {
		fd, err := realDirAt(rfd, d)
		if err != nil {
			return fmt.Errorf("confining the Plan agent: %s: %w", filepath.Join(root, d), err)
		}
		unix.Close(fd)
	}
	env := envMap(cmd.Env)
	ports := acpModelPorts(env) // before HOME and CODEX_HOME change
	seedAgentHome(rfd, env)
	set := map[string]string{
		// Claude Code's Bash tool keeps its working files in
		// $CLAUDE_CODE_TMPDIR/claude-UID, /tmp when unset (it ignores
		// TMPDIR), and fails every command when it cannot create them.
		"HOME": home, "TMPDIR": tmp, "TMP": tmp, "TEMP": tmp, "CLAUDE_CODE_TMPDIR": tmp,
		"XDG_CONFIG_HOME": filepath.Join(home, ".config"), "XDG_CACHE_HOME": filepath.Join(home, ".cache"),
		"XDG_DATA_HOME": filepath.Join(home, ".local", "share"), "XDG_STATE_HOME": filepath.Join(home, ".local", "state"),
	}
	if env["CODEX_HOME"] != "" {
		set["CODEX_HOME"] = filepath.Join(home, ".codex")
	}
	if env["CLAUDE_CONFIG_DIR"] != "" {
		set["CLAUDE_CONFIG_DIR"] = filepath.Join(home, ".claude")
	}
	cmd.Env = setEnv(cmd.Env, set)
	ag, err := newAgentSandbox(sandbox.AgentConfig{Writable: []string{root}, ConnectPorts: ports})
	if errors.Is(err, sandbox.ErrNoAgentConfinement) && env[ACPUnconfinedVar] == "1" {
		return nil // the person's opt-out: private home and tmp, no OS layer
	}
	if err != nil {
		return fmt.Errorf("confining the Plan agent: %w (set %s=1 to run Plan turns held by the gate alone)", err, ACPUnconfinedVar)
	}
	return ag.Wrap(cmd)
}

// realDirAt opens the directory name beneath dirfd (created if missing),
// replacing whatever else is there (a link, a file): never a link
// followed. The caller closes the descriptor.
func realDirAt(dirfd int, name string) (int, error) {
	how := &unix.OpenHow{Flags: unix.O_DIRECTORY | unix.O_RDONLY | unix.O_CLOEXEC | unix.O_NOFOLLOW,
		Resolve: unix.RESOLVE_NO_SYMLINKS | unix.RESOLVE_BENEATH | unix.RESOLVE_NO_MAGICLINKS}
	for i := 0; i < 3; i++ {
		fd, err := unix.Openat2(dirfd, name, how)
		if err == nil {
			return fd, nil
		}
		if errors.Is(err, unix.ENOENT) {
			if err := unix.Mkdirat(dirfd, name, 0o700); err != nil && !errors.Is(err, unix.EEXIST) {
				return -1, err
			}
			continue
		}
		// A link or a file where the directory goes: remove it (a
		// directory is never removed, whatever it holds).
		if err := unix.Unlinkat(dirfd, name, 0); err != nil && !errors.Is(err, unix.ENOENT) {
			return -1, err
		}
	}
	return -1, fmt.Errorf("%s: cannot make it a directory", name)
}

// agentHomeFiles are the agents' configuration and credential files a
// Plan agent's private home gets copies of, relative to the person's home
// (or to CLAUDE_CONFIG_DIR / CODEX_HOME for the files under .claude and
// .codex when those are set).
var agentHomeFiles = []string{
	".claude.json", ".claude/settings.json", ".claude/.credentials.json",
	".codex/config.toml", ".codex/auth.json",
	".gemini/settings.json", ".gemini/oauth_creds.json", ".gemini/google_accounts.json", ".gemini/installation_id",
}

// maxSeedFile bounds one copied configuration file.
const maxSeedFile = 4 << 20

// seedAgentHome copies the agentHomeFiles that exist as regular files
// (links are not followed: one could point anywhere) into home beneath
// rootfd (the Plan agent's root). Each copy is written to a fresh file
// and renamed over the old one, every directory opened without following
// links, so nothing the last agent left there redirects the write. A
// file that cannot be copied is skipped: the agent then starts as if the
// person had not configured it, which it reports itself.
func seedAgentHome(rootfd int, env map[string]string) {
	src := env["HOME"]
	for _, rel := range agentHomeFiles {
		from := ""
		switch {
		case strings.HasPrefix(rel, ".claude/") && env["CLAUDE_CONFIG_DIR"] != "":
			from = filepath.Join(env["CLAUDE_CONFIG_DIR"], strings.TrimPrefix(rel, ".claude/"))
		case strings.HasPrefix(rel, ".codex/") && env["CODEX_HOME"] != "":
			from = filepath.Join(env["CODEX_HOME"], strings.TrimPrefix(rel, ".codex/"))
		case filepath.IsAbs(src):
			from = filepath.Join(src, rel)
		default:
			continue
		}
		fi, err := os.Lstat(from)
		if err != nil || !fi.Mode().IsRegular() || fi.Size() > maxSeedFile {
			continue
		}
		b, err := os.ReadFile(from)
		if err != nil {
			continue
		}
		_ = writeBeneath(rootfd, filepath.Join("home", rel), b)
	}
}

// writeBeneath writes b to rel beneath dirfd: directories opened (and
// made) without following links, the file written fresh and renamed over
// whatever had its name.
func writeBeneath(dirfd int, rel string, b []byte) error {
	parts := strings.Split(filepath.Clean(rel), string(filepath.Separator))
	fd, err := unix.Dup(dirfd)
	if err != nil {
		return err
	}
	for _, d := range parts[:len(parts)-1] {
		next, err := realDirAt(fd, d)
		unix.Close(fd)
		if err != nil {
			return err
		}
		fd = next
	}
	defer unix.Close(fd)
	name := parts[len(parts)-1]
	tmp := name + ".planbridge-seed"
	_ = unix.Unlinkat(fd, tmp, 0)
	wfd, err := unix.Openat(fd, tmp, unix.O_WRONLY|unix.O_CREAT|unix.O_EXCL|unix.O_NOFOLLOW|unix.O_CLOEXEC, 0o600)
	if err != nil {
		return err
	}
	f := os.NewFile(uintptr(wfd), tmp)
	_, werr := f.Write(b)
	if cerr := f.Close(); werr == nil {
		werr = cerr
	}
	if werr == nil {
		werr = unix.Renameat(fd, tmp, fd, name)
	}
	if werr != nil {
		_ = unix.Unlinkat(fd, tmp, 0)
	}
	return werr
}

// envMap is the last value of each variable of env ("K=V" list).
func envMap(env []string) map[string]string {
	m := map[string]string{}
	for _, kv := range env {
		if k, v, ok := strings.Cut(kv, "="); ok {
			m[k] = v
		}
	}
	return m
}

// setEnv returns env without the variables of set, then set's.
func setEnv(env []string, set map[string]string) []string {
	var out []string
	for _, kv := range env {
		k, _, _ := strings.Cut(kv, "=")
		if _, over := set[k]; !over {
			out = append(out, kv)
		}
	}
	keys := make([]string, 0, len(set))
	for k := range set {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	for _, k := range keys {
		out = append(out, k+"="+set[k])
	}
	return out
}

// acpModelPorts are the TCP ports the Plan agent may connect to (env is
// its whole environment): 443; the ports of the model endpoints and
// proxies named in the environment (…_BASE_URL, …_API_BASE, …_ENDPOINT,
// …_PROXY); those of the base_url entries of Codex's config.toml (its
// model providers), which Codex reads from $CODEX_HOME or ~/.codex; and
// PLANBRIDGE_ACP_PORTS (comma-separated) for endpoints none of these
// name.
func acpModelPorts(env map[string]string) []uint16 {
	seen := map[uint16]bool{443: true}
	addURL := func(v string) {
		u, err := url.Parse(strings.TrimSpace(v))
		if err != nil || u.Host == "" {
			return
		}
		port := u.Port()
		if port == "" {
			switch u.Scheme {
			case "http":
				port = "80"
			case "https":
				port = "443"
			}
		}
		if n, err := strconv.ParseUint(port, 10, 16); err == nil && n > 0 {
			seen[uint16(n)] = true
		}
	}
	for k, v := range env {
		k = strings.ToUpper(k)
		if strings.HasSuffix(k, "_BASE_URL") || strings.HasSuffix(k, "_API_BASE") || strings.HasSuffix(k, "_ENDPOINT") || strings.HasSuffix(k, "_PROXY") {
			addURL(v)
		}
	}
	for _, f := range strings.Split(env["PLANBRIDGE_ACP_PORTS"], ",") {
		if n, err := strconv.ParseUint(strings.TrimSpace(f), 10, 16); err == nil && n > 0 {
			seen[uint16(n)] = true
		}
	}
	codexDir := env["CODEX_HOME"]
	if codexDir == "" && filepath.IsAbs(env["HOME"]) {
		codexDir = filepath.Join(env["HOME"], ".codex")
	}
	if codexDir != "" {
		if b, err := os.ReadFile(filepath.Join(codexDir, "config.toml")); err == nil && len(b) <= maxSeedFile {
			for _, m := range codexBaseURL.FindAllStringSubmatch(string(b), -1) {
				addURL(m[1])
			}
		}
	}
	var out []uint16
	for p := range seen {
		out = append(out, p)
	}
	sort.Slice(out, func(i, j int) bool { return out[i] < out[j] })
	return out
}

// codexBaseURL matches a base_url key of Codex's config.toml (a model
// provider's endpoint), a basic or literal string.
var codexBaseURL = regexp.MustCompile(`(?m)^[ \t]*base_url[ \t]*=[ \t]*["']([^"'\n]+)["']`)

// ACPConfinementText says which layers [ConfineACP] applies to the Plan
// agent of an engine whose [ACPConfig.Env] is cfgEnv, on this machine, or
// (starting with "NO OS CONFINEMENT") that none can, in which case Plan
// turns of the acp engine are refused. It is what doctor and /plan status
// show ([ACPConfig.Confined]).
func ACPConfinementText(cfgEnv map[string]string) string {
	env := envMap(acpEnviron(cfgEnv))
	optOut := env[ACPUnconfinedVar] == "1"
	ag, err := newAgentSandbox(sandbox.AgentConfig{ConnectPorts: acpModelPorts(env), Describe: "its own state directory"})
	if err != nil && optOut && errors.Is(err, sandbox.ErrNoAgentConfinement) {
		return "NO OS CONFINEMENT of the Plan agent process (" + err.Error() + "): the person opted out with " + ACPUnconfinedVar +
			"=1, so Plan turns run with only the gate holding what the agent asks; what it does without asking is NOT held"
	}
	if err != nil {
		return "NO OS CONFINEMENT of the Plan agent process (" + err.Error() + "): Plan turns of the acp engine are refused rather than run unconfined (" +
			ACPUnconfinedVar + "=1 runs them held by the gate alone)"
	}
	return "Plan agent process under the sandbox agent profile: workspace and everything else read-only, writes only to its own state directory (private home and tmp); " +
		ag.Summary() + "; no bwrap, no network namespace (UDP not restricted)"
}

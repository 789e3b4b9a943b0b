package agent

import (
	"crypto/sha256"
	"fmt"
	"io/fs"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"planbridge/sandbox"

	"golang.org/x/sys/unix"
)

// TestPlanAgentHomeSeeding: the Plan agent's private home gets copies of
// the allowlisted configuration files only, never through a link (in the
// person's home or left in the private home by the last agent), and the
// originals are not reachable from it.
func TestPlanAgentHomeSeeding(t *testing.T) {
	real, root := t.TempDir(), t.TempDir()
	priv := filepath.Join(root, "home")
	os.Mkdir(priv, 0o700)
	write := func(p, s string) {
		os.MkdirAll(filepath.Dir(p), 0o755)
		if err := os.WriteFile(p, []byte(s), 0o600); err != nil {
			t.Fatal(err)
		}
	}
	write(filepath.Join(real, ".claude.json"), `{"a":1}`)
	write(filepath.Join(real, ".claude", ".credentials.json"), "creds")
	write(filepath.Join(real, ".claude", "projects", "secret.jsonl"), "not seeded")
	write(filepath.Join(real, ".bashrc"), "not seeded")
	secret := filepath.Join(t.TempDir(), "shadow")
	write(secret, "outside")
	os.MkdirAll(filepath.Join(real, ".codex"), 0o755)
	os.Symlink(secret, filepath.Join(real, ".codex", "config.toml")) // a link in the person's home: skipped
	// What the last agent left: a link where a seeded file goes.
	victim := filepath.Join(t.TempDir(), "victim")
	write(victim, "untouched")
	os.MkdirAll(filepath.Join(priv, ".claude"), 0o700)
	os.Symlink(victim, filepath.Join(priv, ".claude", ".credentials.json"))

	// And a link where a seeded directory goes.
	ws := t.TempDir()
	os.MkdirAll(filepath.Join(priv, ".gemini"), 0o700)
	os.RemoveAll(filepath.Join(priv, ".gemini"))
	os.Symlink(ws, filepath.Join(priv, ".gemini"))
	write(filepath.Join(real, ".gemini", "settings.json"), "{}")

	rfd, err := unix.Open(root, unix.O_DIRECTORY|unix.O_RDONLY, 0)
	if err != nil {
		t.Fatal(err)
	}
	defer unix.Close(rfd)
	seedAgentHome(rfd, map[string]string{"HOME": real})
	if ents, _ := os.ReadDir(ws); len(ents) != 0 {
		t.Errorf("seeding wrote through a directory link: %v", ents)
	}
	if fi, err := os.Lstat(filepath.Join(priv, ".gemini", "settings.json")); err != nil || !fi.Mode().IsRegular() {
		t.Errorf(".gemini/settings.json: %v %v", fi, err)
	}
	for rel, want := range map[string]string{".claude.json": `{"a":1}`, ".claude/.credentials.json": "creds"} {
		p := filepath.Join(priv, rel)
		fi, err := os.Lstat(p)
		b, _ := os.ReadFile(p)
		if err != nil || !fi.Mode().IsRegular() || string(b) != want {
			t.Errorf("%s: %v %v %q", rel, err, fi, b)
		}
	}
	for _, rel := range []string{".claude/projects/secret.jsonl", ".bashrc", ".codex/config.toml"} {
		if _, err := os.Lstat(filepath.Join(priv, rel)); err == nil {
			t.Errorf("%s was seeded", rel)
		}
	}
	if b, _ := os.ReadFile(victim); string(b) != "untouched" {
		t.Errorf("seeding wrote through a link: %q", b)
	}
}

// TestPlanAgentPorts: the Plan agent may connect to 443, the ports of the
// endpoints its environment names, Codex's model providers' base_url and
// PLANBRIDGE_ACP_PORTS; nothing else.
func TestPlanAgentPorts(t *testing.T) {
	codex := t.TempDir()
	os.WriteFile(filepath.Join(codex, "config.toml"), []byte("model = \"x\"\n# base_url = \"http://h:1111\"\n[model_providers.fake]\nbase_url = \"http://127.0.0.1:2222/v1\"\n  base_url='https://proxy.example'\n"), 0o644)
	got := acpModelPorts(map[string]string{
		"ANTHROPIC_BASE_URL": "http://127.0.0.1:3333", "GOOGLE_GEMINI_BASE_URL": "http://localhost", "HTTPS_PROXY": "http://proxy:3128",
		"SOME_URL": "http://x:4444", "CODEX_HOME": codex, "PLANBRIDGE_ACP_PORTS": "5555, nope,0",
	})
	if fmt.Sprint(got) != "[80 443 2222 3128 3333 5555]" {
		t.Errorf("ports %v", got)
	}
}

// TestConfinePlanAgentCommand: the Plan agent's command runs through the
// launcher with a private home and tmp under the state directory, the
// only places it can write; other agents are left alone.
func TestConfinePlanAgentCommand(t *testing.T) {
	state := filepath.Join(t.TempDir(), "acp")
	os.MkdirAll(state, 0o700)
	ws := t.TempDir()
	realHome := t.TempDir()
	cfg := planACP(nil)
	cmd := exec.Command("/bin/true")
	cmd.Env = []string{"HOME=/nonexistent-home", "TMPDIR=/tmp", "CODEX_HOME=/x"}
	if err := cfg.Confine(cmd, Confinement{Plan: false, Writable: []string{state}}); err != nil || cmd.Path != "/bin/true" || len(cmd.Env) != 3 {
		t.Fatalf("non-Plan agent changed: %v %v %v", err, cmd.Path, cmd.Env)
	}
	script := `touch "$HOME/h" && touch "$TMPDIR/t" && echo home-ok; touch "$WS/x" || echo ws-denied; touch "$REAL/x" || echo realhome-denied; echo "$HOME|$TMPDIR|$CLAUDE_CODE_TMPDIR|$CODEX_HOME|$XDG_CONFIG_HOME"`
	cmd = exec.Command("/bin/sh", "-c", script)
	cmd.Dir = ws
	cmd.Env = []string{"HOME=" + realHome, "TMPDIR=/tmp", "CODEX_HOME=" + realHome, "WS=" + ws, "REAL=" + realHome, "PATH=/usr/bin:/bin"}
	if err := cfg.Confine(cmd, Confinement{Plan: true, Writable: []string{state}}); err != nil {
		t.Fatal(err)
	}
	out, err := cmd.CombinedOutput()
	home := filepath.Join(state, "plan", "home")
	tmp := filepath.Join(state, "plan", "tmp")
	want := "home-ok\n"
	if err != nil || !strings.Contains(string(out), "home-ok\n") || !strings.Contains(string(out), "ws-denied\n") || !strings.Contains(string(out), "realhome-denied\n") ||
		!strings.Contains(string(out), home+"|"+tmp+"|"+tmp+"|"+filepath.Join(home, ".codex")+"|"+filepath.Join(home, ".config")+"\n") {
		t.Errorf("confined Plan agent: %v\n%s (want %q and denials)", err, out, want)
	}
	if _, err := os.Stat(filepath.Join(ws, "x")); err == nil {
		t.Error("the Plan agent wrote the workspace")
	}
	// The last agent replaced its home by a link into the workspace: the
	// next start makes it a directory again and writes nothing through it.
	os.RemoveAll(home)
	os.Symlink(ws, home)
	os.WriteFile(filepath.Join(realHome, ".claude.json"), []byte("{}"), 0o600)
	cmd = exec.Command("/bin/true")
	cmd.Env = []string{"HOME=" + realHome}
	if err := cfg.Confine(cmd, Confinement{Plan: true, Writable: []string{state}}); err != nil {
		t.Fatal(err)
	}
	if fi, err := os.Lstat(home); err != nil || !fi.IsDir() {
		t.Errorf("home after the link: %v %v", fi, err)
	}
	if ents, _ := os.ReadDir(ws); len(ents) != 0 {
		t.Errorf("planbridge wrote the workspace through the agent's link: %v", ents)
	}
	if b, err := os.ReadFile(filepath.Join(home, ".claude.json")); string(b) != "{}" {
		t.Errorf("seed: %q %v", b, err)
	}
	if err := cfg.Confine(exec.Command("/bin/true"), Confinement{Plan: true}); err == nil {
		t.Error("confined without a state directory")
	}
}

// TestPlanAgentWithoutLandlock: where the agent profile cannot be built
// (no Landlock), a Plan agent is refused with the reason and the way out;
// with the person's opt-out it runs unwrapped (private home still), and
// the confinement text says NO OS CONFINEMENT and names the opt-out.
func TestPlanAgentWithoutLandlock(t *testing.T) {
	saved := newAgentSandbox
	defer func() { newAgentSandbox = saved }()
	newAgentSandbox = func(sandbox.AgentConfig) (*sandbox.Agent, error) { return nil, sandbox.ErrNoAgentConfinement }
	state := filepath.Join(t.TempDir(), "acp")
	os.MkdirAll(state, 0o700)
	conf := Confinement{Plan: true, Writable: []string{state}}

	cfg := planACP(nil)
	if !strings.HasPrefix(cfg.Confined, "NO OS CONFINEMENT") || !strings.Contains(cfg.Confined, "refused") {
		t.Errorf("text %q", cfg.Confined)
	}
	cmd := exec.Command("/bin/true")
	if err := cfg.Confine(cmd, conf); err == nil || !strings.Contains(err.Error(), "no Landlock") || !strings.Contains(err.Error(), ACPUnconfinedVar+"=1") {
		t.Fatalf("no Landlock: %v", err)
	}

	cfg = planACP(map[string]string{ACPUnconfinedVar: "1"})
	if !strings.HasPrefix(cfg.Confined, "NO OS CONFINEMENT") || !strings.Contains(cfg.Confined, "opted out with "+ACPUnconfinedVar) {
		t.Errorf("opt-out text %q", cfg.Confined)
	}
	cmd = exec.Command("/bin/true")
	cmd.Env = []string{ACPUnconfinedVar + "=1", "HOME=/nonexistent"}
	if err := cfg.Confine(cmd, conf); err != nil || cmd.Path != "/bin/true" || envMap(cmd.Env)["HOME"] != filepath.Join(state, "plan", "home") {
		t.Fatalf("opt-out: %v %s %v", err, cmd.Path, cmd.Env)
	}
	// Where confinement works the opt-out changes nothing.
	newAgentSandbox = saved
	cmd = exec.Command("/bin/true")
	cmd.Env = []string{ACPUnconfinedVar + "=1"}
	if err := cfg.Confine(cmd, conf); err != nil || cmd.Path == "/bin/true" {
		t.Fatalf("opt-out with Landlock: %v %s", err, cmd.Path)
	}
}

// TestPlanAgentDirsFollowNoLink: the Plan agent may write its own
// directory, so between two starts it can replace its home, its tmp or a
// directory of its home with a link: to the workspace, or to the person's
// real ~/.claude. planbridge, unconfined, then creates and seeds those
// directories for the next start; it must follow none of those links,
// or it writes copies of the person's credentials into the workspace, or
// one agent's configuration over another's real one.
func TestPlanAgentDirsFollowNoLink(t *testing.T) {
	state := filepath.Join(t.TempDir(), "acp")
	ws, real := t.TempDir(), t.TempDir()
	write := func(p, s string) {
		os.MkdirAll(filepath.Dir(p), 0o755)
		if err := os.WriteFile(p, []byte(s), 0o600); err != nil {
			t.Fatal(err)
		}
	}
	write(filepath.Join(real, ".claude", "settings.json"), "claude settings")
	write(filepath.Join(real, ".claude", ".credentials.json"), "claude creds")
	write(filepath.Join(real, ".gemini", "settings.json"), "gemini settings")
	write(filepath.Join(real, ".claude.json"), "{}")
	cfg := planACP(nil)
	confine := func() {
		t.Helper()
		cmd := exec.Command("/bin/true")
		cmd.Env = []string{"HOME=" + real}
		if err := cfg.Confine(cmd, Confinement{Plan: true, Writable: []string{state}}); err != nil {
			t.Fatal(err)
		}
	}
	confine()
	before := treeHash(t, ws)
	realBefore := treeHash(t, real)
	root := filepath.Join(state, "plan")
	home := filepath.Join(root, "home")
	// What a Plan agent can leave behind in its own directory.
	os.RemoveAll(filepath.Join(home, ".claude"))
	os.Symlink(ws, filepath.Join(home, ".claude"))
	os.RemoveAll(filepath.Join(home, ".gemini"))
	os.Symlink(filepath.Join(real, ".claude"), filepath.Join(home, ".gemini"))
	confine()
	os.RemoveAll(home)
	os.Symlink(ws, home)
	os.RemoveAll(filepath.Join(root, "tmp"))
	os.Symlink(real, filepath.Join(root, "tmp"))
	confine()
	if after := treeHash(t, ws); after != before {
		t.Errorf("seeding the Plan agent's home wrote the workspace:\nbefore\n%s\nafter\n%s", before, after)
	}
	if after := treeHash(t, real); after != realBefore {
		t.Errorf("seeding the Plan agent's home wrote the real home:\nbefore\n%s\nafter\n%s", realBefore, after)
	}
	for _, d := range []string{home, filepath.Join(root, "tmp"), filepath.Join(home, ".claude")} {
		if fi, err := os.Lstat(d); err != nil || !fi.IsDir() {
			t.Errorf("%s is not a directory again: %v %v", d, fi, err)
		}
	}
	if b, err := os.ReadFile(filepath.Join(home, ".claude", ".credentials.json")); string(b) != "claude creds" {
		t.Errorf("the private home is not seeded: %q %v", b, err)
	}
}

// planACP is the confinement planbridge configures for an acp engine
// whose configured environment is env.
func planACP(env map[string]string) ACPConfig {
	return ACPConfig{Command: []string{"/bin/true"}, Env: env, Confine: ConfineACP, Confined: ACPConfinementText(env)}
}

// treeHash hashes a directory tree byte for byte: every entry's path,
// type, mode and modification time, a file's content and a link's target.
func treeHash(t testing.TB, dir string) string {
	t.Helper()
	var lines []string
	err := filepath.WalkDir(dir, func(p string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		fi, err := os.Lstat(p)
		if err != nil {
			return err
		}
		rel, _ := filepath.Rel(dir, p)
		line := fmt.Sprintf("%s %v %d", rel, fi.Mode(), fi.ModTime().UnixNano())
		switch {
		case fi.Mode()&fs.ModeSymlink != 0:
			target, _ := os.Readlink(p)
			line += " -> " + target
		case fi.Mode().IsRegular():
			b, err := os.ReadFile(p)
			if err != nil {
				return err
			}
			line += fmt.Sprintf(" %x", sha256.Sum256(b))
		}
		lines = append(lines, line)
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	return strings.Join(lines, "\n")
}

package main

import (
	"bytes"
	"io"
	"net/http"
	"os/exec"
	"strings"
	"testing"
)

// shareLink is share/start's answer, enough of it.
type shareLink struct {
	Tier string `json:"tier"`
	URL  string `json:"url"`
}

// getState fetches a share link's /state the way the page does.
func getState(t *testing.T, link string) (int, string) {
	t.Helper()
	base, key, ok := strings.Cut(link, "#k=")
	if !ok {
		t.Fatalf("link %q has no key", link)
	}
	req, _ := http.NewRequest("GET", base+"/state", nil)
	req.Header.Set("X-Planbridge-Key", key)
	res, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer res.Body.Close()
	b, _ := io.ReadAll(res.Body)
	return res.StatusCode, string(b)
}

func TestShareLinksSurviveServeRestart(t *testing.T) {
	ctx := ctxT(t)
	state := t.TempDir()
	p := startServe(t, state, "--share-listen", "127.0.0.1:0")
	s := createSession(t, ctx, p.c, t.TempDir())
	var got struct{ Links []shareLink }
	if err := p.c.Call(ctx, "share/start", map[string]any{"session": s.ID, "tiers": []string{"full"}}, &got); err != nil {
		t.Fatal(err)
	}
	if len(got.Links) != 1 || got.Links[0].Tier != "full" {
		t.Fatalf("share/start: %+v", got)
	}
	link := got.Links[0].URL
	if code, body := getState(t, link); code != 200 {
		t.Fatalf("before the restart: %d %s", code, body)
	}
	p.stop()

	// The new process listens at startup, on the same port, without a
	// share/start: the old link works again with its tier.
	p = startServe(t, state, "--share-listen", "127.0.0.1:0")
	defer p.stop()
	// Serving RPC means startup (and its Restore) is over.
	if err := p.c.Call(ctx, "session/list", nil, nil); err != nil {
		t.Fatal(err)
	}
	if code, body := getState(t, link); code != 200 || !strings.Contains(body, `"tier":"full"`) {
		t.Fatalf("after the restart: %d %s", code, body)
	}
	if err := p.c.Call(ctx, "share/stop", map[string]string{"session": s.ID}, nil); err != nil {
		t.Fatal(err)
	}
	if code, body := getState(t, link); code != 410 {
		t.Fatalf("after share/stop: %d %s", code, body)
	}
}

func TestShareBaseURLFlag(t *testing.T) {
	ctx := ctxT(t)
	p := startServeEnv(t, []string{"PLANBRIDGE_SHARE_BASE_URL=http://laptop.lan:8787/"}, t.TempDir(), "--share-listen", "0.0.0.0:0")
	defer p.stop()
	s := createSession(t, ctx, p.c, t.TempDir())
	var got struct{ Links []shareLink }
	if err := p.c.Call(ctx, "share/start", map[string]any{"session": s.ID, "tiers": []string{"view"}}, &got); err != nil {
		t.Fatal(err)
	}
	if len(got.Links) != 1 || !strings.HasPrefix(got.Links[0].URL, "http://laptop.lan:8787/s/") {
		t.Fatalf("share/start with a base URL: %+v", got)
	}
	// A bad base URL is refused at startup with a usage error.
	var stderr bytes.Buffer
	cmd := exec.Command(binary, "serve", "--state-dir", t.TempDir(), "--share-base-url", "laptop.lan:8787")
	cmd.Stderr = &stderr
	err := cmd.Run()
	if ee, ok := err.(*exec.ExitError); !ok || ee.ExitCode() != 2 || !strings.Contains(stderr.String(), "share-base-url") {
		t.Fatalf("bad --share-base-url: %v %s", err, stderr.String())
	}
	// The flag is documented (help goes to stdout, exit 0).
	help, err := exec.Command(binary, "serve", "-h").Output()
	if err != nil {
		t.Fatalf("serve -h: %v", err)
	}
	if h := string(help); !strings.Contains(h, "-share-base-url") || !strings.Contains(h, "PLANBRIDGE_SHARE_BASE_URL") || !strings.Contains(h, "0.0.0.0") {
		t.Fatalf("serve -h:\n%s", h)
	}
}

package main

import (
	"bufio"
	"context"
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/hkdf"
	"crypto/rand"
	"crypto/sha256"
	"crypto/tls"
	"crypto/x509"
	"crypto/x509/pkix"
	"encoding/base64"
	"encoding/pem"
	"fmt"
	"io"
	"math/big"
	"net"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/chromedp/chromedp"

	"planbridge/handoff"
	"planbridge/rpc"
)

// relayProc is a running `planbridge relay`.
type relayProc struct {
	cmd *exec.Cmd
	url string
}

// startRelay runs the relay binary on addr ("127.0.0.1:0" for any port)
// with its debug dump, logging to logFile.
func startRelay(t *testing.T, addr, logFile string) *relayProc {
	t.Helper()
	cmd := exec.Command(binary, "relay", "--listen", addr, "--debug-dump", "--log", logFile)
	stderr, _ := cmd.StderrPipe()
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		if cmd.ProcessState == nil {
			cmd.Process.Kill()
			cmd.Wait()
		}
	})
	sc := bufio.NewScanner(stderr)
	if !sc.Scan() {
		t.Fatalf("relay printed nothing: %v", sc.Err())
	}
	line := sc.Text()
	u, ok := strings.CutPrefix(line, "planbridge relay listening on ")
	if !ok {
		t.Fatalf("relay: %q", line)
	}
	go io.Copy(io.Discard, stderr)
	return &relayProc{cmd: cmd, url: u}
}

// kill SIGKILLs the relay: everything it held is gone.
func (r *relayProc) kill(t *testing.T) {
	t.Helper()
	r.cmd.Process.Signal(syscall.SIGKILL)
	r.cmd.Wait()
}

func (r *relayProc) dump(t *testing.T) string {
	t.Helper()
	res, err := http.Get(r.url + "/debug/dump")
	if err != nil {
		t.Fatal(err)
	}
	defer res.Body.Close()
	b, _ := io.ReadAll(res.Body)
	return string(b)
}

// relayBrowser is a headless Chromium for the relay pages.
type relayBrowser struct{ ctx context.Context }

func newRelayBrowser(t *testing.T) *relayBrowser {
	t.Helper()
	if _, err := os.Stat("/usr/bin/chromium"); err != nil {
		t.Fatalf("Debian chromium is required: %v", err)
	}
	actx, cancel := chromedp.NewExecAllocator(context.Background(), chromedp.ExecPath("/usr/bin/chromium"),
		chromedp.Headless, chromedp.NoSandbox, chromedp.DisableGPU, chromedp.NoFirstRun, chromedp.NoDefaultBrowserCheck,
		chromedp.Flag("disable-background-networking", true), chromedp.Flag("disable-dev-shm-usage", true),
		chromedp.UserDataDir(t.TempDir()))
	t.Cleanup(cancel)
	bctx, cancel2 := chromedp.NewContext(actx)
	t.Cleanup(cancel2)
	if err := chromedp.Do(bctx, chromedp.Navigate("about:blank")); err != nil {
		t.Fatalf("start chromium: %v", err)
	}
	ctx, cancel3 := context.WithTimeout(bctx, 90*time.Second)
	t.Cleanup(cancel3)
	return &relayBrowser{ctx: ctx}
}

func (b *relayBrowser) do(t *testing.T, actions ...chromedp.Action[chromedp.Void]) {
	t.Helper()
	if err := chromedp.Do(b.ctx, actions...); err != nil {
		t.Fatal(err)
	}
}

func (b *relayBrowser) eval(t *testing.T, expr string) string {
	t.Helper()
	v, err := chromedp.Run(b.ctx, chromedp.Evaluate[string](expr))
	if err != nil {
		t.Fatalf("evaluate %s: %v", expr, err)
	}
	return v
}

// waitFor polls a JavaScript expression until it returns want (30 s).
func (b *relayBrowser) waitFor(t *testing.T, expr, want string) {
	t.Helper()
	deadline := time.Now().Add(30 * time.Second)
	var got string
	for time.Now().Before(deadline) {
		v, err := chromedp.Run(b.ctx, chromedp.Evaluate[string](expr))
		if got = v; err == nil && v == want {
			return
		}
		time.Sleep(50 * time.Millisecond)
	}
	t.Fatalf("%s is %q, want %q", expr, got, want)
}

func (b *relayBrowser) waitText(t *testing.T, sel, want string) {
	t.Helper()
	b.waitFor(t, `String(((document.querySelector('`+sel+`')||{}).textContent||'').includes(`+fmt.Sprintf("%q", want)+`))`, "true")
}

func relayScript() string {
	plan := func(title string) string {
		return fmt.Sprintf(`{"text": %q}`, "Looked around.\n\n<proposed_plan>\n# "+title+"\n\n## Key Changes\n- Change hello to hi in greet.txt\n\n## Validation\n- cat greet.txt\n</proposed_plan>\n")
	}
	return "[" + strings.Join([]string{plan("Rename the greeting"), plan("Rename the greeting after the outage"), plan("Rename the greeting politely"),
		`{"text": "Implementing in the fork.\n", "tool_calls": [{"name": "edit_file", "arguments": {"path": "greet.txt", "old": "hello", "new": "hi"}}]}`,
		`{"text": "Done.\n"}`}, ",\n") + "]"
}

// TestRelayEndToEnd: a host planbridge and a relay on two loopback ports,
// Chromium on the relay's links. View watches, the relay is killed and
// restarted and the page resumes without duplicates, full sends
// feedback, owner accepts into a Worktree; the relay's memory and logs
// hold no plan text, transcript text or secret.
func TestRelayEndToEnd(t *testing.T) {
	ctx := ctxT(t)
	ctx, cancel := context.WithTimeout(ctx, 150*time.Second)
	defer cancel()
	logs := t.TempDir()
	relayLog := filepath.Join(logs, "relay.log")
	r := startRelay(t, "127.0.0.1:0", relayLog)
	ws := gitRepo(t, map[string]string{"greet.txt": "hello\n"})
	hostLog := filepath.Join(logs, "host.log")
	p := startServe(t, t.TempDir(), "--engine", "script", "--script", writeScript(t, relayScript()), "--log", hostLog)
	s := createSession(t, ctx, p.c, ws)
	if err := p.c.Call(ctx, "session/submit", map[string]string{"session": s.ID, "text": "/plan rename the greeting"}, nil); err != nil {
		t.Fatal(err)
	}
	waitTurnEnd(t, ctx, p.c, 1)

	var got struct {
		Links []struct {
			Tier, URL, Transport string
		}
	}
	if err := p.c.Call(ctx, "share/start", map[string]any{"session": s.ID, "relay": r.url}, &got); err != nil {
		t.Fatal(err)
	}
	links := map[string]string{}
	for _, l := range got.Links {
		if l.Transport != "relay" || !strings.HasPrefix(l.URL, r.url+"/r/") {
			t.Fatalf("link %+v", l)
		}
		links[l.Tier] = l.URL
	}
	if len(links) != 3 {
		t.Fatalf("links %+v", got)
	}
	err := p.c.Call(ctx, "share/start", map[string]any{"session": s.ID, "relay": "http://relay.example.com"}, nil)
	if err == nil || !strings.Contains(err.Error(), "https") {
		t.Errorf("a plain-HTTP relay off loopback: %v", err)
	}

	b := newRelayBrowser(t)
	// View watches.
	b.do(t, chromedp.Navigate(links["view"]))
	b.waitText(t, "#proposal h1", "Rename the greeting")
	b.waitText(t, "#transcript", "rename the greeting")
	b.waitText(t, "#transcript", "Looked around.")
	b.waitText(t, "#tier", "view")
	b.waitText(t, "#conn", "live")

	// The relay dies; meanwhile the host gets feedback from Emacs and
	// proposes again. A new relay on the same address: the page resumes.
	addr := strings.TrimPrefix(r.url, "http://")
	r.kill(t)
	b.waitText(t, "#conn", "reconnecting")
	v := getApproval(t, ctx, p.c, s.ID)
	if err := p.c.Call(ctx, "approval/feedback", map[string]any{"session": s.ID, "attempt": v.Attempt, "text": "Mind the outage"}, nil); err != nil {
		t.Fatal(err)
	}
	waitTurnEnd(t, ctx, p.c, 2)
	r = startRelay(t, addr, relayLog)
	b.waitText(t, "#conn", "live")
	b.waitText(t, "#proposal h1", "Rename the greeting after the outage")
	b.waitText(t, "#transcript", "Feedback: Mind the outage")
	// Every event once: as many user entries as user events, one per
	// assistant answer.
	b.waitFor(t, `String(document.querySelectorAll('#transcript .ev.user').length)`, "2")
	b.waitFor(t, `String([...document.querySelectorAll('#transcript .ev.assistant')].filter(e => e.textContent.includes('Looked around')).length)`, "2")

	// Full sends feedback through the relay.
	b.do(t, chromedp.Navigate(links["full"]), chromedp.WaitVisible(chromedp.ID("feedback")),
		chromedp.SendKeys(chromedp.ID("feedback"), "Please be polite about it"),
		chromedp.Click(chromedp.ID("feedback-btn")))
	b.waitText(t, "#action-status", "Feedback sent")
	waitTurnEnd(t, ctx, p.c, 3)
	b.waitText(t, "#proposal h1", "Rename the greeting politely")
	if a := getApproval(t, ctx, p.c, s.ID); a.Title != "Rename the greeting politely" {
		t.Fatalf("after the page's feedback: %+v", a)
	}

	// Owner accepts into a Worktree, the setting chosen in Emacs.
	v = getApproval(t, ctx, p.c, s.ID)
	update(t, ctx, p.c, s.ID, v.Attempt, handoff.Change{Axis: "location", Value: "worktree"})
	b.do(t, chromedp.Navigate(links["owner"]), chromedp.WaitVisible(chromedp.ID("branch")),
		chromedp.SendKeys(chromedp.ID("branch"), "pb/relay-rename"),
		chromedp.Click(chromedp.ID("accept-worktree-btn")))
	b.waitText(t, "#action-status", "Accepted")
	if _, err := p.c.WaitEvent(ctx, func(e rpc.Event) bool { return e.Kind == "forked" && e.Session == s.ID }); err != nil {
		t.Fatal(err)
	}
	b.waitText(t, "#banner", "Open the Worktree session (owner link)")

	// A bounded flood of junk at the fork's room from one address: the
	// relay's rate limit holds, the host drops what gets through, and
	// the page stays live.
	href := b.eval(t, `document.querySelector('#banner a.open-link').href`)
	forkRoom := strings.SplitN(strings.SplitN(href, "/r/", 2)[1], "#", 2)[0]
	statuses := map[int]int{}
	for range 200 {
		res, err := http.Post(r.url+"/r/"+forkRoom+"/send", "text/plain", strings.NewReader(`{"p":"junk","n":1}`))
		if err != nil {
			t.Fatal(err)
		}
		io.Copy(io.Discard, res.Body)
		res.Body.Close()
		statuses[res.StatusCode]++
	}
	if statuses[429] == 0 || statuses[202] > 100 || statuses[202]+statuses[429]+statuses[503] != 200 {
		t.Errorf("flood of 200 frames: %v", statuses)
	}
	b.do(t, chromedp.Click(chromedp.CSS("#banner a.open-link")))
	b.waitText(t, "#tier", "owner")
	b.waitText(t, "#conn", "live")

	// What the relay held and logged: sealed bytes only.
	dump := r.dump(t)
	if !strings.Contains(dump, `"ring":[{`) {
		t.Fatalf("the relay's dump holds no frames: %.300s", dump)
	}
	relayLogs, _ := os.ReadFile(relayLog)
	hostLogs, _ := os.ReadFile(hostLog)
	if !strings.Contains(string(relayLogs), "room opened") {
		t.Fatalf("the relay logged nothing: %s", relayLogs)
	}
	plain := []string{"Rename the greeting", "Looked around", "Change hello to hi", "Mind the outage", "Please be polite", "rename the greeting", "pb/relay-rename", "greet.txt"}
	var secrets []string
	for _, u := range links {
		_, frag, _ := strings.Cut(u, "#k=")
		k, _, _ := strings.Cut(frag, "&")
		raw, _ := base64.RawURLEncoding.DecodeString(k)
		secrets = append(secrets, k, base64.StdEncoding.EncodeToString(raw))
		for _, label := range []string{"host", "action", "reply", "full", "view"} {
			d, _ := hkdf.Key(sha256.New, raw, nil, "planbridge/v1 "+label, 32)
			secrets = append(secrets, base64.RawURLEncoding.EncodeToString(d), base64.StdEncoding.EncodeToString(d))
		}
	}
	for _, n := range append(plain, secrets...) {
		if strings.Contains(dump, n) {
			t.Errorf("the relay's memory holds %q", n)
		}
		if strings.Contains(string(relayLogs), n) {
			t.Errorf("the relay's log holds %q", n)
		}
	}
	for _, n := range secrets {
		if strings.Contains(string(hostLogs), n) {
			t.Errorf("the host's log holds a secret")
		}
	}
}

// TestRelayServesTLS: with --tls-cert and --tls-key the relay speaks
// https only.
func TestRelayServesTLS(t *testing.T) {
	key, _ := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	tmpl := &x509.Certificate{SerialNumber: big.NewInt(1), Subject: pkix.Name{CommonName: "127.0.0.1"},
		IPAddresses: []net.IP{net.ParseIP("127.0.0.1")}, NotBefore: time.Now().Add(-time.Hour), NotAfter: time.Now().Add(time.Hour)}
	der, err := x509.CreateCertificate(rand.Reader, tmpl, tmpl, &key.PublicKey, key)
	if err != nil {
		t.Fatal(err)
	}
	kb, _ := x509.MarshalECPrivateKey(key)
	dir := t.TempDir()
	certFile, keyFile := filepath.Join(dir, "cert.pem"), filepath.Join(dir, "key.pem")
	os.WriteFile(certFile, pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: der}), 0o600)
	os.WriteFile(keyFile, pem.EncodeToMemory(&pem.Block{Type: "EC PRIVATE KEY", Bytes: kb}), 0o600)
	cmd := exec.Command(binary, "relay", "--listen", "127.0.0.1:0", "--tls-cert", certFile, "--tls-key", keyFile)
	stderr, _ := cmd.StderrPipe()
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	defer func() { cmd.Process.Kill(); cmd.Wait() }()
	sc := bufio.NewScanner(stderr)
	sc.Scan()
	u, ok := strings.CutPrefix(sc.Text(), "planbridge relay listening on ")
	if !ok || !strings.HasPrefix(u, "https://") {
		t.Fatalf("relay: %q", sc.Text())
	}
	pool := x509.NewCertPool()
	c, _ := x509.ParseCertificate(der)
	pool.AddCert(c)
	client := &http.Client{Transport: &http.Transport{TLSClientConfig: &tls.Config{RootCAs: pool}}}
	res, err := client.Get(u + "/r/AAAAAAAAAAAAAAAAAAAAAA")
	if err != nil {
		t.Fatal(err)
	}
	body, _ := io.ReadAll(res.Body)
	res.Body.Close()
	if res.StatusCode != 200 || !strings.Contains(string(body), "/assets/relay.js") {
		t.Fatalf("page over TLS: %d %.200s", res.StatusCode, body)
	}
	if res, err := http.Get(strings.Replace(u, "https://", "http://", 1) + "/r/AAAAAAAAAAAAAAAAAAAAAA"); err == nil {
		b, _ := io.ReadAll(res.Body)
		res.Body.Close()
		if strings.Contains(string(b), "relay.js") {
			t.Fatal("the TLS relay served the page over plain HTTP")
		}
	}
}

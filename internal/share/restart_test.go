package share_test

import (
	"bytes"
	"context"
	"crypto/sha256"
	"encoding/base64"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"log/slog"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"planbridge/internal/session"
	"planbridge/internal/share"
	"planbridge/internal/store"
)

// host is one planbridge process's view of a state directory: store,
// session manager and share server.
type host struct {
	t    *testing.T
	st   *store.Store
	mgr  *session.Manager
	srv  *share.Server
	logs *syncBuffer
	done bool
}

// openHost opens the store in dir and a share server over it, restoring
// the rooms a previous host left there.
func openHost(t *testing.T, ctx context.Context, dir string, clk *clock) *host {
	t.Helper()
	st, err := store.Open(ctx, dir)
	if err != nil {
		t.Fatal(err)
	}
	logs := &syncBuffer{}
	lg := slog.New(slog.NewTextHandler(logs, &slog.HandlerOptions{Level: slog.LevelDebug}))
	mgr := session.NewManager(session.Config{Store: st, Logger: lg})
	h := &host{t: t, st: st, mgr: mgr, srv: share.New(share.Config{Manager: mgr, Logger: lg, Now: clk.Now}), logs: logs}
	t.Cleanup(h.close)
	if err := h.srv.Restore(ctx); err != nil {
		t.Fatal(err)
	}
	return h
}

// close stops the host as planbridge does on exit.
func (h *host) close() {
	if h.done {
		return
	}
	h.done = true
	c, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	if err := h.srv.Close(c); err != nil {
		h.t.Errorf("close share server: %v", err)
	}
	h.mgr.Close()
	if err := h.st.Close(); err != nil {
		h.t.Errorf("close store: %v", err)
	}
}

func (h *host) start(ctx context.Context, sid string, ttl time.Duration, tiers ...share.Tier) map[share.Tier]share.Link {
	h.t.Helper()
	links, err := h.srv.Start(ctx, sid, tiers, ttl)
	if err != nil {
		h.t.Fatal(err)
	}
	out := map[share.Tier]share.Link{}
	for _, l := range links {
		out[l.Tier] = l
	}
	return out
}

// state GETs /state with l's key and decodes the answer.
func state(t *testing.T, l share.Link) (response, share.State) {
	t.Helper()
	r := do(t, "GET", endpoint(l, "/state"), secretOf(t, l), nil)
	var s share.State
	if r.Status == 200 {
		if err := json.Unmarshal([]byte(r.Raw), &s); err != nil {
			t.Fatalf("state: %v: %s", err, r.Raw)
		}
	}
	return r, s
}

func TestLinksSurviveRestart(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	dir := t.TempDir()
	clk := &clock{t: time.Now()}
	h := openHost(t, ctx, dir, clk)
	sess, err := h.mgr.Create(ctx, t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	other, err := h.mgr.Create(ctx, t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	links := h.start(ctx, sess.ID(), 0)
	short := h.start(ctx, sess.ID(), 10*time.Minute, share.Full)[share.Full]
	stopped := h.start(ctx, other.ID(), 0, share.Owner)[share.Owner]
	if !h.srv.Stop(other.ID()) {
		t.Fatal("Stop: not shared")
	}
	if r, s := state(t, links[share.Owner]); r.Status != 200 || s.Tier != share.Owner {
		t.Fatalf("before the restart: %d %s", r.Status, r.Raw)
	}
	base := h.srv.Addr()
	h.close()
	if _, err := os.Stat(filepath.Join(dir, "state.db")); err != nil {
		t.Fatal(err)
	}

	clk.Advance(20 * time.Minute)
	h = openHost(t, ctx, dir, clk)
	if got := h.srv.Addr(); got != base {
		t.Fatalf("after the restart the share server is at %q, links say %q", got, base)
	}
	// The same secrets work again, each with its own tier.
	for _, tier := range []share.Tier{share.View, share.Full, share.Owner} {
		r, s := state(t, links[tier])
		if r.Status != 200 || s.Tier != tier || s.Session.ID != sess.ID() || !s.ExpiresAt.Equal(links[tier].ExpiresAt) {
			t.Fatalf("%s link after the restart: %d %s", tier, r.Status, r.Raw)
		}
	}
	// Tiers are still enforced: view may not send feedback, and full may
	// (the session has no proposal, so the session refuses, not the tier).
	if r := do(t, "POST", endpoint(links[share.View], "/feedback"), secretOf(t, links[share.View]),
		map[string]string{"attempt": "a", "text": "x"}); r.Status != 403 {
		t.Errorf("view feedback after the restart: %d %s", r.Status, r.Raw)
	}
	if r := do(t, "POST", endpoint(links[share.Full], "/feedback"), secretOf(t, links[share.Full]),
		map[string]string{"attempt": "a", "text": "x"}); r.Status == 401 || r.Status == 403 || r.Status == 410 {
		t.Errorf("full feedback after the restart refused by the link: %d %s", r.Status, r.Raw)
	}
	// The event stream replays the persisted log.
	st := openSSE(t, endpoint(links[share.View], "/events"), secretOf(t, links[share.View]), nil)
	if _, ok := st.next(t, kind("status")); !ok {
		t.Fatal("no status event replayed after the restart")
	}
	// The short link expired while planbridge was down; the stopped one
	// stays dead.
	if r, _ := state(t, short); r.Status != 410 || r.Body["code"] != "expired" {
		t.Errorf("expired link after the restart: %d %s", r.Status, r.Raw)
	}
	if r, _ := state(t, stopped); r.Status != 410 || r.Body["code"] != "ended" || !strings.Contains(r.Raw, `"stopped"`) {
		t.Errorf("stopped link after the restart: %d %s", r.Status, r.Raw)
	}
	if r := do(t, "GET", endpoint(links[share.View], "/state"), secretOf(t, links[share.View])+"x", nil); r.Status != 401 {
		t.Errorf("wrong key after the restart: %d", r.Status)
	}
	if ls := h.srv.Links(sess.ID()); len(ls) != 3 {
		t.Errorf("live links after the restart: %+v", ls)
	}
	// A link minted after the restart lands in the same room.
	again := h.start(ctx, sess.ID(), 0, share.View)[share.View]
	if endpoint(again, "") != endpoint(links[share.View], "") {
		t.Errorf("new link %s is not in the restored room %s", endpoint(again, ""), endpoint(links[share.View], ""))
	}
	// The fake clock passes the hour: every link expires, as before.
	clk.Advance(45 * time.Minute)
	if r, _ := state(t, links[share.Owner]); r.Status != 410 || r.Body["code"] != "expired" {
		t.Errorf("owner link past its hour: %d %s", r.Status, r.Raw)
	}
	// Stopping after a restart is stored too.
	if !h.srv.Stop(sess.ID()) {
		t.Fatal("Stop after the restart: not shared")
	}
	h.close()
	h = openHost(t, ctx, dir, clk)
	if got := h.srv.Addr(); got != base {
		t.Fatalf("stopped rooms that ended recently should keep the server answering at %q, got %q", base, got)
	}
	for _, l := range []share.Link{links[share.Full], again} {
		if r, _ := state(t, l); r.Status != 410 || !strings.Contains(r.Raw, `"stopped"`) {
			t.Errorf("link of a stopped room after a second restart: %d %s", r.Status, r.Raw)
		}
	}
	if ls := h.srv.Links(sess.ID()); ls != nil {
		t.Errorf("a stopped session has links after a restart: %+v", ls)
	}
}

func TestHandoffSurvivesRestart(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	dir := t.TempDir()
	clk := &clock{t: time.Now()}
	h := openHost(t, ctx, dir, clk)
	sess, err := h.mgr.Create(ctx, t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	fork, err := h.mgr.Create(ctx, t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	links := h.start(ctx, sess.ID(), 0, share.View, share.Owner)
	if err := h.srv.Handoff(ctx, sess.ID(), fork.ID()); err != nil {
		t.Fatal(err)
	}
	check := func(when string) {
		t.Helper()
		for tier, l := range links {
			r, _ := state(t, l)
			if r.Status != 410 || !strings.Contains(r.Raw, "continues in a Worktree fork") {
				t.Fatalf("%s: old %s link: %d %s", when, tier, r.Status, r.Raw)
			}
			var body struct{ Open *share.Link }
			json.Unmarshal([]byte(r.Raw), &body)
			if body.Open == nil || body.Open.Tier != tier || secretOf(t, *body.Open) != secretOf(t, l) {
				t.Fatalf("%s: old %s link has no Open link of its tier: %s", when, tier, r.Raw)
			}
			r2, s := state(t, *body.Open)
			if r2.Status != 200 || s.Tier != tier || s.Session.ID != fork.ID() {
				t.Fatalf("%s: Open link of the %s page: %d %s", when, tier, r2.Status, r2.Raw)
			}
		}
		// A key the old room never had gets the notice, and no Open link.
		r := do(t, "GET", endpoint(links[share.View], "/state"), "not-a-key", nil)
		if r.Status != 410 || strings.Contains(r.Raw, `"open"`) || !strings.Contains(r.Raw, "continues") {
			t.Fatalf("%s: a wrong key at the ended room: %d %s", when, r.Status, r.Raw)
		}
	}
	check("before the restart")
	if ls := h.srv.Links(fork.ID()); len(ls) != 2 {
		t.Fatalf("fork listed with %+v, want its view and owner links only", ls)
	}
	h.close()
	h = openHost(t, ctx, dir, clk)
	check("after the restart")
	if ls := h.srv.Links(fork.ID()); len(ls) != 2 {
		t.Fatalf("fork listed with %+v after the restart", ls)
	}
	// Stopping the fork kills the inherited keys as well.
	if !h.srv.Stop(fork.ID()) {
		t.Fatal("Stop fork: not shared")
	}
	r, _ := state(t, links[share.Owner])
	if r.Status != 410 || strings.Contains(r.Raw, `"open"`) {
		t.Fatalf("old link after the fork stopped: %d %s", r.Status, r.Raw)
	}
}

// TestStoreHoldsNoSecret scans every share table, the key-value table and
// the database files for any form of a link secret.
func TestStoreHoldsNoSecret(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	dir := t.TempDir()
	clk := &clock{t: time.Now()}
	h := openHost(t, ctx, dir, clk)
	sess, err := h.mgr.Create(ctx, t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	fork, err := h.mgr.Create(ctx, t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	var all []share.Link
	for _, l := range h.start(ctx, sess.ID(), 0) {
		all = append(all, l)
	}
	for _, l := range h.start(ctx, sess.ID(), time.Minute, share.Full) {
		all = append(all, l)
	}
	if err := h.srv.Handoff(ctx, sess.ID(), fork.ID()); err != nil {
		t.Fatal(err)
	}
	for _, l := range h.start(ctx, fork.ID(), 0, share.View) {
		all = append(all, l)
	}
	var needles []string
	var hashes []string
	for _, l := range all {
		sec := secretOf(t, l)
		raw, err := base64.RawURLEncoding.DecodeString(sec)
		if err != nil || len(raw) < 16 {
			t.Fatalf("secret %q: %v", sec, err)
		}
		needles = append(needles, sec,
			hex.EncodeToString([]byte(sec)), base64.StdEncoding.EncodeToString([]byte(sec)), base64.RawURLEncoding.EncodeToString([]byte(sec)),
			hex.EncodeToString(raw), strings.ToUpper(hex.EncodeToString(raw)), base64.StdEncoding.EncodeToString(raw), base64.RawStdEncoding.EncodeToString(raw), base64.URLEncoding.EncodeToString(raw))
		sum := sha256.Sum256([]byte(sec))
		hashes = append(hashes, hex.EncodeToString(sum[:]))
	}
	// Every table's text, column by column.
	var text strings.Builder
	rows, err := h.st.DB().QueryContext(ctx, `SELECT name FROM sqlite_master WHERE type = 'table'`)
	if err != nil {
		t.Fatal(err)
	}
	var tables []string
	for rows.Next() {
		var n string
		rows.Scan(&n)
		tables = append(tables, n)
	}
	rows.Close()
	for _, want := range []string{"share_rooms", "share_links"} {
		if !strings.Contains(strings.Join(tables, " "), want) {
			t.Fatalf("no table %s in %v", want, tables)
		}
	}
	for _, tbl := range tables {
		rows, err := h.st.DB().QueryContext(ctx, `SELECT * FROM `+tbl)
		if err != nil {
			t.Fatal(err)
		}
		cols, _ := rows.Columns()
		for rows.Next() {
			vals := make([]any, len(cols))
			ptrs := make([]any, len(cols))
			for i := range vals {
				ptrs[i] = &vals[i]
			}
			if err := rows.Scan(ptrs...); err != nil {
				t.Fatal(err)
			}
			for i, v := range vals {
				fmt.Fprintf(&text, "%s.%s=%s\n", tbl, cols[i], v)
			}
		}
		rows.Close()
	}
	dump := text.String()
	for _, n := range needles {
		if strings.Contains(dump, n) {
			t.Fatalf("the database holds a form of a link secret (%q)", n)
		}
	}
	// What it does hold is the hashes.
	for _, hsh := range hashes {
		if !strings.Contains(dump, "share_links.hash="+hsh) {
			t.Errorf("hash %s not stored", hsh)
		}
	}
	// And the files on disk (database and WAL) have no secret either.
	h.close()
	files, _ := filepath.Glob(filepath.Join(dir, "state.db*"))
	for _, f := range files {
		b, err := os.ReadFile(f)
		if err != nil {
			t.Fatal(err)
		}
		for _, n := range needles {
			if bytes.Contains(b, []byte(n)) {
				t.Fatalf("%s holds a form of a link secret (%q)", filepath.Base(f), n)
			}
		}
		for _, l := range all {
			raw, _ := base64.RawURLEncoding.DecodeString(secretOf(t, l))
			if bytes.Contains(b, raw) {
				t.Fatalf("%s holds a raw link secret", filepath.Base(f))
			}
		}
	}
}

func TestBaseURL(t *testing.T) {
	for _, c := range []struct{ in, want string }{
		{"http://laptop.lan:8787", "http://laptop.lan:8787"},
		{"https://pb.example.com/", "https://pb.example.com"},
		{"http://[fd00::1]:9000", "http://[fd00::1]:9000"},
		{"ftp://x", ""},
		{"laptop.lan:8787", ""},
		{"http://", ""},
		{"http://h/sub", ""},
		{"http://h/?q=1", ""},
		{"http://h/#k=x", ""},
		{"http://u:p@h", ""},
	} {
		got, err := share.CheckBaseURL(c.in)
		if got != c.want || (err == nil) != (c.want != "") {
			t.Errorf("CheckBaseURL(%q) = %q, %v; want %q", c.in, got, err, c.want)
		}
	}
	// A 0.0.0.0 listener with a base URL: links say the base.
	f := newFixture(t, script(), func(c *share.Config) {
		c.Listen = "0.0.0.0:0"
		c.BaseURL = "http://planbridge.invalid:1/"
	})
	l := f.share(share.View)[share.View]
	if !strings.HasPrefix(l.URL, "http://planbridge.invalid:1/s/") || strings.Contains(l.URL, "0.0.0.0") {
		t.Fatalf("link %s", l.URL)
	}
	if a := f.srv.Addr(); a != "http://planbridge.invalid:1" {
		t.Fatalf("Addr %q", a)
	}
}

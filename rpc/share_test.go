package rpc

import (
	"context"
	"io"
	"net/http"
	"strings"
	"testing"
	"time"

	"planbridge/internal/session"
	"planbridge/internal/share"
	"planbridge/internal/store"
)

func TestShareMethods(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	st, err := store.Open(ctx, t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	defer st.Close()
	mgr := session.NewManager(session.Config{Store: st})
	defer mgr.Close()
	sh := share.New(share.Config{Manager: mgr})
	defer sh.Close(ctx)
	sess, err := mgr.Create(ctx, t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	inR, inW := io.Pipe()
	outR, outW := io.Pipe()
	go Serve(ctx, inR, outW, Options{Manager: mgr, Share: sh})
	c := NewClient(ctx, outR, inW)
	defer c.Close()

	var started struct{ Links []share.Link }
	if err := c.Call(ctx, "share/start", map[string]any{"session": sess.ID(), "tiers": []string{"view", "owner"}, "ttl_seconds": 600}, &started); err != nil {
		t.Fatal(err)
	}
	if len(started.Links) != 2 || started.Links[0].Tier != share.View || started.Links[1].Tier != share.Owner ||
		!strings.Contains(started.Links[0].URL, "#k=") || time.Until(started.Links[0].ExpiresAt) > 10*time.Minute {
		t.Fatalf("share/start: %+v", started)
	}
	key := strings.SplitN(started.Links[1].URL, "#k=", 2)[1]
	stateURL := strings.SplitN(started.Links[1].URL, "#", 2)[0] + "/state"
	get := func() int {
		req, _ := http.NewRequest("GET", stateURL, nil)
		req.Header.Set(share.KeyHeader, key)
		res, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		res.Body.Close()
		return res.StatusCode
	}
	if s := get(); s != 200 {
		t.Fatalf("owner link state: %d", s)
	}
	var links struct{ Links []share.Link }
	if err := c.Call(ctx, "share/links", map[string]any{"session": sess.ID()}, &links); err != nil || len(links.Links) != 2 || links.Links[0].URL != "" {
		t.Fatalf("share/links: %+v %v", links, err)
	}
	for _, bad := range []map[string]any{
		{"session": sess.ID(), "tiers": []string{"admin"}},
		{"session": sess.ID(), "ttl_seconds": 90000},
		{"session": "s-missing"},
	} {
		if err := c.Call(ctx, "share/start", bad, nil); err == nil {
			t.Errorf("share/start %v succeeded", bad)
		}
	}
	var stopped struct{ Stopped bool }
	if err := c.Call(ctx, "share/stop", map[string]any{"session": sess.ID()}, &stopped); err != nil || !stopped.Stopped {
		t.Fatalf("share/stop: %+v %v", stopped, err)
	}
	if s := get(); s != http.StatusGone {
		t.Fatalf("owner link after share/stop: %d", s)
	}
	if err := c.Call(ctx, "share/links", map[string]any{"session": sess.ID()}, &links); err != nil || len(links.Links) != 0 {
		t.Fatalf("share/links after stop: %+v %v", links, err)
	}
}

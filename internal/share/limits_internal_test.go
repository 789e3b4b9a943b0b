package share

import (
	"io"
	"net"
	"testing"
	"time"
)

func TestHostAllow(t *testing.T) {
	h := newHostAllow("192.168.7.9:8787", "https://Laptop.LAN:8443")
	for host, want := range map[string]bool{
		"127.0.0.1:8787": true, "127.9.9.9": true, "[::1]:1": true, "localhost": true, "LocalHost.:80": true,
		"192.168.7.9:8787": true, "laptop.lan:8443": true, "laptop.lan.": true,
		"evil.example": false, "192.168.7.10:8787": false, "laptop.lan.evil.example": false,
		"localhost.evil.example": false, "": false, "0.0.0.0:8787": false,
	} {
		if got := h.ok(host); got != want {
			t.Errorf("Host %q allowed=%v, want %v", host, got, want)
		}
	}
	// A wildcard listener adds no address of its own.
	if newHostAllow("0.0.0.0:8787", "").ok("10.0.0.5:8787") {
		t.Error("a wildcard listener allowed a LAN address without a base URL")
	}
}

// Connections over the per-address cap are closed at once; closing the
// admitted ones frees their slots.
func TestLimitListener(t *testing.T) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	l := newLimitListener(ln, 100, 3)
	defer l.Close()
	accepted := make(chan net.Conn, 16)
	go func() {
		for {
			c, err := l.Accept()
			if err != nil {
				close(accepted)
				return
			}
			accepted <- c
		}
	}()
	var clients []net.Conn
	for range 5 {
		c, err := net.Dial("tcp", ln.Addr().String())
		if err != nil {
			t.Fatal(err)
		}
		clients = append(clients, c)
	}
	var server []net.Conn
	for range 3 {
		server = append(server, <-accepted)
	}
	// Two of the five were closed by the listener: they read EOF.
	eof := make(chan bool, len(clients))
	for _, c := range clients {
		go func() {
			c.SetReadDeadline(time.Now().Add(2 * time.Second))
			_, err := c.Read(make([]byte, 1))
			eof <- err == io.EOF
		}()
	}
	closed := 0
	for range clients {
		if <-eof {
			closed++
		}
	}
	if closed != 2 || l.open() != 3 {
		t.Fatalf("closed %d over the cap (want 2), open %d (want 3)", closed, l.open())
	}
	for _, c := range server {
		c.Close()
		c.Close() // a second close releases nothing more
	}
	if l.open() != 0 {
		t.Fatalf("open %d after closing", l.open())
	}
	c, err := net.Dial("tcp", ln.Addr().String())
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	(<-accepted).Close()
}

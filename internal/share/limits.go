package share

import (
	"net"
	"net/http"
	"net/url"
	"strings"
	"sync"
	"time"
)

// Defaults for the bounds in [Config].
const (
	DefaultReadHeaderTimeout = 10 * time.Second
	DefaultReadTimeout       = 20 * time.Second // a whole request, body included
	DefaultWriteTimeout      = 30 * time.Second // a response; each SSE write separately
	DefaultIdleTimeout       = 60 * time.Second // a keep-alive connection between requests
	DefaultMaxConns          = 256
	DefaultMaxConnsPerAddr   = 64
	DefaultMaxStreamsPerLink = 8
	// MaxHeaderBytes bounds a request's header block.
	MaxHeaderBytes = 16 << 10
)

// limits is the resolved set of server bounds.
type limits struct {
	readHeader, read, write, idle time.Duration
	conns, connsPerAddr, streams  int
}

func (c Config) limits() limits {
	l := limits{c.ReadHeaderTimeout, c.ReadTimeout, c.WriteTimeout, c.IdleTimeout, c.MaxConns, c.MaxConnsPerAddr, c.MaxStreamsPerLink}
	def := func(d *time.Duration, v time.Duration) {
		if *d <= 0 {
			*d = v
		}
	}
	defN := func(n *int, v int) {
		if *n <= 0 {
			*n = v
		}
	}
	def(&l.readHeader, DefaultReadHeaderTimeout)
	def(&l.read, DefaultReadTimeout)
	def(&l.write, DefaultWriteTimeout)
	def(&l.idle, DefaultIdleTimeout)
	defN(&l.conns, DefaultMaxConns)
	defN(&l.connsPerAddr, DefaultMaxConnsPerAddr)
	defN(&l.streams, DefaultMaxStreamsPerLink)
	return l
}

// limitListener caps open connections in total and per remote address: a
// connection over either cap is closed as soon as it is accepted, so
// sockets held open by one peer cannot exhaust the process's descriptors.
type limitListener struct {
	net.Listener
	max, perAddr int

	mu     sync.Mutex // guards total, byAddr
	total  int
	byAddr map[string]int
}

func newLimitListener(ln net.Listener, max, perAddr int) *limitListener {
	return &limitListener{Listener: ln, max: max, perAddr: perAddr, byAddr: map[string]int{}}
}

func (l *limitListener) Accept() (net.Conn, error) {
	for {
		c, err := l.Listener.Accept()
		if err != nil {
			return nil, err
		}
		addr := remoteHost(c.RemoteAddr())
		l.mu.Lock()
		if l.total >= l.max || l.byAddr[addr] >= l.perAddr {
			l.mu.Unlock()
			c.Close()
			continue
		}
		l.total++
		l.byAddr[addr]++
		l.mu.Unlock()
		return &limitedConn{Conn: c, release: func() { l.release(addr) }}, nil
	}
}

func (l *limitListener) release(addr string) {
	l.mu.Lock()
	l.total--
	if l.byAddr[addr]--; l.byAddr[addr] <= 0 {
		delete(l.byAddr, addr)
	}
	l.mu.Unlock()
}

// open reports the connections currently counted (tests).
func (l *limitListener) open() int {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.total
}

func remoteHost(a net.Addr) string {
	if h, _, err := net.SplitHostPort(a.String()); err == nil {
		return h
	}
	return a.String()
}

type limitedConn struct {
	net.Conn
	once    sync.Once
	release func()
}

func (c *limitedConn) Close() error {
	err := c.Conn.Close()
	c.once.Do(c.release)
	return err
}

// hostAllow is the Host header allowlist: loopback names and addresses,
// the listener's own address when it is a specific one, and the host of
// the configured base URL. Anything else — a DNS name rebound to this
// machine above all — is answered 421 before any handler runs.
type hostAllow struct {
	names map[string]bool
}

func newHostAllow(listenAddr, baseURL string) hostAllow {
	h := hostAllow{names: map[string]bool{"localhost": true}}
	if host, _, err := net.SplitHostPort(listenAddr); err == nil {
		if ip := net.ParseIP(host); ip != nil && !ip.IsUnspecified() {
			h.names[ip.String()] = true
		}
	}
	if u, err := url.Parse(baseURL); err == nil && u.Hostname() != "" {
		h.names[normHost(u.Hostname())] = true
	}
	return h
}

func normHost(h string) string {
	h = strings.TrimSuffix(strings.ToLower(h), ".")
	if ip := net.ParseIP(strings.Trim(h, "[]")); ip != nil {
		return ip.String()
	}
	return h
}

func (h hostAllow) ok(hostHeader string) bool {
	host := hostHeader
	if hh, _, err := net.SplitHostPort(hostHeader); err == nil {
		host = hh
	}
	host = normHost(host)
	if ip := net.ParseIP(host); ip != nil && ip.IsLoopback() {
		return true
	}
	return host != "" && h.names[host]
}

// CodeBadHost is the error code of a request with a foreign Host header.
const CodeBadHost = "bad_host"

func (h hostAllow) wrap(next http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if !h.ok(r.Host) {
			writeError(w, http.StatusMisdirectedRequest, CodeBadHost,
				"this server does not answer for host "+clipHost(r.Host)+"; open the link exactly as the host shared it")
			return
		}
		next.ServeHTTP(w, r)
	})
}

func clipHost(h string) string {
	if len(h) > 80 {
		h = h[:80] + "…"
	}
	return h
}

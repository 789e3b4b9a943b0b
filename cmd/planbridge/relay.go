package main

import (
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net"
	"net/http"
	"os"
	"os/signal"
	"syscall"
	"time"

	"planbridge/internal/share"
	"planbridge/relay"
)

// runRelay serves a content-blind share relay (package relay) until
// SIGINT or SIGTERM.
func runRelay(args []string, stdin io.Reader, stdout, stderr io.Writer) int {
	fs := newFlags("relay", stderr)
	listen := fs.String("listen", "127.0.0.1:8790", "address to listen on (e.g. 0.0.0.0:443 with --tls-cert/--tls-key, or behind a TLS proxy)")
	cert := fs.String("tls-cert", "", "TLS certificate file (PEM); with --tls-key the relay serves https")
	key := fs.String("tls-key", "", "TLS private key file (PEM)")
	logFile := fs.String("log", os.Getenv("PLANBRIDGE_LOG"), "log file (default stderr)")
	debug := fs.Bool("debug-dump", false, "serve GET /debug/dump with every byte the relay holds (for tests; never in production)")
	pos, code, ok := parseFlags(fs, args, false, stdout, stderr)
	if !ok {
		return code
	}
	if len(pos) > 0 {
		return usageError(fs, stderr, fmt.Sprintf("unexpected argument %q (relay takes flags only)", pos[0]))
	}
	if (*cert == "") != (*key == "") {
		return usageError(fs, stderr, "--tls-cert and --tls-key go together")
	}
	lg, closeLog, err := openLogger(*logFile, stderr)
	if err != nil {
		fmt.Fprintf(stderr, "planbridge: %v\n", err)
		return 1
	}
	defer closeLog()
	ln, err := net.Listen("tcp", *listen)
	if err != nil {
		fmt.Fprintf(stderr, "planbridge relay: %v\n", err)
		return 1
	}
	rl := relay.New(relay.Config{Page: share.RelayPage(), Debug: *debug, Logger: lg})
	defer rl.Close()
	srv := &http.Server{Handler: rl, ReadHeaderTimeout: 10 * time.Second, IdleTimeout: 2 * time.Minute, MaxHeaderBytes: 16 << 10,
		ErrorLog: slog.NewLogLogger(lg.Handler(), slog.LevelWarn)}
	scheme := "http"
	if *cert != "" {
		scheme = "https"
	}
	fmt.Fprintf(stderr, "planbridge relay listening on %s://%s\n", scheme, ln.Addr())
	done := make(chan error, 1)
	go func() {
		if *cert != "" {
			done <- srv.ServeTLS(ln, *cert, *key)
		} else {
			done <- srv.Serve(ln)
		}
	}()
	sig := make(chan os.Signal, 1)
	signal.Notify(sig, os.Interrupt, syscall.SIGTERM)
	select {
	case <-sig:
	case err := <-done:
		if !errors.Is(err, http.ErrServerClosed) {
			fmt.Fprintf(stderr, "planbridge relay: %v\n", err)
			return 1
		}
	}
	rl.Close()
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Second)
	defer cancel()
	if err := srv.Shutdown(ctx); err != nil {
		srv.Close()
	}
	return 0
}

package share

import (
	"bytes"
	"context"
	"crypto/sha256"
	"embed"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"path/filepath"
	"strconv"
	"strings"
	"time"

	"planbridge/handoff"
	"planbridge/internal/session"
	"planbridge/proposal"
)

//go:embed assets/page.html assets/app.js assets/app.css assets/relay.js
var assets embed.FS

// contentSecurityPolicy allows only the page's own script, style and
// fetches: no inline code, no framing, no forms, no external anything.
const contentSecurityPolicy = "default-src 'none'; script-src 'self'; style-src 'self'; connect-src 'self'; " +
	"img-src 'self'; frame-ancestors 'none'; base-uri 'none'; form-action 'none'"

// maxBody bounds an action's JSON body: room for a prompt of the
// session's largest size ([session.MaxPromptBytes]), JSON-escaped.
const maxBody = 2*session.MaxPromptBytes + 4<<10

// pingEvery keeps idle streams alive and detects gone pages.
const pingEvery = 15 * time.Second

func (s *Server) handler() http.Handler {
	mux := http.NewServeMux()
	mux.HandleFunc("GET /s/{room}", s.page)
	mux.HandleFunc("GET /assets/app.js", asset("assets/app.js", "text/javascript; charset=utf-8"))
	mux.HandleFunc("GET /assets/app.css", asset("assets/app.css", "text/css; charset=utf-8"))
	mux.HandleFunc("GET /favicon.ico", func(w http.ResponseWriter, r *http.Request) { w.WriteHeader(http.StatusNoContent) })
	mux.HandleFunc("GET /s/{room}/state", s.authed(View, s.state))
	mux.HandleFunc("GET /s/{room}/events", s.authed(View, s.events))
	mux.HandleFunc("POST /s/{room}/feedback", s.authed(Full, s.feedback))
	mux.HandleFunc("POST /s/{room}/prompt", s.authed(Full, s.prompt))
	mux.HandleFunc("POST /s/{room}/accept", s.authed(Full, s.accept))
	mux.HandleFunc("POST /s/{room}/park", s.authed(Owner, s.park))
	return securityHeaders(mux)
}

func securityHeaders(h http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		hd := w.Header()
		hd.Set("Content-Security-Policy", contentSecurityPolicy)
		hd.Set("X-Content-Type-Options", "nosniff")
		hd.Set("Referrer-Policy", "no-referrer")
		hd.Set("X-Frame-Options", "DENY")
		hd.Set("Cross-Origin-Opener-Policy", "same-origin")
		hd.Set("Cross-Origin-Resource-Policy", "same-origin")
		hd.Set("Cache-Control", "no-store")
		h.ServeHTTP(w, r)
	})
}

func asset(name, ctype string) http.HandlerFunc {
	return func(w http.ResponseWriter, r *http.Request) {
		b, err := assets.ReadFile(name)
		if err != nil {
			http.NotFound(w, r)
			return
		}
		w.Header().Set("Content-Type", ctype)
		w.Write(b)
	}
}

// page serves the HTML shell for a live or ended room. It carries no data:
// everything comes from the authenticated endpoints.
func (s *Server) page(w http.ResponseWriter, r *http.Request) {
	if _, _, ok := s.lookup(r.PathValue("room")); !ok {
		http.NotFound(w, r)
		return
	}
	asset("assets/page.html", "text/html; charset=utf-8")(w, r)
}

// guest is an authenticated request's access.
type guest struct {
	link    link
	room    *room
	sess    *session.Session
	tier    Tier
	expires time.Time
}

// authed resolves the room and the key header, refuses tiers below min
// (403), and calls h. A key in the query string is never consulted.
func (s *Server) authed(min Tier, h func(http.ResponseWriter, *http.Request, guest)) http.HandlerFunc {
	return func(w http.ResponseWriter, r *http.Request) {
		rm, why, known := s.lookup(r.PathValue("room"))
		switch {
		case !known:
			writeError(w, http.StatusNotFound, "not_found", "no such share")
			return
		case rm == nil:
			// A room that ended by a Worktree handoff shows a holder of
			// one of its links the way to the fork's room.
			body := map[string]any{"error": why.why.Message, "code": "ended", "ended": why.why}
			if open := s.continuation(why, r.Header.Get(KeyHeader)); open != nil {
				body["open"] = open
			}
			writeJSON(w, http.StatusGone, body)
			return
		}
		l, res := rm.auth(r.Header.Get(KeyHeader), s.cfg.Now())
		switch res {
		case authBad:
			writeError(w, http.StatusUnauthorized, "unauthorized", "this link is not valid")
			return
		case authExpired:
			writeJSON(w, http.StatusGone, map[string]any{"error": "this link has expired; ask the host for a new one", "code": "expired",
				"ended": ending{Reason: "expired", Message: "This link has expired; ask the host for a new one."}})
			return
		}
		if l.tier < min {
			writeError(w, http.StatusForbidden, "forbidden", fmt.Sprintf("a %s link cannot do this", l.tier))
			return
		}
		sess, err := s.cfg.Manager.Get(r.Context(), rm.session)
		if err != nil {
			s.fail(w, err)
			return
		}
		h(w, r, guest{link: l, room: rm, sess: sess, tier: l.tier, expires: l.expires})
	}
}

// State is the page's snapshot: GET /s/ROOM/state.
type State struct {
	Tier      Tier          `json:"tier"`
	ExpiresAt time.Time     `json:"expires_at"`
	Session   GuestSession  `json:"session"`
	Approval  ApprovalState `json:"approval"`
	Actions   Actions       `json:"actions"`
}

// GuestSession is [session.Info] as a page sees it: the repository's
// name, never the absolute path of the host's checkout.
type GuestSession struct {
	session.Info
	Workspace  string `json:"workspace"` // the repository's name (shadows Info's path)
	Repository string `json:"repository"`
}

func guestSession(in session.Info) GuestSession {
	name := repoName(in.Workspace)
	return GuestSession{Info: in, Workspace: name, Repository: name}
}

func repoName(ws string) string {
	if ws == "" {
		return ""
	}
	return filepath.Base(ws)
}

// hidePaths replaces the host's absolute workspace path in an event's
// JSON with the repository's name, wherever it occurs (a fork's directory,
// a tool's output).
func hidePaths(data []byte, ws string) []byte {
	if ws == "" || ws == "/" {
		return data
	}
	b, _ := json.Marshal(ws)
	esc := b[1 : len(b)-1]
	if !bytes.Contains(data, esc) {
		return data
	}
	return bytes.ReplaceAll(data, esc, []byte(repoName(ws)))
}

// ApprovalState is the approval card as the page shows it: the proposal as
// safe HTML ([proposal.RenderHTML]) and every setting of the selection.
type ApprovalState struct {
	Pending   bool              `json:"pending"`
	Attempt   string            `json:"attempt,omitempty"`
	Hidden    bool              `json:"hidden"`
	Title     string            `json:"title"`
	HTML      string            `json:"html"`
	Hash      string            `json:"hash"`
	Path      string            `json:"path"`
	Edited    bool              `json:"edited"`
	Selection handoff.Selection `json:"selection"`
	// Settings fingerprints Selection; an accept carrying it is refused
	// (409) if the host changed a setting since the page loaded.
	Settings string   `json:"settings"`
	Blockers []string `json:"blockers"`
	Notice   string   `json:"notice,omitempty"`
	// Size is the rendered proposal + settings in bytes; OverBudget is set
	// when it exceeds the frame budget (accept in Emacs instead).
	Size       int  `json:"size"`
	Budget     int  `json:"budget"`
	OverBudget bool `json:"over_budget"`
	// Diff is what changed from the previous version of the plan to the
	// one shown (absent for a first version): unified diff text, which the
	// page renders line by line as text, never as markup.
	Diff *VersionDiff `json:"diff,omitempty"`
}

// VersionDiff is the diff between two plan versions as the page shows it.
// Text is cut at [maxDiffBytes] (Clipped then says so); it does not count
// toward Size, which is what is accepted.
type VersionDiff struct {
	From    int    `json:"from"`
	To      int    `json:"to"`
	Text    string `json:"text"`
	Clipped bool   `json:"clipped,omitempty"`
}

// maxDiffBytes bounds the version diff a state carries.
const maxDiffBytes = 24 << 10

// versionDiff is the diff from the previous plan version to the one
// shown, cut at [maxDiffBytes]; nil for a first version.
func versionDiff(sess *session.Session) *VersionDiff {
	d, err := sess.DiffVersions(0, 0)
	if err != nil {
		return nil
	}
	out := &VersionDiff{From: d.From, To: d.To, Text: d.Diff}
	if len(d.Diff) > maxDiffBytes {
		cut := strings.LastIndexByte(d.Diff[:maxDiffBytes], '\n') + 1
		out.Text, out.Clipped = d.Diff[:cut], true
	}
	return out
}

// Actions says what this link may do right now; Reason explains a missing
// Accept.
type Actions struct {
	Feedback       bool `json:"feedback"`
	Prompt         bool `json:"prompt"`
	AcceptHere     bool `json:"accept_here"`
	AcceptWorktree bool `json:"accept_worktree"`
	// Park: approve and park with the host's settings, starting nothing
	// (owner links only).
	Park   bool   `json:"park"`
	Reason string `json:"reason,omitempty"`
}

func (s *Server) approvalState(sess *session.Session) ApprovalState {
	v := sess.Approval()
	sel, _ := json.Marshal(v.Selection)
	sum := sha256.Sum256(sel)
	a := ApprovalState{Pending: v.Pending, Attempt: v.Attempt, Hidden: v.Hidden, Title: v.Title, Hash: v.Hash,
		Path: v.Path, Edited: v.Edited, Selection: v.Selection, Settings: hex.EncodeToString(sum[:16]),
		Blockers: v.Blockers, Notice: v.Notice, Budget: s.cfg.FrameBudget}
	if v.Body != "" {
		a.HTML = proposal.RenderHTML(v.Body)
	}
	a.Size = len(a.HTML) + len(sel)
	// A clipped body would be accepted unseen: that is over budget too.
	a.OverBudget = a.Size > a.Budget || len([]rune(v.Body)) > proposal.MaxBodyChars
	return a
}

func actionsFor(t Tier, a ApprovalState) Actions {
	act := Actions{Prompt: t >= Full, Feedback: t >= Full && a.Pending}
	if !a.Pending || t < Full {
		return act
	}
	switch {
	case a.OverBudget:
		act.Reason = "The proposal and its settings are larger than this page can show in full: review and accept in Emacs. Feedback stays available."
	case a.Selection.Location == handoff.Worktree && t < Owner:
		act.Reason = "The host chose Worktree: only an owner link can accept it."
	case t >= Owner && a.Selection.Location == handoff.Worktree:
		act.AcceptWorktree, act.Park = true, true
	case t >= Owner:
		act.AcceptHere, act.Park = true, true
	default:
		act.AcceptHere = true
	}
	return act
}

func (s *Server) state(w http.ResponseWriter, r *http.Request, g guest) {
	a := s.approvalState(g.sess)
	if a.HTML != "" { // a body is shown
		a.Diff = versionDiff(g.sess) // only the page shows it: accept and park do not read it
	}
	writeJSON(w, http.StatusOK, State{Tier: g.tier, ExpiresAt: g.expires, Session: guestSession(g.sess.Info()), Approval: a, Actions: actionsFor(g.tier, a)})
}

// events streams the session's event log as Server-Sent Events: persisted
// events after ?since= (or Last-Event-ID, whichever is later), then live
// ones, each with id = seq. Control frames "open" and "ended" carry no id.
func (s *Server) events(w http.ResponseWriter, r *http.Request, g guest) {
	since, _ := strconv.ParseInt(r.URL.Query().Get("since"), 10, 64)
	if id, err := strconv.ParseInt(r.Header.Get("Last-Event-ID"), 10, 64); err == nil && id > since {
		since = id
	}
	fl, ok := w.(http.Flusher)
	if !ok {
		writeError(w, http.StatusInternalServerError, "internal", "streaming unsupported")
		return
	}
	// Subscribe before reading the log so nothing falls between the two;
	// duplicates are dropped by seq.
	st, full := g.room.subscribe(g.link, s.cfg.limits().streams)
	if full {
		writeError(w, http.StatusTooManyRequests, "too_many_streams",
			fmt.Sprintf("this link already has %d live pages open; close one and reload", s.cfg.limits().streams))
		return
	}
	if st == nil {
		writeError(w, http.StatusGone, "ended", "this share has ended")
		return
	}
	// A stream lives as long as its link: it is exempt from the request
	// and response deadlines, and each write gets its own instead, so a
	// page that stops reading is cut rather than held.
	rc := http.NewResponseController(w)
	rc.SetReadDeadline(time.Time{}) // net/http does too once the request is read; said here, not relied on
	writeTimeout := s.cfg.limits().write
	// arm gives the writes that follow their own deadline; it runs before
	// every write, since an idle stream outlives the previous one.
	arm := func() { rc.SetWriteDeadline(time.Now().Add(writeTimeout)) }
	arm()
	flush := func() { fl.Flush() }
	defer g.room.unsubscribe(st)
	past, err := g.sess.Events(r.Context(), since)
	if err != nil {
		s.fail(w, err)
		return
	}
	h := w.Header()
	h.Set("Content-Type", "text/event-stream")
	h.Set("X-Accel-Buffering", "no")
	w.WriteHeader(http.StatusOK)
	last := since
	ws := g.sess.Info().Workspace
	send := func(ev session.Event) {
		if ev.Seq <= last {
			return
		}
		last = ev.Seq
		ev.Data = hidePaths(ev.Data, ws)
		b, _ := json.Marshal(ev)
		arm()
		fmt.Fprintf(w, "id: %d\ndata: %s\n\n", ev.Seq, b)
	}
	for _, ev := range past {
		send(ev)
	}
	arm()
	fmt.Fprint(w, ": live\n\n")
	flush()
	expiry := time.NewTimer(g.expires.Sub(s.cfg.Now()))
	defer expiry.Stop()
	ping := time.NewTicker(pingEvery)
	defer ping.Stop()
	control := func(name string, v any) {
		b, _ := json.Marshal(v)
		arm()
		fmt.Fprintf(w, "event: %s\ndata: %s\n\n", name, b)
		flush()
	}
	for {
		select {
		case ev := <-st.events:
			send(ev)
			flush()
		case <-ping.C:
			arm()
			fmt.Fprint(w, ": ping\n\n")
			flush()
		case <-st.lag:
			return // the page reconnects and replays from its last seq
		case <-st.end:
			if st.open != nil {
				control("open", st.open)
			}
			control("ended", st.final)
			return
		case <-expiry.C:
			control("ended", ending{Reason: "expired", Message: "This link has expired; ask the host for a new one."})
			return
		case <-r.Context().Done():
			return
		}
	}
}

// feedbackRequest is POST /s/ROOM/feedback.
type feedbackRequest struct {
	Attempt string `json:"attempt"`
	Text    string `json:"text"`
}

func (s *Server) feedback(w http.ResponseWriter, r *http.Request, g guest) {
	var req feedbackRequest
	if !decode(w, r, &req) {
		return
	}
	if err := g.sess.Feedback(r.Context(), req.Attempt, req.Text, nil); err != nil {
		s.fail(w, err)
		return
	}
	writeJSON(w, http.StatusOK, map[string]bool{"ok": true})
}

// promptRequest is POST /s/ROOM/prompt.
type promptRequest struct {
	Text string `json:"text"`
}

func (s *Server) prompt(w http.ResponseWriter, r *http.Request, g guest) {
	var req promptRequest
	if !decode(w, r, &req) {
		return
	}
	res, err := g.sess.QueueGuest(req.Text)
	if err != nil {
		s.fail(w, err)
		return
	}
	writeJSON(w, http.StatusOK, res)
}

// acceptRequest is POST /s/ROOM/accept. Location and Settings, when
// present, are what the page showed; a mismatch with the host's current
// selection is refused so nobody accepts settings they did not see.
type acceptRequest struct {
	Attempt  string           `json:"attempt"`
	Branch   string           `json:"branch,omitempty"`
	Location handoff.Location `json:"location,omitempty"`
	Settings string           `json:"settings,omitempty"`
}

// accept accepts with the host's current selection. Here needs a full
// link; Worktree, or any branch, needs an owner link. The session checks
// the attempt id again under its lock: first decision wins.
func (s *Server) accept(w http.ResponseWriter, r *http.Request, g guest) {
	var req acceptRequest
	if !decode(w, r, &req) {
		return
	}
	a := s.approvalState(g.sess)
	worktreeSel := a.Selection.Location == handoff.Worktree
	switch {
	case (worktreeSel || req.Branch != "" || req.Location == handoff.Worktree) && g.tier < Owner:
		writeError(w, http.StatusForbidden, "forbidden", "accepting in a Worktree needs an owner link")
		return
	case !a.Pending || req.Attempt == "" || req.Attempt != a.Attempt:
		// The session checks again under its lock; this answers a card
		// that is already gone before the checks below can confuse.
		writeError(w, http.StatusConflict, session.CodeStaleAttempt, "this approval card is no longer current (stale or missing attempt id); nothing changed")
		return
	case req.Location != "" && req.Location != a.Selection.Location,
		req.Settings != "" && req.Settings != a.Settings:
		writeError(w, http.StatusConflict, "settings_changed", "the host changed the settings since this page loaded; review them and try again")
		return
	case a.OverBudget:
		writeError(w, http.StatusConflict, "frame_budget", "the proposal and settings are too large to review here: accept in Emacs")
		return
	case !worktreeSel && req.Branch != "":
		writeError(w, http.StatusBadRequest, "invalid_params", "a branch applies only to Worktree acceptance; the host chose Here")
		return
	}
	// The session re-checks the Location under its lock, with the attempt:
	// the host switching to Worktree meanwhile cannot slip past the tier.
	// It also validates the branch, with the checker Emacs's acceptance
	// meets (invalid_branch → 422).
	res, err := g.sess.AcceptExpecting(r.Context(), req.Attempt, req.Branch, a.Selection.Location)
	if err != nil {
		s.fail(w, err)
		return
	}
	writeJSON(w, http.StatusOK, res)
}

type parkRequest struct {
	Attempt  string `json:"attempt"`
	Settings string `json:"settings"`
}

// park approves and parks with the host's current selection (owner links
// only): archived and recorded, nothing started. The page must name the
// settings it showed; the session re-checks attempt and selection under
// its lock.
func (s *Server) park(w http.ResponseWriter, r *http.Request, g guest) {
	var req parkRequest
	if !decode(w, r, &req) {
		return
	}
	a := s.approvalState(g.sess)
	switch {
	case !a.Pending || req.Attempt == "" || req.Attempt != a.Attempt:
		writeError(w, http.StatusConflict, session.CodeStaleAttempt, "this approval card is no longer current (stale or missing attempt id); nothing changed")
		return
	case req.Settings == "" || req.Settings != a.Settings:
		writeError(w, http.StatusConflict, "settings_changed", "the host changed the settings since this page loaded; review them and try again")
		return
	case a.OverBudget:
		writeError(w, http.StatusConflict, "frame_budget", "the proposal and settings are too large to review here: park it in Emacs")
		return
	}
	sel := a.Selection
	res, err := g.sess.ParkExpecting(r.Context(), req.Attempt, &sel)
	if err != nil {
		s.fail(w, err)
		return
	}
	writeJSON(w, http.StatusOK, map[string]any{"parked": true, "id": res.ID, "title": res.Title, "message": "Approved and parked: nothing runs until it is started."})
}

// decode reads a JSON body strictly; on failure it answers 400.
func decode(w http.ResponseWriter, r *http.Request, v any) bool {
	dec := json.NewDecoder(http.MaxBytesReader(w, r.Body, maxBody))
	dec.DisallowUnknownFields()
	if err := dec.Decode(v); err != nil {
		var tooBig *http.MaxBytesError
		if errors.As(err, &tooBig) {
			writeError(w, http.StatusRequestEntityTooLarge, "body_too_large", fmt.Sprintf("the request body is larger than %d bytes", maxBody))
			return false
		}
		writeError(w, http.StatusBadRequest, "invalid_params", "invalid JSON body: "+err.Error())
		return false
	}
	return true
}

// statusFor maps a session error code to an HTTP status.
func statusFor(code string) int {
	switch code {
	case session.CodeInvalidParams:
		return http.StatusBadRequest
	case session.CodeNotFound:
		return http.StatusNotFound
	case session.CodeInvalidSelect, session.CodeInvalidBranch:
		return http.StatusUnprocessableEntity
	case session.CodeUnavailable:
		return http.StatusNotImplemented
	case session.CodeQueueFull:
		return http.StatusTooManyRequests
	case session.CodePromptTooLarge:
		return http.StatusRequestEntityTooLarge
	}
	return http.StatusConflict // stale_attempt, busy, no_proposal, fork_blocked, …
}

// fail answers err: application errors with their code and message,
// anything else as 500 (logged; its text is not sent).
func (s *Server) fail(w http.ResponseWriter, err error) {
	var ae *session.Error
	if errors.As(err, &ae) {
		writeError(w, statusFor(ae.Code), ae.Code, ae.Message)
		return
	}
	if errors.Is(err, context.Canceled) {
		return
	}
	s.log.Error("share request failed", "err", err)
	writeError(w, http.StatusInternalServerError, "internal", "internal error; see the planbridge log")
}

func writeError(w http.ResponseWriter, status int, code, msg string) {
	writeJSON(w, status, map[string]string{"error": msg, "code": code})
}

func writeJSON(w http.ResponseWriter, status int, v any) {
	w.Header().Set("Content-Type", "application/json")
	w.WriteHeader(status)
	json.NewEncoder(w).Encode(v)
}

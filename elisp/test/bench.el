;;; bench.el --- Speed figures of planbridge in batch Emacs  -*- lexical-binding: t; -*-

;;; Commentary:

;; Usage (`make elisp-bench', which `make bench' runs after the Go
;; benchmarks, byte-compiles the package first):
;;
;;   PLANBRIDGE_PROGRAM=$PWD/bin/planbridge \
;;     emacs -Q --batch -L elisp -l elisp/test/bench.el
;;
;; Prints figures, not verdicts of a test: each line names what was
;; measured, the figure and the target of issue 17.  The machine's load
;; only adds to a time, so where a figure is measured several times the
;; fastest is printed, with the spread.
;;
;;  - render: 1 MiB of streamed text rendered into a session buffer.
;;    The backend groups the deltas it streams for 5 ms into one event,
;;    so a fast stream reaches Emacs in large notifications and a slow
;;    one is slow anyway; at most about 200 text notifications a second
;;    arrive.  Measured three ways: (1) 8-byte deltas, each its own
;;    notification, handed to `planbridge-handle-notification' as
;;    jsonrpc.el would (the cost per notification, garbage collection of
;;    the parsed notifications included); (2) framed bytes through
;;    jsonrpc.el's process filter, in 8-byte and in 4 KiB deltas (about
;;    5 ms of a 1 MB/s stream); (3) end to end: the real backend's
;;    script engine streams it (8-byte chunks, grouped by the backend)
;;    from the prompt to the end of the turn.  Target: at least 1 MB/s.
;;  - reopen: a stored session whose transcript holds 1 MiB, opened in a
;;    new buffer, from the `session/open' request to the rendered buffer,
;;    backend included; once for a transcript that is one streamed reply
;;    and once for 16 turns of 32 tool steps (text, tool calls and
;;    results: 1,585 events).  Target: under 0.5 s.
;;  - keystroke: a character typed in the composer (through the command
;;    loop, with the header line formatted as redisplay does), with a
;;    1 MiB transcript and with a 16 KiB one showing the same last lines;
;;    then the same in emacs -nw under tmux, each keystroke redisplayed,
;;    in Emacs's CPU time.  Target: a ratio close to 1.

;;; Code:

(require 'cl-lib)
(require 'planbridge)
(load (expand-file-name "planbridge-test.el" (file-name-directory load-file-name)) nil t)

(defvar planbridge-test--wire)
(declare-function planbridge-test--call-with-session "planbridge-test" (script fn))
(declare-function planbridge-test--type "planbridge-test" (text))
(declare-function planbridge-test--events "planbridge-test" (kind))

(defconst planbridge-bench--mib (* 1024 1024)
  "One MiB.")

(defconst planbridge-bench--file (or load-file-name buffer-file-name)
  "This file.")

(defun planbridge-bench--text (size)
  "Return SIZE characters of text in lines of 80."
  (let ((line (concat (make-string 79 ?x) "\n")))
    (substring (apply #'concat (make-list (1+ (/ size 80)) line)) 0 size)))

(defun planbridge-bench--report (what value unit target)
  "Print the figure VALUE in UNIT of WHAT, with its TARGET."
  (message "planbridge-bench: %-58s %10.3f %-5s (target %s)" what value unit target))

(defmacro planbridge-bench--time (&rest body)
  "Run BODY and return the seconds it took."
  (declare (indent 0))
  `(let ((start (float-time)))
     ,@body
     (- (float-time) start)))

(defun planbridge-bench-render ()
  "Measure rendering 1 MiB of 8-byte text deltas into a session buffer.
Each notification is made as the JSON parser would, inside the timed
loop, so the garbage collector sees the heap a live session has."
  (let* ((text (planbridge-bench--text planbridge-bench--mib))
         (planbridge--buffers (make-hash-table :test #'equal))
         (planbridge--connection nil)
         (n (/ (length text) 8)))
    (with-temp-buffer
      (planbridge-session-mode)
      (setq planbridge--session-id "s-bench")
      (puthash "s-bench" (current-buffer) planbridge--buffers)
      (planbridge--handle-event '(:seq 1 :kind "turn_start" :data (:turn 1)))
      (garbage-collect)
      (let* ((gc0 gc-elapsed)
             (secs (planbridge-bench--time
                    (dotimes (i n)
                      (planbridge-handle-notification
                       nil 'session/event
                       (list :session "s-bench" :seq (+ 2 i) :kind "text"
                             :data (list :delta (substring text (* i 8) (* (1+ i) 8)))))
                      ;; Timers run between notifications, as in a live session.
                      (when (zerop (% i 1000))
                        (accept-process-output nil 0)))
                    (planbridge--handle-event (list :seq (+ 2 n) :kind "turn_end" :data '(:turn 1)))))
             (gc (- gc-elapsed gc0)))
        (cl-assert (>= (- (marker-position planbridge--transcript-end) (point-min)) (* n 8)))
        (planbridge-bench--report "render 1 MiB, 8-byte deltas, a notification each (handler)"
                                  (/ (/ (* n 8) 1e6) secs) "MB/s"
                                  (format ">= 1 MB/s; %.1f µs a notification, %d%% GC"
                                          (/ (* 1e6 secs) n) (round (* 100 (/ gc secs)))))))))

(defun planbridge-bench--frames (size delta)
  "Return SIZE characters of text as framed `session/event' messages.
Each message carries DELTA characters, as the backend would send them
on its stdout: a Content-Length header and the JSON body."
  (let ((text (planbridge-bench--text size)))
    ;; Made in a buffer, not as a list of strings: the heap stays the
    ;; size of a live session's for the figures measured after it.
    (with-temp-buffer
      (dotimes (i (/ size delta))
        (let ((body (json-serialize
                     (list :jsonrpc "2.0" :method "session/event"
                           :params (list :session "s-bench" :seq (+ 2 i) :kind "text"
                                         :time "2025-01-01T00:00:00.000000000Z"
                                         :data (list :delta (substring text (* i delta) (* (1+ i) delta))))))))
          (insert "Content-Length: " (number-to-string (string-bytes body)) "\r\n\r\n" body)))
      (buffer-string))))

(defun planbridge-bench-render-wire (delta)
  "Measure 1 MiB of text deltas of DELTA characters through jsonrpc.el.
The framed bytes are handed to the connection's process filter in
pieces of `read-process-output-max', as Emacs reads them from the
backend's pipe: jsonrpc.el parses each message and dispatches it to
`planbridge-handle-notification', which renders it.  Return MB/s."
  (let* ((wire (planbridge-bench--frames planbridge-bench--mib delta))
         (n (/ planbridge-bench--mib delta))
         (chunk (or (bound-and-true-p read-process-output-max) 4096))
         (planbridge--buffers (make-hash-table :test #'equal))
         (planbridge--connection nil)
         (proc (make-pipe-process :name "planbridge-bench" :noquery t))
         (conn (make-instance 'planbridge-connection
                              :name "planbridge-bench"
                              :events-buffer-scrollback-size 0
                              :log-size 0
                              :notification-dispatcher #'planbridge--dispatch-notification
                              :request-dispatcher #'planbridge--dispatch-request
                              :process proc))
         (filter (process-filter proc)))
    (unwind-protect
        (with-temp-buffer
          (planbridge-session-mode)
          (setq planbridge--session-id "s-bench")
          (puthash "s-bench" (current-buffer) planbridge--buffers)
          (planbridge--handle-event '(:seq 1 :kind "turn_start" :data (:turn 1)))
          (garbage-collect)
          (let* ((gcs gc-elapsed)
                 (secs (planbridge-bench--time
                         (let ((pos 0) (len (length wire)) (reads 0))
                           (while (< pos len)
                             (funcall filter proc (substring wire pos (min len (+ pos chunk))))
                             (setq pos (+ pos chunk) reads (1+ reads))
                             ;; Timers run between reads, as in a live session.
                             (when (zerop (% reads 64))
                               (accept-process-output nil 0))))
                         (planbridge--handle-event (list :seq (+ 2 n) :kind "turn_end" :data '(:turn 1)))))
                 (gc (- gc-elapsed gcs)))
            (cl-assert (= planbridge--last-seq (+ 2 n)))
            (cl-assert (>= (- (marker-position planbridge--transcript-end) (point-min))
                           planbridge-bench--mib))
            (planbridge-bench--report
             (format "render 1 MiB through jsonrpc.el, %d-byte deltas" delta)
             (/ (/ planbridge-bench--mib 1e6) secs) "MB/s"
             (format ">= 1 MB/s; %.1f µs a message, %d%% GC" (/ (* 1e6 secs) n) (round (* 100 (/ gc secs)))))))
      (delete-process proc)
      (ignore conn))))

(defun planbridge-bench--wait (pred what timeout)
  "Wait until PRED holds, for at most TIMEOUT seconds, or signal WHAT."
  (let ((deadline (+ (float-time) timeout)))
    (while (and (not (funcall pred)) (< (float-time) deadline))
      (accept-process-output nil 0.01))
    (unless (funcall pred) (error "Timed out waiting for %s" what))))

(defun planbridge-bench-backend (size)
  "Measure SIZE characters streamed by the backend, then reopened."
  (let ((script (json-serialize (vector (list :text (planbridge-bench--text size))))))
    (planbridge-test--call-with-session
     script
     (lambda ()
       (let* ((planbridge-test--wire nil)
              (secs (planbridge-bench--time
                      (planbridge-test--type "stream it")
                      (planbridge-bench--wait
                       (lambda () (string-match-p "^─ turn 1 done"
                                                  (buffer-substring-no-properties
                                                   (max (point-min) (- (point-max) 200)) (point-max))))
                       "the turn" 600))))
         (planbridge-bench--report (format "render %d KiB end to end (backend, JSON-RPC, Emacs)" (/ size 1024))
                                   (/ (/ size 1e6) secs) "MB/s"
                                   (format ">= 1 MB/s; %d text notifications"
                                           (length (planbridge-test--events "text"))))
         (with-current-buffer (planbridge-bench--reopen-parts planbridge--session-id "one streamed reply")
           (planbridge-bench--keystrokes (current-buffer))))))))

(defconst planbridge-bench--repeats 5
  "How many times each reopen is measured.")

(defun planbridge-bench--spread (times)
  "Return TIMES, seconds, as \"min X, median Y, max Z\"."
  (let ((sorted (sort (copy-sequence times) #'<)))
    (format "min %.3f, median %.3f, max %.3f"
            (car sorted) (nth (/ (length sorted) 2) sorted) (car (last sorted)))))

(defun planbridge-bench--reopen-parts (id what)
  "Reopen session ID in a new buffer, several times; report WHAT it is.
Each reopen kills the session's buffer and opens it again, from the
request to the rendered buffer; the fastest counts (the machine's load
only adds to it), the spread is printed.  Then the two halves: the
backend's answer to `session/open' (with the JSON parse) and the
replay into a buffer.  Return the last buffer."
  (let ((reopens nil) (wires nil) (replays nil) (events 0) (buf nil))
    (dotimes (_ planbridge-bench--repeats)
      (when-let ((old (gethash id planbridge--buffers)))
        (kill-buffer old))
      (garbage-collect)
      (push (planbridge-bench--time
              (with-current-buffer (planbridge-open-session id)
                (planbridge-bench--wait (lambda () (not planbridge--opening)) "the reopen" 600)))
            reopens)
      (let* ((result nil)
             (wire (planbridge-bench--time
                     (setq result (jsonrpc-request planbridge--connection :session/open
                                                   (list :session id :coalesce_text t) :timeout 600))))
             (replay (with-temp-buffer
                       (planbridge-session-mode)
                       (setq planbridge--session-id "s-bench-replay")
                       (let ((planbridge--after-open-hook nil))
                         (planbridge-bench--time (planbridge--render-opened result))))))
        (setq events (length (plist-get result :events)))
        (push wire wires)
        (push replay replays)))
    (setq buf (gethash id planbridge--buffers))
    (let ((size (with-current-buffer buf
                  (- (marker-position planbridge--transcript-end) (point-min)))))
      (planbridge-bench--report (format "reopen %s (%d KiB shown)" what (/ size 1024))
                                (apply #'min reopens) "s"
                                (format "< 0.5 s; %s" (planbridge-bench--spread reopens))))
    (planbridge-bench--report (format "  of which session/open's answer, %d events (backend, JSON)" events)
                              (apply #'min wires) "s" (concat "reported; " (planbridge-bench--spread wires)))
    (planbridge-bench--report "  of which the replay into a buffer (Emacs)"
                              (apply #'min replays) "s" (concat "reported; " (planbridge-bench--spread replays)))
    buf))

(defun planbridge-bench-reopen-mixed (turns steps chars)
  "Measure reopening a session of TURNS turns of STEPS model steps each.
Each step streams CHARS characters of text and calls read_file, so the
transcript holds every kind of event a working session has: prompts,
text runs, tool calls and results, turn boundaries."
  (let* ((step (list :text (planbridge-bench--text chars)
                     :tool_calls (vector (list :name "read_file" :arguments '(:path "hello.txt")))))
         (last (list :text "Done.\n"))
         (script (json-serialize
                  (apply #'vconcat
                         (make-list turns (vconcat (make-list (1- steps) step) (list last)))))))
    (planbridge-test--call-with-session
     script
     (lambda ()
       (dotimes (i turns)
         (planbridge-test--type (format "turn %d" (1+ i)))
         (planbridge-bench--wait
          (lambda () (string-match-p (format "^─ turn %d done" (1+ i))
                                     (buffer-substring-no-properties
                                      (max (point-min) (- (point-max) 200)) (point-max))))
          (format "turn %d" (1+ i)) 600))
       (planbridge-bench--reopen-parts
        planbridge--session-id (format "%d turns of %d tool steps" turns steps))))))

(defun planbridge-bench--type-chars (buffer n)
  "Type N characters into the composer of BUFFER; return the seconds.
Each one goes through the command loop (`execute-kbd-macro': the
keymap, `self-insert-command', the command hooks), and then the
header line is formatted as redisplay formats it."
  (with-current-buffer buffer
    (goto-char (point-max))
    (planbridge-bench--time
      (dotimes (_ n)
        (execute-kbd-macro "a")
        (format-mode-line header-line-format)))))

(defconst planbridge-bench--short (* 16 1024)
  "Size of the short transcript keystrokes are compared with.")

(defun planbridge-bench--twin (big)
  "Return a session buffer like BIG with a short transcript.
Its state is BIG's, so the header line is the same, and its transcript
is the last `planbridge-bench--short' characters of BIG's, so a window
shows the same text: only the length of the transcript differs."
  (let ((vars '(planbridge--info planbridge--goal planbridge--todos
                planbridge--tracked-plan planbridge--approval planbridge--instance))
        (tail (with-current-buffer big
                (let ((end (marker-position planbridge--transcript-end)))
                  (buffer-substring (max (point-min) (- end planbridge-bench--short)) end)))))
    (with-current-buffer (generate-new-buffer "*planbridge bench short*")
      (planbridge-session-mode)
      (dolist (var vars)
        (set var (buffer-local-value var big)))
      (planbridge--with-transcript (insert tail))
      (current-buffer))))

(defun planbridge-bench--compare-typing (big type-fn where)
  "Compare typing in BIG and in its short twin with TYPE-FN, named WHERE.
TYPE-FN is called with a buffer and a count and returns seconds.  The
two are measured in alternation, in rounds, and the fastest round of
each counts: the machine's load falls on both alike."
  (let* ((n 50)
         (rounds 40)
         (empty (planbridge-bench--twin big))
         (small most-positive-fixnum)
         (large most-positive-fixnum)
         (size (with-current-buffer big (buffer-size))))
    (unwind-protect
        (dotimes (_ rounds)
          (setq small (min small (funcall type-fn empty n)))
          (setq large (min large (funcall type-fn big n))))
      (kill-buffer empty))
    (list (format "keystroke %s, %d KiB transcript" where (/ planbridge-bench--short 1024))
          (* 1e6 (/ small n)) "µs" "reported"
          (format "keystroke %s, %d KiB transcript" where (/ size 1024)) (* 1e6 (/ large n)) "µs" "reported"
          (format "keystroke ratio %s, long vs short" where) (/ large small) "x" "about 1")))

(defun planbridge-bench--report-all (figures)
  "Report FIGURES, a flat list of WHAT VALUE UNIT TARGET."
  (while figures
    (apply #'planbridge-bench--report (seq-take figures 4))
    (setq figures (nthcdr 4 figures))))

(defun planbridge-bench--keystrokes (big)
  "Compare typing in BIG, with its long transcript, and in a short one."
  (planbridge-bench--report-all
   (planbridge-bench--compare-typing big #'planbridge-bench--type-chars "in batch")))

;;;; Keystrokes in a terminal, with redisplay

(defun planbridge-bench--events (turns steps chars)
  "Return a stored log of TURNS turns of STEPS tool steps of CHARS each.
It has the shape `session/open' answers with, for rendering offline."
  (let ((seq 0) (events nil)
        (text (planbridge-bench--text chars)))
    (cl-flet ((add (kind data) (push (list :seq (cl-incf seq) :kind kind :data data) events)))
      (dotimes (turn turns)
        (add "user" (list :text (format "turn %d" (1+ turn))))
        (add "turn_start" (list :turn (1+ turn)))
        (dotimes (_ steps)
          (add "text" (list :delta text))
          (add "tool_call" (list :name "read_file" :arguments '(:path "hello.txt")))
          (add "tool_result" (list :name "read_file" :ok t :output "hello\n")))
        (add "turn_end" (list :turn (1+ turn)))))
    (list :session (list :id "s-bench" :title "bench" :busy :json-false :last_seq seq)
          :events (vconcat (nreverse events)))))

(defun planbridge-bench--type-displayed (buffer n)
  "Type N characters into BUFFER, shown in the selected window.
Each character is run by the command loop and redisplayed (`redisplay'
with FORCE) before the next.  Return the CPU seconds Emacs spent: the
terminal's own time (tmux reading the output) is not Emacs's latency,
and on a loaded machine it is mostly waiting."
  (switch-to-buffer buffer)
  (goto-char (point-max))
  (redisplay t)
  (let ((start (float-time (get-internal-run-time))))
    (dotimes (_ n)
      (execute-kbd-macro "a")
      (redisplay t))
    (- (float-time (get-internal-run-time)) start)))

(defun planbridge-bench-terminal-keystrokes (file)
  "In an interactive Emacs, compare typing with and without a 1 MiB transcript.
The figures are written to FILE, then Emacs exits."
  (let* ((planbridge--buffers (make-hash-table :test #'equal))
         (planbridge--after-open-hook nil)
         (big (generate-new-buffer "*planbridge bench big*"))
         (figures nil))
    (with-current-buffer big
      (planbridge-session-mode)
      (setq planbridge--session-id "s-bench")
      (planbridge--render-opened (planbridge-bench--events 16 32 2048)))
    (setq figures (planbridge-bench--compare-typing
                   big #'planbridge-bench--type-displayed "in a terminal, redisplayed"))
    (with-temp-file file
      (prin1 figures (current-buffer)))
    (kill-emacs 0)))

(defun planbridge-bench-terminal ()
  "Run `planbridge-bench-terminal-keystrokes' in emacs -nw under tmux.
A private tmux server (its own socket) runs the terminal; the figures
come back in a file."
  (let* ((dir (make-temp-file "planbridge-bench-" t))
         (sock (expand-file-name "tmux.sock" dir))
         (out (expand-file-name "figures.eld" dir))
         (lib (file-name-directory (locate-library "planbridge")))
         (bench planbridge-bench--file)
         (command (mapconcat
                   #'shell-quote-argument
                   (list (expand-file-name invocation-name invocation-directory)
                         "-nw" "-Q" "-L" lib "-l" bench
                         "--eval" (format "(planbridge-bench-terminal-keystrokes %S)" out))
                   " ")))
    (unwind-protect
        (progn
          (unless (zerop (call-process "tmux" nil nil nil "-S" sock "-f" "/dev/null"
                                       "new-session" "-d" "-x" "110" "-y" "32" command))
            (error "tmux did not start"))
          (condition-case err
              (planbridge-bench--wait (lambda () (file-exists-p out)) "the terminal's figures" 300)
            (error
             (error "%s; the terminal shows:\n%s" (error-message-string err)
                    (with-temp-buffer
                      (call-process "tmux" nil t nil "-S" sock "capture-pane" "-p")
                      (buffer-string)))))
          (sleep-for 0.2)
          (planbridge-bench--report-all
           (with-temp-buffer (insert-file-contents out) (read (current-buffer)))))
      (call-process "tmux" nil nil nil "-S" sock "kill-server")
      (delete-directory dir t))))

(defun planbridge-bench-batch ()
  "Run the benchmarks and print their figures."
  (planbridge-bench-render)
  (planbridge-bench-render-wire 8)
  (planbridge-bench-render-wire 4096)
  (planbridge-bench-backend (string-to-number (or (getenv "PLANBRIDGE_BENCH_SIZE") "1048576")))
  (planbridge-bench-reopen-mixed 16 32 2048)
  (planbridge-bench-terminal))

(when noninteractive
  (planbridge-bench-batch))

;;; bench.el ends here

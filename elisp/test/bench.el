;;; bench.el --- Speed figures of planbridge in batch Emacs  -*- lexical-binding: t; -*-

;;; Commentary:

;; Usage (`make bench' runs it after the Go benchmarks):
;;
;;   PLANBRIDGE_PROGRAM=$PWD/bin/planbridge \
;;     emacs -Q --batch -L elisp -l elisp/test/bench.el
;;
;; Prints figures, not verdicts of a test: each line names what was
;; measured, the figure and the target of issue 17.
;;
;;  - render: 1 MiB of streamed text, as `session/event' notifications
;;    of 8 bytes each (the script engine's chunk), rendered into a
;;    session buffer.  Target: at least 1 MB/s.
;;  - render end to end: the same text streamed by the real backend
;;    (script engine) through JSON-RPC into the buffer, from the prompt
;;    to the end of the turn.  Reported; the backend's share is in it.
;;  - reopen: a stored session whose transcript holds 1 MiB of text,
;;    opened in a new buffer (`session/open' and the replay).
;;    Target: under 0.5 s.
;;  - keystroke: a character typed in the composer, with the header
;;    line computed as redisplay does, next to a 1 MiB transcript and
;;    next to an empty one.  Target: a ratio close to 1.

;;; Code:

(require 'cl-lib)
(require 'planbridge)
(load (expand-file-name "planbridge-test.el" (file-name-directory load-file-name)) nil t)

(defconst planbridge-bench--mib (* 1024 1024)
  "One MiB.")

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
      (let ((secs (planbridge-bench--time
                    (dotimes (i n)
                      (planbridge-handle-notification
                       nil 'session/event
                       (list :session "s-bench" :seq (+ 2 i) :kind "text"
                             :data (list :delta (substring text (* i 8) (* (1+ i) 8)))))
                      ;; Timers run between notifications, as in a live session.
                      (when (zerop (% i 1000))
                        (accept-process-output nil 0)))
                    (planbridge--handle-event (list :seq (+ 2 n) :kind "turn_end" :data '(:turn 1))))))
        (cl-assert (>= (- (marker-position planbridge--transcript-end) (point-min)) (* n 8)))
        (planbridge-bench--report "render 1 MiB streamed in 8-byte deltas (Emacs side)"
                                  (/ (/ (* n 8) 1e6) secs) "MB/s" ">= 1 MB/s")))))

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
                                   (/ (/ size 1e6) secs) "MB/s" "reported")
         (let ((id planbridge--session-id))
           (kill-buffer (current-buffer))
           (with-current-buffer (planbridge-bench--reopen-parts id "one streamed reply")
             (planbridge-bench--keystrokes (current-buffer)))))))))

(defun planbridge-bench--reopen-parts (id what)
  "Reopen session ID in a new buffer; report the figures, named after WHAT.
Return the new buffer."
  (let* ((reopen (planbridge-bench--time
                   (with-current-buffer (planbridge-open-session id)
                     (planbridge-bench--wait (lambda () (not planbridge--opening)) "the reopen" 600))))
         (buf (gethash id planbridge--buffers))
         (size (with-current-buffer buf
                 (- (marker-position planbridge--transcript-end) (point-min)))))
    (planbridge-bench--report (format "reopen %s (%d KiB shown)" what (/ size 1024))
                              reopen "s" "< 0.5 s")
    ;; The two halves of it: the backend's answer, then the replay.
    (let* ((result nil)
           (wire (planbridge-bench--time
                   (setq result (jsonrpc-request planbridge--connection :session/open
                                                 (list :session id :coalesce_text t) :timeout 600))))
           (replay (with-temp-buffer
                     (planbridge-session-mode)
                     (setq planbridge--session-id "s-bench-replay")
                     (planbridge-bench--time (planbridge--render-opened result)))))
      (planbridge-bench--report (format "  of which session/open's answer, %d events (backend, JSON parse)"
                                        (length (plist-get result :events)))
                                wire "s" "reported")
      (planbridge-bench--report "  of which the replay into a buffer (Emacs)" replay "s" "reported"))
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
       (let ((id planbridge--session-id))
         (kill-buffer (current-buffer))
         (planbridge-bench--reopen-parts
          id (format "%d turns of %d tool steps" turns steps)))))))

(defun planbridge-bench--type-chars (buffer n)
  "Type N characters into the composer of BUFFER; return the seconds."
  (with-current-buffer buffer
    (goto-char (point-max))
    (planbridge-bench--time
      (dotimes (_ n)
        (let ((last-command-event ?a))
          (self-insert-command 1))
        (planbridge--header-line-format)))))

(defun planbridge-bench--keystrokes (big)
  "Compare typing in BIG, with its long transcript, and in an empty session.
The two are measured in alternation, in rounds, and the fastest round
of each counts: the machine's load falls on both alike."
  (let* ((n 200)
         (rounds 10)
         (empty (with-current-buffer (generate-new-buffer "*planbridge bench empty*")
                  (planbridge-session-mode)
                  (current-buffer)))
         (small most-positive-fixnum)
         (large most-positive-fixnum)
         (size (with-current-buffer big (buffer-size))))
    (dotimes (_ rounds)
      (setq small (min small (planbridge-bench--type-chars empty n)))
      (setq large (min large (planbridge-bench--type-chars big n))))
    (kill-buffer empty)
    (planbridge-bench--report "keystroke in the composer, empty transcript" (* 1e6 (/ small n)) "µs" "reported")
    (planbridge-bench--report (format "keystroke in the composer, %d KiB transcript" (/ size 1024))
                              (* 1e6 (/ large n)) "µs" "reported")
    (planbridge-bench--report "keystroke ratio, long transcript vs empty" (/ large small) "x" "about 1")))

(defun planbridge-bench-batch ()
  "Run the benchmarks and print their figures."
  (planbridge-bench-render)
  (planbridge-bench-render-wire 8)
  (planbridge-bench-render-wire 4096)
  (planbridge-bench-backend (string-to-number (or (getenv "PLANBRIDGE_BENCH_SIZE") "1048576")))
  (planbridge-bench-reopen-mixed 16 32 2048))

(when noninteractive
  (planbridge-bench-batch))

;;; bench.el ends here

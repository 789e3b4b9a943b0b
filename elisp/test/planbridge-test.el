;;; planbridge-test.el --- ERT tests for planbridge against the real backend  -*- lexical-binding: t; -*-

;;; Commentary:

;; Run with `make elisp-test', or:
;;
;;   PLANBRIDGE_PROGRAM=$PWD/bin/planbridge \
;;     emacs -Q --batch -L elisp -l elisp/test/planbridge-test.el \
;;     -f ert-run-tests-batch-and-exit
;;
;; Every test that talks to the backend starts the real binary
;; (PLANBRIDGE_PROGRAM; the tests fail when it is missing) with a fresh
;; state directory, a temporary git repository as workspace and the
;; `script' engine replaying responses the test writes.  The wire is
;; observed by advising `jsonrpc-connection-receive' (jsonrpc 1.0.14,
;; bundled with Emacs 28, has no `jsonrpc-event-hook').  The only
;; `accept-process-output' loops are here, in the tests.

;;; Code:

(require 'ert)
(require 'cl-lib)
(require 'subr-x)
(require 'planbridge)

(defconst planbridge-test--source
  (expand-file-name "../planbridge.el"
                    (file-name-directory (or load-file-name buffer-file-name)))
  "The planbridge.el under test.")

(defvar planbridge-test--wire nil
  "Messages received from the backend during a test, newest first.")

(defvar planbridge-test--repo nil
  "The workspace of the current test, a directory name.")

;;; Fixtures
;;;

(defun planbridge-test--program ()
  "Return the backend binary, failing the test if it is missing."
  (let ((program (getenv "PLANBRIDGE_PROGRAM")))
    (unless (and program (file-executable-p program))
      (ert-fail (format "PLANBRIDGE_PROGRAM must name the built backend (run `make build'); got %S"
                        program)))
    program))

(defun planbridge-test--git (dir &rest args)
  "Run git with ARGS in DIR, failing the test on a non-zero exit."
  (let ((default-directory dir))
    (with-temp-buffer
      (unless (zerop (apply #'call-process "git" nil t nil
                            "-c" "user.name=planbridge test"
                            "-c" "user.email=test@example.invalid"
                            args))
        (ert-fail (format "git %S failed: %s" args (buffer-string)))))))

(defun planbridge-test--record (_conn message)
  "Record MESSAGE received from the backend in `planbridge-test--wire'."
  (push message planbridge-test--wire))

(defun planbridge-test--wait (pred what &optional timeout)
  "Wait until PRED returns non-nil, for at most TIMEOUT seconds.
Fail the test, naming WHAT, if it does not happen."
  (let ((deadline (+ (float-time) (or timeout 15))))
    (while (and (not (funcall pred)) (< (float-time) deadline))
      (accept-process-output nil 0.05))
    (or (funcall pred)
        (ert-fail (format "Timed out waiting for %s" what)))))

(defun planbridge-test--events (kind)
  "Return the session/event notifications of KIND seen on the wire."
  (cl-loop for msg in (reverse planbridge-test--wire)
           when (and (equal (plist-get msg :method) "session/event")
                     (equal (plist-get (plist-get msg :params) :kind) kind))
           collect (plist-get msg :params)))

(defun planbridge-test--wait-turn-end (count)
  "Wait until COUNT turns have ended in the current session buffer."
  (planbridge-test--wait
   (lambda () (>= (length (planbridge-test--events "turn_end")) count))
   (format "turn_end #%d" count))
  (planbridge-test--wait (lambda () (not (eq (plist-get planbridge--info :busy) t)))
                         "the session to be idle"))

(defun planbridge-test--header ()
  "Return the header line of the current buffer as plain text."
  (substring-no-properties (planbridge--header-line)))

(defun planbridge-test--wait-header (prefix)
  "Wait until the header line of the current buffer starts with PREFIX."
  (planbridge-test--wait (lambda () (string-prefix-p prefix (planbridge-test--header)))
                         (format "header %S (is %S)" prefix (planbridge-test--header))))

(defun planbridge-test--status ()
  "Ask the backend for `plan/status' of the current buffer's session."
  (jsonrpc-request planbridge--connection :plan/status
                   (list :session planbridge--session-id)))

(defun planbridge-test--type (text)
  "Type TEXT in the composer of the current buffer and press RET."
  (goto-char (point-max))
  (insert text)
  (call-interactively (key-binding (kbd "RET"))))

(defun planbridge-test--buffer-text ()
  "Return the text of the current buffer without properties."
  (buffer-substring-no-properties (point-min) (point-max)))

(defun planbridge-test--count (regexp string)
  "Return how many times REGEXP matches in STRING."
  (let ((n 0) (start 0))
    (while (string-match regexp string start)
      (setq n (1+ n) start (match-end 0)))
    n))

(defun planbridge-test--stop ()
  "Stop the backend of the current test quietly."
  (when-let ((conn planbridge--connection))
    (setf (planbridge--shutdown-requested conn) t)
    (when (jsonrpc-running-p conn)
      (jsonrpc-shutdown conn t))
    (setq planbridge--connection nil)))

(defun planbridge-test--call-with-session (script fn)
  "Call FN in a fresh session buffer whose model replays SCRIPT.
SCRIPT is the JSON text of the script engine's response list."
  (let* ((program (planbridge-test--program))
         (root (file-name-as-directory
                (file-truename (make-temp-file "planbridge-test-" t))))
         (repo (expand-file-name "repo/" root))
         (script-file (expand-file-name "script.json" root))
         (planbridge-program program)
         (planbridge-state-dir (expand-file-name "state/" root))
         (planbridge-engine `(script :file ,script-file))
         (planbridge-events-buffer-size (if (boundp 'planbridge-bench--mib) 0 20000))
         (planbridge-default-permission-mode "ask")
         (planbridge-permission-function (lambda (&rest _) nil))
         (planbridge--connection nil)
         (planbridge--buffers (make-hash-table :test #'equal))
         (planbridge-test--repo repo)
         (planbridge-test--wire nil))
    (advice-add 'jsonrpc-connection-receive :before #'planbridge-test--record)
    (unwind-protect
        (progn
          (make-directory repo t)
          (planbridge-test--git repo "init" "-q")
          (with-temp-file (expand-file-name "hello.txt" repo)
            (insert "hello\n"))
          (planbridge-test--git repo "add" "hello.txt")
          (planbridge-test--git repo "commit" "-q" "-m" "init")
          (with-temp-file script-file (insert script))
          (let ((buf (let ((default-directory repo)) (planbridge))))
            (with-current-buffer buf
              (planbridge-test--wait (lambda () (not planbridge--opening))
                                     "session/open")
              (funcall fn))))
      (advice-remove 'jsonrpc-connection-receive #'planbridge-test--record)
      (planbridge-test--stop)
      (dolist (buf (buffer-list))
        (when (and (buffer-live-p buf)
                   (or (buffer-local-value 'planbridge--session-id buf)
                       (string-match-p "\\`\\*planbridge" (buffer-name buf))))
          (let ((kill-buffer-query-functions nil))
            (kill-buffer buf))))
      (delete-directory root t))))

(defmacro planbridge-test-with-session (script &rest body)
  "Run BODY in a fresh session buffer whose model replays SCRIPT.
SCRIPT is the script engine's JSON text: a list of responses
{\"text\": ..., \"tool_calls\": [{\"name\": ..., \"arguments\": {...}}]}."
  (declare (indent 1) (debug t))
  `(planbridge-test--call-with-session ,script (lambda () ,@body)))

(defconst planbridge-test--plan-script
  "[{\"text\": \"Looking at hello.txt first.\",
     \"tool_calls\": [{\"name\": \"read_file\", \"arguments\": {\"path\": \"hello.txt\"}}]},
    {\"text\": \"Now I will just change it.\",
     \"tool_calls\": [{\"name\": \"write_file\",
                      \"arguments\": {\"path\": \"hello.txt\", \"content\": \"changed\\n\"}}]},
    {\"text\": \"Refused, so here is my plan instead.\"}]"
  "A Plan turn: a read, a write the gate refuses, a final answer.")

;;; Tests
;;;

(defun planbridge-test--sources ()
  "Return the package's files: planbridge.el and its feature files."
  (directory-files (file-name-directory planbridge-test--source) t
                   "\\`planbridge.*\\.el\\'"))

(ert-deftest planbridge-test-byte-compile ()
  "Every file of the package byte-compiles with warnings as errors.
Each is compiled in a fresh Emacs, as `make lint' does."
  (let ((emacs (expand-file-name invocation-name invocation-directory))
        (dir (file-name-directory planbridge-test--source))
        (out (make-temp-file "planbridge-elc-" t)))
    (should (>= (length (planbridge-test--sources)) 6))
    (unwind-protect
        (dolist (file (planbridge-test--sources))
          (let* ((status nil)
                 (output (with-temp-buffer
                           (setq status
                                 (call-process
                                  emacs nil t nil "-Q" "--batch" "-L" dir
                                  "--eval" (format "(setq byte-compile-error-on-warn t byte-compile-dest-file-function (lambda (_) %S))"
                                                   (expand-file-name (concat (file-name-base file) ".elc") out))
                                  "-f" "batch-byte-compile" file))
                           (buffer-string))))
            (should (equal (list file status) (list file 0)))
            (should-not (string-match-p "Warning\\|Error" output))))
      (delete-directory out t))))

(ert-deftest planbridge-test-lint ()
  "checkdoc and package-lint (elisp/test/lint.el) find nothing."
  (let* ((dir (file-name-directory planbridge-test--source))
         (emacs (expand-file-name invocation-name invocation-directory))
         (files (planbridge-test--sources))
         (status nil)
         (output (with-temp-buffer
                   (setq status (apply #'call-process
                                       emacs nil t nil "-Q" "--batch" "-L" dir
                                       "-l" (expand-file-name "test/lint.el" dir)
                                       files))
                   (buffer-string))))
    (should (equal (list status (car (last (split-string output "\n" t))))
                   (list 0 (concat "lint: 0 problem(s) in "
                                   (mapconcat #'file-name-nondirectory files " ")))))))

(ert-deftest planbridge-test-program-required ()
  "The tests insist on the real backend binary."
  (should (file-executable-p (planbridge-test--program))))

(ert-deftest planbridge-test-open-session ()
  "`planbridge' opens one session buffer per project and reuses it."
  (planbridge-test-with-session "[]"
    (should (eq major-mode 'planbridge-session-mode))
    (should (equal (buffer-name) "*planbridge: repo*"))
    (should (string-prefix-p "s-" planbridge--session-id))
    (should (equal (plist-get planbridge--info :workspace)
                   (directory-file-name planbridge-test--repo)))
    (should (equal (planbridge-test--header) "[ask]"))
    ;; The transcript is read-only, the composer is not.
    (should (get-text-property (point-min) 'read-only))
    (goto-char (point-max))
    (insert "draft")
    (should (equal (planbridge--composer-text) "draft"))
    ;; Same project, same buffer; the backend has exactly one session.
    (let ((default-directory planbridge-test--repo))
      (should (eq (planbridge) (current-buffer))))
    (should (= 1 (length (jsonrpc-request planbridge--connection
                                          :session/list nil))))))

(ert-deftest planbridge-test-toggle-plan ()
  "C-<tab> toggles Plan; the header and the backend agree."
  (planbridge-test-with-session "[]"
    (should (eq (key-binding (kbd "C-<tab>")) #'planbridge-toggle-plan))
    (call-interactively (key-binding (kbd "C-<tab>")))
    (planbridge-test--wait-header "[Plan · ask]")
    (should (eq t (plist-get (planbridge-test--status) :plan)))
    (call-interactively (key-binding (kbd "C-<tab>")))
    (planbridge-test--wait-header "[ask]")
    (should (eq :json-false (plist-get (planbridge-test--status) :plan)))))

(ert-deftest planbridge-test-cycle-mode-in-plan ()
  "S-<tab> cycles the permission mode while Plan stays on."
  (planbridge-test-with-session "[]"
    (planbridge-toggle-plan)
    (planbridge-test--wait-header "[Plan · ask]")
    (should (eq (key-binding (kbd "S-<tab>")) #'planbridge-cycle-permission-mode))
    (should (eq (key-binding (kbd "<backtab>")) #'planbridge-cycle-permission-mode))
    (call-interactively (key-binding (kbd "S-<tab>")))
    (planbridge-test--wait-header "[Plan · edits]")
    (call-interactively (key-binding (kbd "S-<tab>")))
    (planbridge-test--wait-header "[Plan · full-auto]")
    (let ((status (planbridge-test--status)))
      (should (eq t (plist-get status :plan)))
      (should (equal "full-auto" (plist-get status :mode))))
    (call-interactively (key-binding (kbd "<backtab>")))
    (planbridge-test--wait-header "[Plan · ask]")
    (should (eq t (plist-get (planbridge-test--status) :plan)))))

(ert-deftest planbridge-test-plan-turn ()
  "A Plan turn streams text, renders the refused write, changes nothing."
  (planbridge-test-with-session planbridge-test--plan-script
    (let ((hello (expand-file-name "hello.txt" planbridge-test--repo)))
      (planbridge-toggle-plan)
      (planbridge-test--wait-header "[Plan · ask]")
      (planbridge-test--type "Make the greeting configurable")
      (should (equal (planbridge--composer-text) ""))
      (planbridge-test--wait-turn-end 1)
      (let ((text (planbridge-test--buffer-text)))
        (should (string-match-p "^▶ Make the greeting configurable$" text))
        (should (string-match-p "Looking at hello.txt first\\." text))
        (should (string-match-p "Refused, so here is my plan instead\\." text))
        (should (string-match-p "^⚙ read_file {\"path\":\"hello.txt\"}" text))
        (should (string-match-p
                 "⛔ blocked write_file (plan_mode_blocked): write_file .*not allowed while Plan is on"
                 text)))
      ;; The streamed deltas were assembled into the transcript.
      (should (> (length (planbridge-test--events "text")) 2))
      (goto-char (point-min))
      (should (search-forward "⛔ blocked write_file" nil t))
      (should (eq (get-text-property (point) 'face) 'planbridge-blocked))
      (should (equal (with-temp-buffer
                       (insert-file-contents-literally hello)
                       (buffer-string))
                     "hello\n"))
      (let ((status (planbridge-test--status)))
        (should (eq t (plist-get status :plan)))
        (should (= 1 (plist-get status :blocked_total))))
      (should (string-prefix-p "[Plan · ask]" (planbridge-test--header))))))

(ert-deftest planbridge-test-plan-status-command ()
  "`/plan status' typed in the composer shows the backend's notice."
  (planbridge-test-with-session "[]"
    (planbridge-test--type "/plan status")
    (planbridge-test--wait
     (lambda () (string-match-p "^ℹ Plan off · mode ask · proposal none · 0 blocked"
                                (planbridge-test--buffer-text)))
     "the /plan status notice")
    ;; `/plan on' enters Plan through the same path.
    (planbridge-test--type "/plan on")
    (planbridge-test--wait-header "[Plan · ask]")))

(defconst planbridge-test--write-script
  "[{\"tool_calls\": [{\"name\": \"write_file\",
                       \"arguments\": {\"path\": \"allowed.txt\", \"content\": \"yes\\n\"}}]},
    {\"text\": \"Wrote it.\"},
    {\"tool_calls\": [{\"name\": \"write_file\",
                       \"arguments\": {\"path\": \"refused.txt\", \"content\": \"no\\n\"}}]},
    {\"text\": \"Not allowed.\"}]"
  "Two turns outside Plan, each writing a file.")

(ert-deftest planbridge-test-permission-ask ()
  "Outside Plan, `permission/ask' answered yes runs a write, no refuses it."
  (planbridge-test-with-session planbridge-test--write-script
    (let* ((asked '())
           (answer t)
           (planbridge-permission-function
            (lambda (session tool arguments summary)
              (push (list session tool arguments summary) asked)
              answer)))
      (planbridge-test--type "write allowed.txt")
      (planbridge-test--wait-turn-end 1)
      (should (= 1 (length asked)))
      (pcase-let ((`(,session ,tool ,arguments ,_summary) (car asked)))
        (should (equal session planbridge--session-id))
        (should (equal tool "write_file"))
        (should (equal (plist-get arguments :path) "allowed.txt")))
      (should (file-exists-p (expand-file-name "allowed.txt" planbridge-test--repo)))
      (should (string-match-p "^? write_file .* — allowed$" (planbridge-test--buffer-text)))
      (setq answer nil)
      (planbridge-test--type "write refused.txt")
      (planbridge-test--wait-turn-end 2)
      (should (= 2 (length asked)))
      (should-not (file-exists-p (expand-file-name "refused.txt" planbridge-test--repo)))
      (let ((text (planbridge-test--buffer-text)))
        (should (string-match-p "^? write_file .* — refused$" text))
        (should (string-match-p "✗ the person did not allow write_file" text))))))

(ert-deftest planbridge-test-restart ()
  "A dead backend is reported once; the next command restarts it.
The session comes back with Plan still on and no event shown twice."
  (planbridge-test-with-session planbridge-test--plan-script
    (planbridge-toggle-plan)
    (planbridge-test--wait-header "[Plan · ask]")
    (planbridge-test--type "investigate")
    (planbridge-test--wait-turn-end 1)
    (let* ((old planbridge--connection)
           (proc (planbridge--conn-process old))
           (messages (with-current-buffer (messages-buffer) (point-max))))
      (signal-process (process-id proc) 'KILL)
      (planbridge-test--wait (lambda () (not (process-live-p proc))) "the backend to die")
      (planbridge-test--wait (lambda () (null planbridge--connection)) "the death to be noticed")
      (accept-process-output nil 0.2)
      (let ((logged (with-current-buffer (messages-buffer)
                      (buffer-substring-no-properties (min messages (point-max))
                                                      (point-max)))))
        (should (= 1 (planbridge-test--count "^planbridge: The backend exited" logged)))
        (should-not (string-match-p "Server died\\|\\[jsonrpc\\]" logged)))
      (should (string-match-p "disconnected" (planbridge-test--header)))
      ;; The next command restarts the backend and reopens the session.
      (let ((default-directory planbridge-test--repo))
        (should (eq (planbridge) (current-buffer))))
      (should (planbridge--live-p))
      (should-not (eq planbridge--connection old))
      (planbridge-test--wait (lambda () (not planbridge--opening)) "the reopen")
      (should (string-prefix-p "[Plan · ask]" (planbridge-test--header)))
      (should (eq t (plist-get (planbridge-test--status) :plan)))
      (should (= 1 (planbridge-test--count "^▶ investigate$"
                                           (planbridge-test--buffer-text)))))))

(ert-deftest planbridge-test-reopen-replays-history ()
  "A session opened again by id shows its stored history."
  (planbridge-test-with-session planbridge-test--plan-script
    (let ((id planbridge--session-id))
      (planbridge-toggle-plan)
      (planbridge-test--wait-header "[Plan · ask]")
      (planbridge-test--type "investigate")
      (planbridge-test--wait-turn-end 1)
      (kill-buffer (current-buffer))
      (with-current-buffer (planbridge-open-session id)
        (planbridge-test--wait (lambda () (not planbridge--opening)) "session/open")
        (should (equal planbridge--session-id id))
        (should (string-prefix-p "[Plan · ask]" (planbridge-test--header)))
        (let ((text (planbridge-test--buffer-text)))
          (should (= 1 (planbridge-test--count "^▶ investigate$" text)))
          (should (string-match-p "Looking at hello.txt first\\." text))
          (should (string-match-p "⛔ blocked write_file" text)))))))

(ert-deftest planbridge-test-wire-log ()
  "The wire log exists and stays within `planbridge-events-buffer-size'."
  (planbridge-test-with-session planbridge-test--plan-script
    (planbridge-test--type "investigate")
    (planbridge-test--wait-turn-end 1)
    (let ((log (get-buffer "*planbridge events*")))
      (should (buffer-live-p log))
      (with-current-buffer log
        (should (string-match-p "session/event" (buffer-string)))
        (should (<= (buffer-size) planbridge-events-buffer-size))))))

(ert-deftest planbridge-test-backend-error-is-a-message ()
  "A backend error becomes a `planbridge: ' message; the buffer survives."
  (planbridge-test-with-session "[]"
    (let ((messages (with-current-buffer (messages-buffer) (point-max))))
      (setq planbridge--session-id "s-does-not-exist")
      (planbridge-toggle-plan)
      (planbridge-test--wait
       (lambda ()
         (with-current-buffer (messages-buffer)
           (save-excursion
             (goto-char messages)
             (re-search-forward "^planbridge: Could not enter Plan: ." nil t))))
       "the error message")
      (should (equal (planbridge-test--header) "[ask]"))
      (should (planbridge--live-p)))))

(ert-deftest planbridge-test-missing-program ()
  "A missing backend program is a `user-error', not a broken state."
  (let ((planbridge-program "/nonexistent/planbridge")
        (planbridge--connection nil)
        (planbridge--buffers (make-hash-table :test #'equal)))
    (let ((err (should-error (planbridge) :type 'user-error)))
      (should (string-match-p "\\`planbridge: Cannot find" (cadr err))))
    (should-not planbridge--connection)))

(ert-deftest planbridge-test-start-failure ()
  "A backend that exits at start-up is one `user-error' quoting its stderr."
  (let* ((state (make-temp-file "planbridge-not-a-dir-"))
         (planbridge-program (planbridge-test--program))
         (planbridge-state-dir state)
         (planbridge-engine nil)
         (planbridge--connection nil)
         (planbridge--buffers (make-hash-table :test #'equal))
         (messages (with-current-buffer (messages-buffer) (point-max))))
    (unwind-protect
        (let ((err (should-error (planbridge) :type 'user-error)))
          (should (string-match-p "\\`planbridge: The backend did not start: .*(planbridge: "
                                  (cadr err)))
          (should-not (planbridge--live-p))
          (should-not (string-match-p
                       "The backend exited"
                       (with-current-buffer (messages-buffer)
                         (buffer-substring-no-properties (min messages (point-max))
                                                         (point-max))))))
      (delete-file state)
      (when-let ((buf (get-buffer "*planbridge events*")))
        (kill-buffer buf)))))

(ert-deftest planbridge-test-acp-engine-params ()
  "An acp engine is sent as its command vector; its :env goes to the
backend's environment (the agent inherits it), never on the wire."
  (let ((planbridge-engine '(acp :command ("claude-agent-acp" "--x")
                                 :env (("ANTHROPIC_API_KEY" . "sk-ant-elisp-secret")))))
    (should (equal (planbridge--engine-params)
                   '(:kind "acp" :command ["claude-agent-acp" "--x"])))
    (should (equal (json-serialize (planbridge--engine-params) :null-object nil :false-object :json-false)
                   "{\"kind\":\"acp\",\"command\":[\"claude-agent-acp\",\"--x\"]}"))
    (should (equal (car (planbridge--process-environment)) "ANTHROPIC_API_KEY=sk-ant-elisp-secret"))))

;; The refusals of a backend that cannot take its state directory.
(defun planbridge-test--start-error (state)
  "Return the `user-error' text of starting a backend on STATE."
  (let ((planbridge-program (planbridge-test--program))
        (planbridge-state-dir state)
        (planbridge-engine nil)
        (planbridge--connection nil)
        (planbridge--buffers (make-hash-table :test #'equal)))
    (unwind-protect
        (let ((err (should-error (planbridge) :type 'user-error)))
          (should-not (planbridge--live-p))
          (cadr err))
      (when-let ((buf (get-buffer "*planbridge events*")))
        (kill-buffer buf)))))

(ert-deftest planbridge-test-state-locked ()
  "A state directory owned by another backend is one plain message naming its pid."
  (let* ((root (make-temp-file "planbridge-test-" t))
         (state (expand-file-name "state" root))
         (other (make-process :name "planbridge-other"
                              :command (list (planbridge-test--program) "serve"
                                             "--state-dir" state)
                              :connection-type 'pipe :noquery t
                              :buffer nil :stderr (get-buffer-create " *other stderr*")))
         (lock (expand-file-name "serve.lock" state)))
    (unwind-protect
        (progn
          (planbridge-test--wait
           (lambda () (and (file-exists-p lock)
                           (with-temp-buffer
                             (insert-file-contents lock)
                             (string-match-p (format "%d" (process-id other)) (buffer-string)))))
           "the other backend to take the lock")
          (let ((text (planbridge-test--start-error state)))
            (should (equal text
                           (format "planbridge: Another planbridge serve (pid %d) is using the state directory %s; stop it (M-x planbridge-shutdown in the Emacs that started it) or set `planbridge-state-dir'"
                                   (process-id other) state)))))
      (delete-process other)
      (kill-buffer " *other stderr*")
      (delete-directory root t))))

(ert-deftest planbridge-test-state-damaged ()
  "A damaged state directory is one plain message saying what to do."
  (let* ((root (make-temp-file "planbridge-test-" t))
         (state (expand-file-name "state" root)))
    (unwind-protect
        (progn
          ;; A session directory without its database.
          (make-directory (expand-file-name "sessions/s-0123456789abcdef" state) t)
          (let ((text (planbridge-test--start-error state)))
            (should (string-prefix-p (format "planbridge: The state directory %s is damaged" state) text))
            (should (string-match-p "state.db is missing but 1 session directories exist" text))
            (should (string-match-p "Restore state.db .* from a backup, or move the directory aside" text))
            (should-not (string-match-p "did not start\\|planbridge: planbridge" text)))
          (should-not (file-exists-p (expand-file-name "state.db" state))))
      (delete-directory root t))))

(ert-deftest planbridge-test-start-warnings ()
  "What the backend's start could not finish is shown as a warning.
Here: the files of a session whose delete a crash cut short, moved aside,
while the session has a directory again; the backend starts and names them."
  (let* ((root (file-name-as-directory (file-truename (make-temp-file "planbridge-test-" t))))
         (planbridge-program (planbridge-test--program))
         (planbridge-state-dir (expand-file-name "state/" root))
         (planbridge-engine nil)
         (planbridge--connection nil)
         (planbridge--buffers (make-hash-table :test #'equal)))
    (unwind-protect
        (let* ((info (jsonrpc-request (planbridge--connection) :session/create
                                      (list :workspace root)))
               (aside (expand-file-name (concat "sessions/.deleted-" (plist-get info :id))
                                        planbridge-state-dir)))
          (planbridge-test--stop)
          (make-directory aside t)
          (when-let ((buf (get-buffer "*Warnings*")))
            (kill-buffer buf))
          (should (jsonrpc-running-p (planbridge--connection)))
          (should (get-buffer "*Warnings*"))
          (with-current-buffer "*Warnings*"
            (should (string-match-p (concat "has a directory again; its earlier files stay in "
                                            (regexp-quote aside))
                                    (buffer-string)))))
      (planbridge-test--stop)
      (when-let ((buf (get-buffer "*planbridge events*")))
        (kill-buffer buf))
      (delete-directory root t))))

(ert-deftest planbridge-test-api-key-from-auth-source ()
  "The openai API key comes from auth-source and is written nowhere.
It reaches the backend in its environment, never on the wire."
  (let* ((root (file-name-as-directory (make-temp-file "planbridge-test-" t)))
         (secret "sk-planbridge-test-secret")
         (planbridge-program (planbridge-test--program))
         (planbridge-state-dir (expand-file-name "state/" root))
         (planbridge-engine '(openai :base-url "http://127.0.0.1:9/v1" :model "test-model"))
         (planbridge-events-buffer-size 20000)
         (planbridge--connection nil)
         (planbridge--buffers (make-hash-table :test #'equal))
         (sent nil)
         (record (lambda (_conn &rest args) (push args sent))))
    (require 'auth-source)              ; before stubbing it
    (advice-add 'jsonrpc-connection-send :before record)
    (unwind-protect
        (cl-letf (((symbol-function 'auth-source-search)
                   (lambda (&rest spec)
                     (should (equal (plist-get spec :host) "127.0.0.1"))
                     (list (list :host "127.0.0.1" :secret (lambda () secret))))))
          (let ((conn (planbridge--connection)))
            (should (jsonrpc-running-p conn))
            (let* ((init (seq-find (lambda (m) (equal (planbridge--method-name (plist-get m :method))
                                                     "initialize"))
                                   sent))
                   (engine (plist-get (plist-get init :params) :engine)))
              (should (equal (plist-get engine :kind) "openai"))
              (should (equal (plist-get engine :model) "test-model"))
              ;; The key never travels on the wire: it is in the
              ;; backend's environment.
              (should-not (plist-get engine :api_key))
              (should-not (string-match-p secret (prin1-to-string sent)))
              (should (string-match-p
                       (concat "\\(?:\\`\\|\0\\)PLANBRIDGE_OPENAI_API_KEY=" secret "\0")
                       (with-temp-buffer
                         (insert-file-contents-literally
                          (format "/proc/%d/environ" (process-id (planbridge--conn-process conn))))
                         (buffer-string)))))
            (with-current-buffer (jsonrpc-events-buffer conn)
              (should (string-match-p "initialize" (buffer-string)))
              (should-not (string-match-p secret (buffer-string))))
            (planbridge-test--stop)
            (dolist (file (directory-files-recursively root ""))
              (with-temp-buffer
                (insert-file-contents-literally file)
                (should-not (search-forward secret nil t))))))
      (advice-remove 'jsonrpc-connection-send record)
      (planbridge-test--stop)
      (when-let ((buf (get-buffer "*planbridge events*")))
        (kill-buffer buf))
      (delete-directory root t))))

(ert-deftest planbridge-test-interrupt ()
  "C-c C-k interrupts a streaming turn and drops the queued prompt."
  (planbridge-test-with-session
      (format "[{\"text\": %S, \"delay_ms\": 40}]" (make-string 400 ?x))
    (planbridge-test--type "stream slowly")
    (planbridge-test--wait (lambda () (planbridge-test--events "text")) "streaming")
    (should (string-match-p "busy…" (planbridge-test--header)))
    (planbridge-test--type "and then this")
    (planbridge-test--wait (lambda () (string-match-p "^… queued: and then this$"
                                                      (planbridge-test--buffer-text)))
                           "the queued prompt")
    (should (eq (key-binding (kbd "C-c C-k")) #'planbridge-interrupt))
    (call-interactively (key-binding (kbd "C-c C-k")))
    (planbridge-test--wait-turn-end 1)
    (let ((text (planbridge-test--buffer-text)))
      (should (string-match-p "^ℹ interrupted (1 queued prompt(s) dropped)$" text))
      (should (string-match-p "^─ turn 1 ended: interrupted$" text))
      (should-not (string-match-p "^▶ and then this$" text)))
    (should-not (string-match-p "busy" (planbridge-test--header)))))

(ert-deftest planbridge-test-render-events ()
  "Rendering: proposal card, failed results, dedupe by seq, unknown kinds."
  (with-temp-buffer
    (planbridge-session-mode)
    (planbridge--handle-event
     '(:seq 1 :kind "proposal"
            :data (:title "Add a --name flag" :text "1. Parse the flag\n2. Print it")))
    (planbridge--handle-event
     '(:seq 2 :kind "tool_result"
            :data (:name "bash" :ok :json-false :output "boom\nmore\nlines")))
    (planbridge--handle-event '(:seq 2 :kind "notice" :data (:message "duplicate")))
    (planbridge--handle-event '(:seq 3 :kind "mystery" :data (:x 1)))
    (planbridge--handle-event '(:seq 4 :kind "status" :data (:plan t :mode "edits" :busy :json-false)))
    (let ((text (planbridge-test--buffer-text)))
      (should (string-match-p "^┌─ Plan proposal: Add a --name flag$" text))
      (should (string-match-p "^│ 2. Print it$" text))
      (should (string-match-p "^  ✗ boom \\[3 lines\\]$" text))
      (should-not (string-match-p "duplicate" text))
      (should (string-match-p "^\\[mystery\\] {\"x\":1}$" text)))
    (should (= planbridge--last-seq 4))
    (should (equal (planbridge-test--header) "[Plan · edits] disconnected"))))

;;; Approval card
;;;

(defconst planbridge-test--plan-text
  "Looked around.\n\n<proposed_plan>\n# Rename the greeting\n\n## Key Changes\n- Change hello to hi in hello.txt\n\n## Validation\n- cat hello.txt\n</proposed_plan>\n"
  "A response proposing a plan.")

(defun planbridge-test--script (&rest steps)
  "Return the script engine's JSON text for STEPS, plists."
  (json-serialize (vconcat steps)))

(defconst planbridge-test--propose-and-implement
  (planbridge-test--script
   (list :text planbridge-test--plan-text)
   (list :text "Implementing.\n"
         :tool_calls (vector (list :name "edit_file"
                                   :arguments (list :path "hello.txt"
                                                    :old "hello" :new "hi"))))
   (list :text "Done: hello.txt says hi.\n"))
  "A proposal, then an implementation turn that edits hello.txt.")

(defun planbridge-test--card ()
  "Return the live approval card of the current session buffer, or nil."
  (planbridge--card-live-p))

(defun planbridge-test--wait-card (&optional attempt-not)
  "Wait for a drawn card whose attempt is not ATTEMPT-NOT; return it."
  (planbridge-test--wait
   (lambda ()
     (let ((card (planbridge-test--card)))
       (and card
            (not (equal attempt-not
                        (plist-get (buffer-local-value 'planbridge--card-view card)
                                   :attempt)))
            (with-current-buffer card
              (string-match-p "^Implementation" (buffer-string))))))
   "the approval card")
  (planbridge-test--card))

(defun planbridge-test--propose ()
  "Enter Plan, send a prompt the script answers with a proposal.
Return the card buffer."
  (planbridge-toggle-plan)
  (planbridge-test--wait-header "[Plan · ask]")
  (planbridge-test--type "rename the greeting")
  (planbridge-test--wait-turn-end 1)
  (planbridge-test--wait-card))

(defun planbridge-test--row (card axis)
  "Return the text of the row of AXIS on CARD, without properties."
  (with-current-buffer card
    (save-excursion
      (goto-char (point-min))
      (let ((pos (text-property-any (point-min) (point-max) 'planbridge-row axis)))
        (when pos
          (goto-char pos)
          (buffer-substring-no-properties (line-beginning-position)
                                          (line-end-position)))))))

(defun planbridge-test--card-lines (card)
  "Return the number of lines of CARD, counting its notice as one.
The notice is filled, never cut, so it may take several rows."
  (with-current-buffer card
    (save-excursion
      (goto-char (point-min))
      (let ((lines 0) (notice nil))
        (while (not (eobp))
          (if (eq (get-text-property (point) 'planbridge-row) 'notice)
              (unless notice (setq notice t lines (1+ lines)))
            (setq notice nil lines (1+ lines)))
          (forward-line 1))
        lines))))

(defun planbridge-test--press (card key)
  "Run the command KEY is bound to in CARD."
  (with-current-buffer card
    (call-interactively (key-binding (kbd key)))))

(defun planbridge-test--messages-since (marker)
  "Return the *Messages* text after position MARKER."
  (with-current-buffer (messages-buffer)
    (buffer-substring-no-properties (min marker (point-max)) (point-max))))

(defun planbridge-test--messages-mark ()
  "Return the current end of *Messages*."
  (with-current-buffer (messages-buffer) (point-max)))

(defun planbridge-test--approval ()
  "Ask the backend for the approval view of the current session."
  (jsonrpc-request planbridge--connection :approval/get
                   (list :session planbridge--session-id)))

(ert-deftest planbridge-test-card-renders ()
  "A scripted proposal opens a complete card: plan above one row per axis."
  (planbridge-test-with-session planbridge-test--propose-and-implement
    (let* ((card (planbridge-test--propose))
           (text (with-current-buffer card (buffer-string)))
           (width (planbridge--card-target-width card)))
      (should (equal (buffer-name card) "*planbridge approval: repo*"))
      (should (get-buffer-window card t))
      (should (string-match-p "^Plan proposal: Rename the greeting" text))
      (should (string-match-p "^# Rename the greeting$" text))
      (should (string-match-p "^- Change hello to hi in hello.txt$" text))
      (should-not (string-match-p "proposed_plan" text))
      (should (string-match-p "^ l   Location      Here$" (planbridge-test--row card 'location)))
      (should (string-match-p "Context +Current" (planbridge-test--row card 'context)))
      (should (string-match-p "Execution +Direct" (planbridge-test--row card 'execution)))
      (should (string-match-p "^ +Budget +Goal execution only$" (planbridge-test--row card 'budget)))
      (should (eq (get-text-property
                   (with-current-buffer card
                     (+ (text-property-any (point-min) (point-max) 'planbridge-row 'budget) 19))
                   'face card)
                  'planbridge-card-dimmed))
      (should (string-match-p "Mode +ask" (planbridge-test--row card 'mode)))
      (should (string-match-p "Model +default · effort default" (planbridge-test--row card 'model)))
      (should (string-match-p "Skills +none" (planbridge-test--row card 'skills)))
      (should (string-match-p "Instructions +none" (planbridge-test--row card 'instructions)))
      (should (equal (planbridge-test--row card 'notice) ""))
      (should (string-match-p "RET accept +f feedback +E edit +q hide +C-g cancel"
                              (planbridge-test--row card 'footer)))
      ;; Every row fits one screen line and carries its full text.
      (dolist (axis '(title implementation location context execution budget mode
                            model skills instructions notice footer))
        (should (<= (string-width (planbridge-test--row card axis)) width)))
      (with-current-buffer card
        (goto-char (text-property-any (point-min) (point-max) 'planbridge-row 'footer))
        (should (string-match-p "C-g cancel" (get-text-property (point) 'help-echo)))
        (should (eq major-mode 'planbridge-approval-mode)))
      ;; The header says nothing is hidden.
      (should-not (string-match-p "1 plan" (planbridge-test--header))))))

(ert-deftest planbridge-test-render-handoff-events ()
  "Handoff, summary and approval events render as transcript lines.
Replayed approval events draw no card: `approval/get' does that."
  (with-temp-buffer
    (planbridge-session-mode)
    (let ((planbridge--replaying t))
      (planbridge--handle-event
       '(:seq 1 :kind "approval" :data (:pending t :attempt "a-1" :hidden :json-false)))
      (planbridge--handle-event
       '(:seq 2 :kind "approval_closed" :data (:attempt "a-1" :reason "cancelled"))))
    (should-not planbridge--card)
    (should-not planbridge--approval)
    (let ((messages (planbridge-test--messages-mark)))
      (planbridge--handle-event '(:seq 3 :kind "notice" :data (:message "Preparing implementation...")))
      (planbridge--handle-event '(:seq 4 :kind "handoff" :data (:state "started" :step "recorded")))
      (planbridge--handle-event '(:seq 5 :kind "summary" :data (:chars 1234)))
      (planbridge--handle-event
       '(:seq 6 :kind "handoff" :data (:state "failed" :step "kickoff" :reason "provider down")))
      (let ((text (planbridge-test--buffer-text)))
        (should (string-match-p "^ℹ Plan cancelled: the proposal is a draft now (C-c C-r brings it back)$" text))
        (should (string-match-p "^ℹ Preparing implementation\\.\\.\\.$" text))
        (should (string-match-p "^ℹ Implementation handoff started (step recorded)$" text))
        (should (string-match-p "^ℹ Handoff summary ready (1234 characters)$" text))
        (should (string-match-p "^✗ Implementation handoff failed at step kickoff: provider down; recover with M-x planbridge-recover$" text))
        (should-not (string-match-p "\\[approval\\]" text)))
      (let ((logged (planbridge-test--messages-since messages)))
        (should (string-match-p "^planbridge: Preparing implementation\\.\\.\\.$" logged))
        (should (string-match-p "^planbridge: Implementation handoff failed at step kickoff" logged))))))

(ert-deftest planbridge-test-card-narrowest-window ()
  "Rows follow the narrowest window showing the card; the height stays."
  (planbridge-test-with-session (planbridge-test--script (list :text planbridge-test--plan-text))
    (let* ((card (planbridge-test--propose))
           (lines (planbridge-test--card-lines card))
           (win (get-buffer-window card t))
           (narrow (split-window win -30 'right)))
      (set-window-buffer narrow card)
      (should (< (window-body-width narrow) (window-body-width win)))
      ;; The window change hook redraws from a timer.
      (planbridge--card-redraw-soon narrow)
      (planbridge-test--wait
       (lambda () (equal (buffer-local-value 'planbridge--card-width card)
                         (1- (window-body-width narrow))))
       "the redraw for the narrow window")
      (dolist (axis '(title location context execution budget mode model
                            skills instructions notice footer))
        (should (< (string-width (planbridge-test--row card axis))
                   (window-body-width narrow))))
      (should (string-suffix-p "…" (planbridge-test--row card 'footer)))
      (should (= lines (planbridge-test--card-lines card)))
      ;; The hook never draws into another buffer.
      (let ((session (current-buffer))
            (text (planbridge-test--buffer-text)))
        (set-window-buffer narrow session)
        (planbridge--card-redraw-soon narrow)
        (accept-process-output nil 0.1)
        (should (equal text (planbridge-test--buffer-text)))))))

(ert-deftest planbridge-test-card-rows-cut-with-ellipsis ()
  "A row longer than the window is cut with an ellipsis, full text on hover."
  (let* ((view (list :pending t :attempt "a-1" :hidden :json-false
                     :title "T" :body "# T"
                     :selection (list :location "here" :context "current"
                                      :execution "direct" :mode "ask"
                                      :instructions (make-string 300 ?x))))
         (text (planbridge--card-string view 40 nil))
         (rows (split-string text "\n")))
    (dolist (row rows)
      (should (<= (string-width row) 40)))
    (let ((row (seq-find (lambda (r) (string-match-p "Instructions" r)) rows)))
      (should (string-suffix-p "…" row))
      (should (string-match-p (make-string 300 ?x)
                              (get-text-property 0 'help-echo row))))))

(ert-deftest planbridge-test-card-keys-keep-height ()
  "l, c, e, b (with Goal), m and TAB change their row, never the height."
  (planbridge-test-with-session planbridge-test--propose-and-implement
    (let* ((card (planbridge-test--propose))
           (lines (planbridge-test--card-lines card))
           (height (window-total-height (get-buffer-window card t))))
      (pcase-dolist (`(,key ,axis ,regexp)
                     '(("l" location "Location +Worktree")
                       ("c" context "Context +Fresh")
                       ("c" context "Context +Summary (one extra model request)")
                       ("e" execution "Execution +Goal")
                       ("m" mode "Mode +edits")
                       ("TAB" mode "Mode +full-auto")
                       ("l" location "Location +Here")))
        (planbridge-test--press card key)
        (planbridge-test--wait
         (lambda () (string-match-p regexp (or (planbridge-test--row card axis) "")))
         (format "%s to change the %s row to %S (is %S)" key axis regexp
                 (planbridge-test--row card axis)))
        (should (= lines (planbridge-test--card-lines card)))
        (should (= height (window-total-height (get-buffer-window card t)))))
      ;; With Goal, the budget row has a key and reads a positive number.
      (should (string-match-p "^ b   Budget +Unlimited$" (planbridge-test--row card 'budget)))
      (cl-letf (((symbol-function 'read-string) (lambda (&rest _) "5000")))
        (planbridge-test--press card "b"))
      (planbridge-test--wait
       (lambda () (string-match-p "Budget +5000 tokens" (planbridge-test--row card 'budget)))
       "the budget row")
      (should (= lines (planbridge-test--card-lines card)))
      (cl-letf (((symbol-function 'read-string) (lambda (&rest _) "-3")))
        (should-error (planbridge-test--press card "b") :type 'user-error))
      ;; Back to Direct: the budget row is the dimmed placeholder again.
      (planbridge-test--press card "e")
      (planbridge-test--wait
       (lambda () (string-match-p "Budget +Goal execution only" (planbridge-test--row card 'budget)))
       "the budget placeholder")
      (should (= lines (planbridge-test--card-lines card)))
      (with-current-buffer card
        (should-error (call-interactively #'planbridge-approval-set-budget)
                      :type 'user-error))
      ;; The backend agrees.
      (let ((sel (plist-get (planbridge-test--approval) :selection)))
        (should (equal (plist-get sel :location) "here"))
        (should (equal (plist-get sel :context) "summary"))
        (should (equal (plist-get sel :execution) "direct"))
        (should (equal (plist-get sel :mode) "full-auto"))
        (should (= (plist-get sel :budget) 5000))))))

(ert-deftest planbridge-test-card-model-skills-instructions ()
  "M picks a model and effort, i edits the instructions; the height stays."
  (let ((planbridge-models '(("small") ("large" "low" "high")))
        (planbridge-workloads '(("plan-implementation" "small" ""))))
    (planbridge-test-with-session planbridge-test--propose-and-implement
      (let* ((card (planbridge-test--propose))
             (lines (planbridge-test--card-lines card)))
        (should (string-match-p "Model +small · effort default" (planbridge-test--row card 'model)))
        (let ((answers '("large" "high")))
          (cl-letf (((symbol-function 'completing-read)
                     (lambda (&rest _) (pop answers))))
            (planbridge-test--press card "M")))
        (planbridge-test--wait
         (lambda () (string-match-p "Model +large · effort high" (planbridge-test--row card 'model)))
         "the model row")
        (should (= lines (planbridge-test--card-lines card)))
        ;; s without skills is a user error.
        (should-error (planbridge-test--press card "s") :type 'user-error)
        ;; With a skill in the project, s toggles it.
        (let ((dir (expand-file-name ".planbridge/skills/tidy/" planbridge-test--repo)))
          (make-directory dir t)
          (with-temp-file (expand-file-name "SKILL.md" dir)
            (insert "---\nname: tidy\ndescription: Tidy up the code\n---\nBe tidy.\n")))
        (planbridge-test--press card "g")
        (planbridge-test--wait
         (lambda () (plist-get (buffer-local-value 'planbridge--card-view card) :skills))
         "the skills to be listed")
        (cl-letf (((symbol-function 'completing-read)
                   (lambda (_prompt table &rest _) (caar table))))
          (planbridge-test--press card "s")
          (planbridge-test--wait
           (lambda () (string-match-p "Skills +tidy$" (planbridge-test--row card 'skills)))
           "the skills row")
          (should (= lines (planbridge-test--card-lines card)))
          (planbridge-test--press card "s")
          (planbridge-test--wait
           (lambda () (string-match-p "Skills +none$" (planbridge-test--row card 'skills)))
           "the skill toggled off"))
        ;; i opens an editor; C-c C-c saves through approval/update.
        (planbridge-test--press card "i")
        (let ((draft (get-buffer (format "*planbridge instructions: %s*" planbridge--session-id))))
          (should draft)
          (with-current-buffer draft
            (should planbridge-draft-mode)
            (insert "Keep the tests green.\nAnd be brief.")
            (call-interactively (key-binding (kbd "C-c C-c"))))
          (should-not (buffer-live-p draft)))
        (planbridge-test--wait
         (lambda () (string-match-p "Instructions +Keep the tests green\\. (\\+1 lines)"
                                    (planbridge-test--row card 'instructions)))
         "the instructions row")
        (should (= lines (planbridge-test--card-lines card)))
        ;; C-c C-k on a changed draft asks; no keeps it, yes throws it away.
        (planbridge-test--press card "i")
        (with-current-buffer (format "*planbridge instructions: %s*" planbridge--session-id)
          (erase-buffer)
          (cl-letf (((symbol-function 'y-or-n-p) (lambda (_) nil)))
            (should-error (call-interactively (key-binding (kbd "C-c C-k"))) :type 'user-error))
          (should (buffer-live-p (current-buffer)))
          (cl-letf (((symbol-function 'y-or-n-p) (lambda (_) t)))
            (call-interactively (key-binding (kbd "C-c C-k")))))
        (should-not (get-buffer (format "*planbridge instructions: %s*" planbridge--session-id)))
        (should (equal (plist-get (plist-get (planbridge-test--approval) :selection) :instructions)
                       "Keep the tests green.\nAnd be brief."))))))

(ert-deftest planbridge-test-card-accept ()
  "RET accepts; the implementation turn runs in the chosen mode and edits."
  (planbridge-test-with-session planbridge-test--propose-and-implement
    (let* ((card (planbridge-test--propose))
           (hello (expand-file-name "hello.txt" planbridge-test--repo)))
      (planbridge-test--press card "m")
      (planbridge-test--wait
       (lambda () (string-match-p "Mode +edits" (planbridge-test--row card 'mode)))
       "mode edits")
      (planbridge-test--press card "RET")
      (planbridge-test--wait (lambda () (not (buffer-live-p card))) "the card to close")
      (planbridge-test--wait-turn-end 2)
      (planbridge-test--wait
       (lambda () (string-match-p "Implementation handoff done" (planbridge-test--buffer-text)))
       "the handoff to finish")
      (should (equal (with-temp-buffer
                       (insert-file-contents-literally hello)
                       (buffer-string))
                     "hi\n"))
      (let ((text (planbridge-test--buffer-text)))
        (should (string-match-p "^ℹ Preparing implementation\\.\\.\\.$" text))
        (should (string-match-p "^▶ Implement accepted plan$" text)))
      (let ((status (planbridge-test--status)))
        (should (eq :json-false (plist-get status :plan)))
        ;; The accepted mode was for the implementation only.
        (should (equal "ask" (plist-get status :mode)))
        (should (equal "accepted" (plist-get status :proposal_status))))
      (should (string-prefix-p "[ask]" (planbridge-test--header)))
      ;; Saving the accepted plan into the project.
      (let ((messages (planbridge-test--messages-mark)))
        (planbridge-save-plan)
        (planbridge-test--wait
         (lambda () (string-match-p "^planbridge: Saved the plan to docs/plans/"
                                    (planbridge-test--messages-since messages)))
         "the saved plan")
        (should (file-expand-wildcards
                 (expand-file-name "docs/plans/*-rename-the-greeting.md"
                                   planbridge-test--repo)))))))

(ert-deftest planbridge-test-card-feedback ()
  "f sends feedback with line comments; a revised card has a fresh attempt."
  (planbridge-test-with-session
      (planbridge-test--script (list :text planbridge-test--plan-text)
                               (list :text planbridge-test--plan-text))
    (let* ((card (planbridge-test--propose))
           (attempt (plist-get (buffer-local-value 'planbridge--card-view card) :attempt)))
      (planbridge-test--press card "c")
      (planbridge-test--wait
       (lambda () (string-match-p "Context +Fresh" (planbridge-test--row card 'context)))
       "context fresh")
      ;; A comment on plan line 4 ("- Change hello to hi in hello.txt").
      (with-current-buffer card
        (goto-char (point-min))
        (search-forward "- Change hello")
        (should (= 4 (get-text-property (point) 'planbridge-plan-line)))
        (cl-letf (((symbol-function 'read-string) (lambda (&rest _) "say hey instead")))
          (call-interactively (key-binding (kbd ";"))))
        (should (equal planbridge--card-comments '((4 . "say hey instead"))))
        (should (string-match-p "f feedback (1 comment)"
                                (planbridge-test--row card 'footer))))
      (should-error (with-current-buffer card
                      (goto-char (text-property-any (point-min) (point-max)
                                                    'planbridge-row 'mode))
                      (call-interactively #'planbridge-approval-comment))
                    :type 'user-error)
      (planbridge-test--press card "f")
      (with-current-buffer (format "*planbridge feedback: %s*" planbridge--session-id)
        (insert "Shorter, please.")
        (call-interactively (key-binding (kbd "C-c C-c"))))
      (planbridge-test--wait-turn-end 2)
      (let ((card2 (planbridge-test--wait-card attempt)))
        (should-not (equal attempt (plist-get (buffer-local-value 'planbridge--card-view card2)
                                              :attempt)))
        ;; The selection survived the revision; the comments were sent.
        (should (string-match-p "Context +Fresh" (planbridge-test--row card2 'context)))
        (should-not (buffer-local-value 'planbridge--card-comments card2)))
      (let ((text (planbridge-test--buffer-text)))
        (should (string-match-p "^▶ Feedback: Shorter, please\\." text))
        (should (string-match-p "On line 4 (\"- Change hello to hi in hello.txt\"): say hey instead"
                                text)))
      (should (eq t (plist-get (planbridge-test--status) :plan))))))

(ert-deftest planbridge-test-card-edit-plan ()
  "E edits the plan; what C-c C-c saves becomes the proposal."
  (planbridge-test-with-session (planbridge-test--script (list :text planbridge-test--plan-text))
    (let* ((card (planbridge-test--propose))
           (attempt (plist-get (buffer-local-value 'planbridge--card-view card) :attempt)))
      (planbridge-test--press card "E")
      (with-current-buffer (format "*planbridge plan edit: %s*" planbridge--session-id)
        (should (string-match-p "^# Rename the greeting" (buffer-string)))
        (erase-buffer)
        (insert "# Rename the greeting to hey\n\n- Change hello to hey")
        (call-interactively (key-binding (kbd "C-c C-c"))))
      (let ((card (planbridge-test--wait-card attempt)))
        (with-current-buffer card
          (should (string-match-p "^Plan proposal: Rename the greeting to hey (edited by you)"
                                  (buffer-string)))
          (should (string-match-p "^- Change hello to hey$" (buffer-string))))))))

(ert-deftest planbridge-test-card-hide-and-show ()
  "q hides the card; the header counter and the command bring it back."
  (planbridge-test-with-session (planbridge-test--script (list :text planbridge-test--plan-text))
    (let ((card (planbridge-test--propose)))
      ;; A line comment survives hiding.
      (with-current-buffer card
        (goto-char (point-min))
        (search-forward "- Change hello")
        (cl-letf (((symbol-function 'read-string) (lambda (&rest _) "hey")))
          (call-interactively #'planbridge-approval-comment)))
      (planbridge-test--press card "q")
      (planbridge-test--wait (lambda () (not (buffer-live-p card))) "the card to hide")
      (planbridge-test--wait (lambda () (string-match-p "1 plan" (planbridge-test--header)))
                             "the header counter")
      (should (string-prefix-p "[Plan · ask] 1 plan" (planbridge-test--header)))
      (let ((view (planbridge-test--approval)))
        (should (eq t (plist-get view :pending)))
        (should (eq t (plist-get view :hidden))))
      ;; The counter is a button running `planbridge-show-approval'.
      (let* ((header (planbridge--header-line))
             (pos (string-match "1 plan" header))
             (map (get-text-property pos 'local-map header)))
        (should (eq (lookup-key map [header-line mouse-1]) #'planbridge-show-approval)))
      (should (eq (key-binding (kbd "C-c C-a")) #'planbridge-show-approval))
      (call-interactively #'planbridge-show-approval)
      (let ((card (planbridge-test--wait-card)))
        (should (get-buffer-window card t))
        ;; The `approval' event may draw the card before the answer
        ;; to approval/show, which selects it, arrives.
        (planbridge-test--wait (lambda () (eq (window-buffer (selected-window)) card))
                               "the card to be selected")
        (should (equal (buffer-local-value 'planbridge--card-comments card) '((4 . "hey"))))
        (should (string-match-p "Location +Here" (planbridge-test--row card 'location))))
      (should-not (string-match-p "1 plan" (planbridge-test--header)))
      (should (eq :json-false (plist-get (planbridge-test--approval) :hidden))))))

(ert-deftest planbridge-test-card-cancel ()
  "C-g asks first; a cancelled plan is a draft that C-c C-r brings back."
  (planbridge-test-with-session (planbridge-test--script (list :text planbridge-test--plan-text))
    (let* ((card (planbridge-test--propose))
           (attempt (plist-get (buffer-local-value 'planbridge--card-view card) :attempt))
           (asked nil))
      (should (eq (with-current-buffer card (key-binding (kbd "C-g")))
                  #'planbridge-approval-cancel))
      ;; Answering no keeps everything as it was.
      (cl-letf (((symbol-function 'y-or-n-p) (lambda (prompt) (setq asked prompt) nil)))
        (should-error (planbridge-test--press card "C-g") :type 'user-error))
      (should (string-match-p "Cancel this plan" asked))
      (should (string-match-p "C-c C-r brings it back" asked))
      (should (buffer-live-p card))
      (should (eq t (plist-get (planbridge-test--approval) :pending)))
      (should (equal attempt (plist-get (planbridge-test--approval) :attempt)))
      ;; Yes cancels: the proposal is a draft.
      (cl-letf (((symbol-function 'y-or-n-p) (lambda (_) t)))
        (planbridge-test--press card "C-g"))
      (planbridge-test--wait (lambda () (not (buffer-live-p card))) "the card to close")
      (planbridge-test--wait
       (lambda () (equal "draft" (plist-get (planbridge-test--status) :proposal_status)))
       "the draft")
      (should (eq :json-false (plist-get (planbridge-test--approval) :pending)))
      (should (eq t (plist-get (planbridge-test--status) :plan)))
      (planbridge-test--wait
       (lambda () (string-match-p "^ℹ Plan cancelled: the proposal is a draft now (C-c C-r brings it back)"
                                  (planbridge-test--buffer-text)))
       "the cancel line")
      (should-not (string-match-p "1 plan" (planbridge-test--header)))
      ;; A hash that does not match restores nothing.
      (let ((hash planbridge--draft-hash)
            (messages (planbridge-test--messages-mark)))
        (should (stringp hash))
        (setq planbridge--draft-hash (make-string 64 ?0))
        (planbridge-restore-draft)
        (planbridge-test--wait
         (lambda () (string-match-p "^planbridge: Could not restore the draft plan: The draft plan changed"
                                    (planbridge-test--messages-since messages)))
         "the hash mismatch message")
        (should (eq :json-false (plist-get (planbridge-test--approval) :pending)))
        ;; The real hash brings the plan back as a card, selected.
        (setq planbridge--draft-hash hash))
      (should (eq (key-binding (kbd "C-c C-r")) #'planbridge-restore-draft))
      (call-interactively #'planbridge-restore-draft)
      (let ((back (planbridge-test--wait-card attempt)))
        ;; The `approval' event may draw it before the answer selects it.
        (planbridge-test--wait (lambda () (eq (window-buffer (selected-window)) back))
                               "the restored card to be selected")
        (should (string-match-p "Plan proposal: Rename the greeting"
                                (with-current-buffer back (buffer-string))))
        (should (eq t (plist-get (planbridge-test--approval) :pending)))
        (should-not (equal attempt (plist-get (planbridge-test--approval) :attempt)))
        (should (equal "proposed" (plist-get (planbridge-test--status) :proposal_status)))))))

(ert-deftest planbridge-test-card-stale-attempt ()
  "An action with a stale attempt is a message, changes nothing, refetches."
  (planbridge-test-with-session (planbridge-test--script (list :text planbridge-test--plan-text))
    (let* ((card (planbridge-test--propose))
           (attempt (plist-get (buffer-local-value 'planbridge--card-view card) :attempt))
           (messages (planbridge-test--messages-mark)))
      (with-current-buffer card
        (setq planbridge--card-view
              (plist-put (copy-sequence planbridge--card-view)
                         :attempt "a-00000000000000000000000000000000")))
      (planbridge-test--press card "l")
      (planbridge-test--wait
       (lambda () (string-match-p "^planbridge: This approval card is no longer current"
                                  (planbridge-test--messages-since messages)))
       "the stale message")
      (planbridge-test--wait
       (lambda () (equal attempt (plist-get (buffer-local-value 'planbridge--card-view card)
                                            :attempt)))
       "the card to be fetched again")
      (should (string-match-p "Location +Here" (planbridge-test--row card 'location)))
      (should (equal "here" (plist-get (plist-get (planbridge-test--approval) :selection)
                                       :location))))))

(ert-deftest planbridge-test-card-render-failure ()
  "A card that cannot be drawn is dismissed; nothing reaches the backend."
  (planbridge-test-with-session (planbridge-test--script (list :text planbridge-test--plan-text))
    (let* ((card (planbridge-test--propose))
           (view (buffer-local-value 'planbridge--card-view card))
           (sent nil)
           (record (lambda (_conn &rest args) (push args sent)))
           (messages (planbridge-test--messages-mark)))
      (advice-add 'jsonrpc-connection-send :before record)
      (unwind-protect
          (cl-letf (((symbol-function 'planbridge--card-axis-rows)
                     (lambda (_) (error "Boom"))))
            (planbridge--apply-approval (plist-put (copy-sequence view) :title "Other")))
        (advice-remove 'jsonrpc-connection-send record))
      (should-not (buffer-live-p card))
      (should-not (planbridge-test--card))
      (should-not sent)
      (should (string-match-p "^planbridge: Could not draw the approval card (Boom)"
                              (planbridge-test--messages-since messages)))
      (should (string-match-p "1 plan" (planbridge-test--header)))
      (should (eq t (plist-get (planbridge-test--approval) :pending))))))

(ert-deftest planbridge-test-queue-follow-up ()
  "C-c TAB queues the composer text without demoting the proposal."
  (planbridge-test-with-session (planbridge-test--script (list :text planbridge-test--plan-text))
    (let ((card (planbridge-test--propose)))
      ;; The proposal's view was made while its turn ran; the card is
      ;; fetched again when the turn ends, so no stale blocker remains.
      (planbridge-test--wait
       (lambda () (seq-empty-p (plist-get (buffer-local-value 'planbridge--card-view card)
                                          :blockers)))
       "the blockers of the running turn to go")
      (should (eq (key-binding (kbd "C-c TAB")) #'planbridge-queue-follow-up))
      (goto-char (point-max))
      (insert "afterwards, update the README")
      (call-interactively (key-binding (kbd "C-c TAB")))
      (should (equal (planbridge--composer-text) ""))
      (planbridge-test--wait
       (lambda () (string-match-p "^… queued: afterwards, update the README$"
                                  (planbridge-test--buffer-text)))
       "the queued line")
      (should (buffer-live-p card))
      (should (equal "proposed" (plist-get (planbridge-test--status) :proposal_status)))
      (should (eq t (plist-get (planbridge-test--approval) :pending)))
      ;; With Worktree, the notice row names what would refuse the fork.
      (let ((lines (planbridge-test--card-lines card)))
        (planbridge-test--press card "l")
        (planbridge-test--wait
         (lambda () (string-match-p "\\`Worktree blocked by: pending input.*1 queued follow-up"
                                    (planbridge-test--row card 'notice)))
         "the notice row")
        (should (= lines (planbridge-test--card-lines card)))
        ;; RET refuses the blocked Worktree before asking for a branch.
        (cl-letf (((symbol-function 'read-string)
                   (lambda (&rest _) (error "Asked for a branch"))))
          (let ((err (should-error (planbridge-test--press card "RET") :type 'user-error)))
            (should (string-match-p "Worktree is blocked by: pending input" (cadr err)))))
        (should (eq t (plist-get (planbridge-test--approval) :pending)))))))

(ert-deftest planbridge-test-card-accept-worktree-branch ()
  "RET with Worktree reads a branch name and sends it with the acceptance."
  (planbridge-test-with-session planbridge-test--propose-and-implement
    (let* ((card (planbridge-test--propose))
           (sent nil)
           (record (lambda (_conn &rest args) (push args sent)))
           (attempt (plist-get (buffer-local-value 'planbridge--card-view card) :attempt)))
      (planbridge-test--press card "l")
      (planbridge-test--wait
       (lambda () (string-match-p "Location +Worktree" (planbridge-test--row card 'location)))
       "Worktree")
      (cl-letf (((symbol-function 'read-string) (lambda (&rest _) "")))
        (should-error (planbridge-test--press card "RET") :type 'user-error))
      (advice-add 'jsonrpc-connection-send :before record)
      (unwind-protect
          (progn
            (cl-letf (((symbol-function 'read-string) (lambda (&rest _) "plan/rename")))
              (planbridge-test--press card "RET"))
            (planbridge-test--wait
             (lambda () (seq-find (lambda (m) (equal (planbridge--method-name (plist-get m :method))
                                                     "approval/accept"))
                                  sent))
             "the acceptance"))
        (advice-remove 'jsonrpc-connection-send record))
      (let ((accept (seq-find (lambda (m) (equal (planbridge--method-name (plist-get m :method))
                                                 "approval/accept"))
                              sent))
            (update (seq-find (lambda (m) (equal (planbridge--method-name (plist-get m :method))
                                                 "approval/update"))
                              sent)))
        (should accept)
        ;; A name other than the card's goes to the card first (checked there).
        (should (equal (plist-get (plist-get (plist-get update :params) :change) :value) "plan/rename"))
        (should (equal (plist-get (plist-get accept :params) :branch) "plan/rename"))
        (should (equal (plist-get (plist-get accept :params) :attempt) attempt))))))

(ert-deftest planbridge-test-card-names-existing-branch ()
  "With Worktree, the card names an existing default branch as a blocker.
RET with that name refuses before anything is sent; another name goes
to the card, which checks it, then is accepted."
  (planbridge-test-with-session planbridge-test--propose-and-implement
    (planbridge-test--git planbridge-test--repo "branch" "plan/rename-the-greeting")
    (let* ((card (planbridge-test--propose))
           (sent nil)
           (record (lambda (_conn &rest args) (push args sent))))
      (planbridge-test--press card "l")
      (planbridge-test--wait
       (lambda () (string-match-p "Branch plan/rename-the-greeting blocked: branch plan/rename-the-greeting already exists"
                                  (planbridge--card-notice (buffer-local-value 'planbridge--card-view card))))
       "the branch blocker on the card")
      ;; The notice row (wrapped) shows it.
      (should (string-match-p "Branch[^a-z]+plan/rename-the-greeting[^a-z]+blocked"
                              (with-current-buffer card (buffer-substring-no-properties (point-min) (point-max)))))
      (advice-add 'jsonrpc-connection-send :before record)
      (unwind-protect
          (progn
            (cl-letf (((symbol-function 'read-string) (lambda (_p _i _h default) default)))
              (let ((err (should-error (planbridge-test--press card "RET") :type 'user-error)))
                (should (string-match-p "already exists" (cadr err)))))
            (should-not (seq-find (lambda (m) (equal (planbridge--method-name (plist-get m :method))
                                                     "approval/accept"))
                                  sent))
            (cl-letf (((symbol-function 'read-string) (lambda (&rest _) "plan/other")))
              (planbridge-test--press card "RET"))
            (planbridge-test--wait
             (lambda () (seq-find (lambda (m) (equal (planbridge--method-name (plist-get m :method))
                                                     "approval/accept"))
                                  sent))
             "the acceptance with another branch"))
        (advice-remove 'jsonrpc-connection-send record)))))

(ert-deftest planbridge-test-card-after-reopen ()
  "A session opened again shows its pending card from `approval/get'."
  (planbridge-test-with-session (planbridge-test--script (list :text planbridge-test--plan-text))
    (let ((id planbridge--session-id))
      (planbridge-test--propose)
      (kill-buffer (current-buffer))
      (with-current-buffer (planbridge-open-session id)
        (planbridge-test--wait (lambda () (not planbridge--opening)) "session/open")
        (let ((card (planbridge-test--wait-card)))
          (should (string-match-p "Location +Here" (planbridge-test--row card 'location)))
          (should (= 1 (planbridge-test--count "^Implementation$"
                                               (with-current-buffer card (buffer-string))))))))))

(ert-deftest planbridge-test-retry-nothing ()
  "Recovering with nothing to recover is a message."
  (planbridge-test-with-session "[]"
    (let ((messages (planbridge-test--messages-mark)))
      (call-interactively #'planbridge-retry-plan-implementation)
      (planbridge-test--wait
       (lambda () (string-match-p "^planbridge: Nothing to recover: no accepted plan, interrupted implementation or queued prompt is waiting$"
                                  (planbridge-test--messages-since messages)))
       "the nothing-to-recover message"))))

(ert-deftest planbridge-test-sessions-list ()
  "`planbridge-sessions' lists the session; RET opens it."
  (planbridge-test-with-session planbridge-test--plan-script
    (planbridge-toggle-plan)
    (planbridge-test--wait-header "[Plan · ask]")
    (let ((session (current-buffer))
          (id planbridge--session-id)
          (list (planbridge-sessions)))
      (with-current-buffer list
        (should (eq major-mode 'planbridge-sessions-mode))
        (goto-char (point-min))
        (should (equal (tabulated-list-get-id) id))
        (let ((line (buffer-substring-no-properties (line-beginning-position)
                                                    (line-end-position))))
          (should (string-match-p "repo" line))
          (should (string-match-p "Plan +ask +none" line))
          (should (string-match-p "[0-9]\\{4\\}-[0-9][0-9]-[0-9][0-9] [0-9][0-9]:[0-9][0-9]" line)))
        (should (eq (key-binding (kbd "RET")) #'planbridge-sessions-open))
        (should (eq (call-interactively (key-binding (kbd "RET"))) session))))))

(ert-deftest planbridge-test-sessions-delete ()
  "`d' in `planbridge-sessions' asks, deletes the session and its buffer; `n' keeps it."
  (planbridge-test-with-session "[{\"text\": \"done\"}]"
    (planbridge-test--type "hello")
    (planbridge-test--wait-turn-end 1)
    (let* ((session (current-buffer))
           (id planbridge--session-id)
           (dir (expand-file-name (concat "sessions/" id) planbridge-state-dir))
           (list (planbridge-sessions))
           (asked nil))
      (should (file-directory-p dir))
      (with-current-buffer list
        (should (eq (key-binding (kbd "d")) #'planbridge-sessions-delete))
        (should (eq (key-binding (kbd "x")) #'planbridge-sessions-delete))
        (goto-char (point-min))
        (should (equal (tabulated-list-get-id) id))
        ;; Declined: nothing is sent, nothing changes.
        (let ((sent (planbridge-test--sent-recorder)))
          (unwind-protect
              (cl-letf (((symbol-function 'yes-or-no-p)
                         (lambda (prompt) (setq asked prompt) nil)))
                (call-interactively (key-binding (kbd "d"))))
            (funcall sent 'stop))
          (should (string-match-p "\\`Delete session .* (its transcript and work:// files; the workspace stays)\\? \\'" asked))
          (should-not (funcall sent "session/delete")))
        (should (buffer-live-p session))
        (should (file-directory-p dir))
        ;; Confirmed: gone from the backend, the list and the buffers.
        (goto-char (point-min))
        (cl-letf (((symbol-function 'yes-or-no-p) (lambda (_) t)))
          (call-interactively (key-binding (kbd "x"))))
        (should-not (buffer-live-p session))
        (should-not (gethash id planbridge--buffers))
        (should-not (file-exists-p dir))
        (should (file-exists-p (expand-file-name "hello.txt" planbridge-test--repo)))
        (goto-char (point-min))
        (should-not (equal (tabulated-list-get-id) id))
        (should-not (cl-find id (planbridge--request :session/list nil)
                             :key (lambda (s) (plist-get s :id)) :test #'equal))))))

(ert-deftest planbridge-test-sessions-delete-refused ()
  "A refused delete is the backend's reason as an error; the session stays."
  (planbridge-test-with-session
      (planbridge-test--script
       (list :text (concat "Slowly answering" (make-string 300 ?.) "\n") :delay_ms 30))
    (planbridge-test--type "first prompt")
    (planbridge-test--wait (lambda () (string-match-p "Slowly answering" (planbridge-test--buffer-text)))
                           "the turn to stream")
    (let ((session (current-buffer))
          (id planbridge--session-id))
      (with-current-buffer (planbridge-sessions)
        (goto-char (point-min))
        (let ((err (cl-letf (((symbol-function 'yes-or-no-p) (lambda (_) t)))
                     (should-error (call-interactively #'planbridge-sessions-delete)
                                   :type 'user-error))))
          (should (string-match-p "\\`planbridge: A turn is running\\|\\`planbridge: a turn is running" (cadr err))))
        (should (buffer-live-p session))
        (should (cl-find id (planbridge--request :session/list nil)
                         :key (lambda (s) (plist-get s :id)) :test #'equal))))))

;;; Goal, tracking, share and the Worktree fork
;;;

(defun planbridge-test--sent-recorder ()
  "Start recording the requests Emacs sends; return a function listing them.
The returned function, called with a method name, returns the params
of each request of that method sent so far, oldest first; called with
`stop', it stops recording."
  (let* ((sent nil)
         (record (lambda (_conn &rest args) (push args sent))))
    (advice-add 'jsonrpc-connection-send :before record)
    (lambda (method)
      (if (eq method 'stop)
          (advice-remove 'jsonrpc-connection-send record)
        (cl-loop for m in (reverse sent)
                 when (equal (planbridge--method-name (plist-get m :method)) method)
                 collect (plist-get m :params))))))

(defun planbridge-test--file (relative)
  "Return the contents of RELATIVE in the test repository, or nil."
  (let ((file (expand-file-name relative planbridge-test--repo)))
    (and (file-exists-p file)
         (with-temp-buffer
           (insert-file-contents-literally file)
           (buffer-string)))))

(defun planbridge-test--tracking-text ()
  "Return the tracking section of the current buffer, or nil."
  (let ((pos (text-property-any (point-min) (point-max) 'planbridge-tracking t)))
    (when pos
      (buffer-substring-no-properties
       pos (next-single-property-change pos 'planbridge-tracking nil (point-max))))))

(defconst planbridge-test--steps-plan-text
  "Looked around.\n\n<proposed_plan>\n# Rename the greeting\n\n## Key Changes\n- Change hello to hi in hello.txt\n- Add a README\n\n## Validation\n- cat hello.txt\n</proposed_plan>\n"
  "A response proposing a plan with two steps.")

(ert-deftest planbridge-test-goal-accept ()
  "Accepting a plan with Execution Goal and a budget runs the Goal to complete."
  (planbridge-test-with-session
      (planbridge-test--script
       (list :text planbridge-test--plan-text)
       (list :text "Working toward the Goal.\n"
             :tool_calls (vector (list :name "edit_file"
                                       :arguments (list :path "hello.txt"
                                                        :old "hello" :new "hi"))
                                 (list :name "update_goal"
                                       :arguments (list :status "complete"
                                                        :summary "hello.txt says hi")))
             :usage (list :input_tokens 100 :output_tokens 20))
       (list :text "Goal done.\n" :usage (list :input_tokens 50 :output_tokens 10)))
    (let ((card (planbridge-test--propose)))
      (planbridge-test--press card "e")
      (planbridge-test--wait
       (lambda () (string-match-p "Execution +Goal" (planbridge-test--row card 'execution)))
       "Execution Goal")
      (cl-letf (((symbol-function 'read-string) (lambda (&rest _) "5000")))
        (planbridge-test--press card "b"))
      (planbridge-test--wait
       (lambda () (string-match-p "Budget +5000 tokens" (planbridge-test--row card 'budget)))
       "the budget row")
      (planbridge-test--press card "m")
      (planbridge-test--wait
       (lambda () (string-match-p "Mode +edits" (planbridge-test--row card 'mode)))
       "mode edits")
      (planbridge-test--press card "RET")
      (planbridge-test--wait
       (lambda () (string-match-p "Goal complete" (planbridge-test--header)))
       "the Goal to complete" 20)
      (planbridge-test--wait-turn-end 2)
      (should (equal (planbridge-test--file "hello.txt") "hi\n"))
      (let ((header (planbridge-test--header)))
        (should (string-match-p
                 "Goal complete · 180/5,000 tokens (3%) · 1 turn" header))
        (should (eq (get-text-property (string-match "Goal complete" (planbridge--header-line))
                                       'face (planbridge--header-line))
                    'planbridge-goal-done)))
      (let ((text (planbridge-test--buffer-text)))
        (should (string-match-p "^▶ Implement accepted plan as Goal$" text))
        (should (string-match-p "^◎ Goal active: " text))
        (should (string-match-p "^◎ Goal complete: hello.txt says hi$" text))
        (should-not (string-match-p "^\\[goal\\]" text)))
      (should (equal (plist-get planbridge--goal :status) "complete"))
      (should (= 1 (plist-get planbridge--goal :turns)))
      ;; The sessions list shows the Goal's state.
      (with-current-buffer (save-window-excursion (planbridge-sessions))
        (goto-char (point-min))
        (should (string-match-p "accepted · Goal complete"
                                (buffer-substring-no-properties (line-beginning-position)
                                                                (line-end-position)))))
      ;; A buffer opened again gets the Goal from `goal/get'.
      (let ((id planbridge--session-id))
        (kill-buffer (current-buffer))
        (with-current-buffer (planbridge-open-session id)
          (planbridge-test--wait (lambda () (equal (plist-get planbridge--goal :status) "complete"))
                                 "goal/get")
          (should (string-match-p "Goal complete · 180/5,000 tokens" (planbridge-test--header))))))))

(ert-deftest planbridge-test-goal-commands ()
  "The Goal commands go through goal/*: start, pause, budget, edit, resume, clear."
  (planbridge-test-with-session
      (planbridge-test--script
       (list :text (make-string 200 ?.) :delay_ms 30
             :usage (list :input_tokens 10 :output_tokens 5))
       (list :tool_calls (vector (list :name "update_goal"
                                       :arguments (list :status "complete"
                                                        :summary "greeted")))
             :usage (list :input_tokens 10 :output_tokens 5))
       (list :text "All done.\n"))
    (let ((sent (planbridge-test--sent-recorder)))
      (unwind-protect
          (progn
            ;; An objective that reads as a subcommand is refused here.
            (cl-letf (((symbol-function 'read-string) (lambda (&rest _) "clear the cache")))
              (should-error (call-interactively #'planbridge-goal) :type 'user-error))
            (should-not (funcall sent "goal/start"))
            (cl-letf (((symbol-function 'read-string) (lambda (&rest _) "Greet the world")))
              (call-interactively #'planbridge-goal))
            (planbridge-test--wait
             (lambda () (string-match-p "Goal active" (planbridge-test--header)))
             "the Goal to start")
            (planbridge-test--wait (lambda () (planbridge-test--events "text")) "the Goal turn")
            (planbridge-goal-pause)
            (planbridge-test--wait
             (lambda () (string-match-p "Goal paused" (planbridge-test--header)))
             "the Goal to pause")
            (planbridge-test--wait-turn-end 1)
            ;; Paused: no continuation was dispatched.
            (accept-process-output nil 0.3)
            (should (= 1 (length (planbridge-test--events "turn_start"))))
            (cl-letf (((symbol-function 'read-string) (lambda (&rest _) "1000")))
              (call-interactively #'planbridge-goal-budget))
            (planbridge-test--wait
             (lambda () (string-match-p "Goal paused · 15/1,000 tokens" (planbridge-test--header)))
             "the budget in the header")
            (cl-letf (((symbol-function 'read-string)
                       (lambda (_prompt initial &rest _)
                         (should (equal initial "Greet the world"))
                         "Greet the whole world")))
              (call-interactively #'planbridge-goal-edit))
            (planbridge-test--wait
             (lambda () (equal (plist-get planbridge--goal :objective) "Greet the whole world"))
             "the edited objective")
            (cl-letf (((symbol-function 'read-string) (lambda (&rest _) "wrap it up")))
              (call-interactively #'planbridge-goal-resume))
            (planbridge-test--wait
             (lambda () (string-match-p "Goal complete" (planbridge-test--header)))
             "the resumed Goal to complete" 20)
            (planbridge-test--wait-turn-end 2)
            (should (string-match-p "^▶ wrap it up$" (planbridge-test--buffer-text)))
            (planbridge-goal-clear)
            (planbridge-test--wait
             (lambda () (not (string-match-p "Goal complete" (planbridge-test--header))))
             "the Goal to be cleared")
            (should (string-match-p "^◎ Goal cleared$" (planbridge-test--buffer-text)))
            (should (equal (funcall sent "goal/start")
                           (list (list :session planbridge--session-id
                                       :objective "Greet the world"))))
            (should (= 1 (length (funcall sent "goal/pause"))))
            (should (equal (plist-get (car (funcall sent "goal/budget")) :budget) 1000))
            (should (equal (plist-get (car (funcall sent "goal/edit")) :objective)
                           "Greet the whole world"))
            (should (equal (plist-get (car (funcall sent "goal/resume")) :steering)
                           "wrap it up"))
            (should (= 1 (length (funcall sent "goal/clear")))))
        (funcall sent 'stop)))))

(ert-deftest planbridge-test-plan-steps ()
  "An implementation calling update_plan_step shows live step progress."
  (planbridge-test-with-session
      (planbridge-test--script
       (list :text planbridge-test--steps-plan-text)
       (list :text "Starting.\n"
             :tool_calls (vector (list :name "update_plan_step"
                                       :arguments (list :step "s1" :status "in_progress"))))
       (list :tool_calls (vector (list :name "edit_file"
                                       :arguments (list :path "hello.txt"
                                                        :old "hello" :new "hi"))
                                 (list :name "update_plan_step"
                                       :arguments (list :step "s1" :status "completed"))
                                 (list :name "update_plan_step"
                                       :arguments (list :step "s2" :status "in_progress")))
             :delay_ms 50)
       (list :text "Paused before the README.\n" :delay_ms 50))
    (let* ((card (planbridge-test--propose))
           (seen nil)
           (record (lambda (&rest _)
                     (push (list (planbridge-test--tracking-text)
                                 (planbridge-test--header))
                           seen))))
      (advice-add 'planbridge--draw-tracking :after record)
      (unwind-protect
          (progn
            (planbridge-test--press card "m")
            (planbridge-test--wait
             (lambda () (string-match-p "Mode +edits" (planbridge-test--row card 'mode)))
             "mode edits")
            (planbridge-test--press card "RET")
            (planbridge-test--wait-turn-end 2)
            ;; The handoff's "done" event follows the turn's end: wait for
            ;; it rather than race it.
            (planbridge-test--wait
             (lambda () (string-match-p "Implementation handoff done" (planbridge-test--buffer-text)))
             "the handoff to finish"))
        (advice-remove 'planbridge--draw-tracking record))
      (setq seen (nreverse seen))
      ;; The in-progress step reads in the gerund, the others imperative.
      (should (seq-find (lambda (s)
                          (and (car s)
                               (string-match-p "^Plan: Rename the greeting — 0/2 steps$" (car s))
                               (string-match-p "^  \\[>\\] Changing hello to hi in hello.txt$" (car s))
                               (string-match-p "^  \\[ \\] Add a README$" (car s))))
                        seen))
      (should (seq-find (lambda (s) (string-match-p "0/2 steps" (cadr s))) seen))
      (let ((final (planbridge-test--tracking-text)))
        (should (string-match-p "^Plan: Rename the greeting — 1/2 steps" final))
        (should (string-match-p "^  \\[x\\] Change hello to hi in hello.txt$" final))
        (should (string-match-p "^  \\[>\\] Adding a README$" final)))
      (should (string-match-p "1/2 steps" (planbridge-test--header)))
      ;; The step in progress is highlighted.
      (goto-char (point-min))
      (search-forward "[>] Adding a")
      (should (eq (get-text-property (point) 'face) 'planbridge-tracking-active))
      ;; The section sits between the transcript and the prompt.
      (let ((text (planbridge-test--buffer-text)))
        (should (string-match-p "Paused before the README\\.\n─ turn 2 done\nℹ Implementation handoff done\n\nPlan: Rename the greeting"
                                text))
        (should (string-match-p "\\[>\\] Adding a README\n\n> \\'" text)))
      (should (equal (planbridge-test--file "hello.txt") "hi\n"))
      ;; The composer still works below it.
      (goto-char (point-max))
      (insert "next")
      (should (equal (planbridge--composer-text) "next")))))

(ert-deftest planbridge-test-resume-after-restart ()
  "After a backend restart the implementation is paused; resuming finishes it."
  (planbridge-test-with-session
      (planbridge-test--script
       (list :text planbridge-test--steps-plan-text)
       (list :tool_calls (vector (list :name "update_plan_step"
                                       :arguments (list :step "s1" :status "completed"))))
       (list :text "The README comes later.\n")
       (list :tool_calls (vector (list :name "update_plan_step"
                                       :arguments (list :step "s2" :status "completed"))))
       (list :text "All steps done.\n"))
    (let ((card (planbridge-test--propose)))
      (planbridge-test--press card "RET")
      (planbridge-test--wait-turn-end 2)
      (planbridge-test--wait
       (lambda () (string-match-p "1/2 steps" (planbridge-test--header)))
       "one step done")
      (let ((proc (planbridge--conn-process planbridge--connection)))
        (signal-process (process-id proc) 'KILL)
        (planbridge-test--wait (lambda () (null planbridge--connection)) "the death to be noticed"))
      (let ((default-directory planbridge-test--repo))
        (should (eq (planbridge) (current-buffer))))
      (planbridge-test--wait
       (lambda () (string-match-p "1/2 steps (paused)" (planbridge-test--header)))
       "the paused implementation")
      (should (string-match-p "\\`\nPlan: Rename the greeting — 1/2 steps, paused: paused by restart (M-x planbridge-recover)\n  \\[x\\] Change hello to hi in hello.txt\n  \\[ \\] Add a README\n\\'"
                              (planbridge-test--tracking-text)))
      (call-interactively #'planbridge-resume-implementation)
      (planbridge-test--wait
       (lambda () (string-match-p "^ℹ Plan implementation done: 2/2 steps$"
                                  (planbridge-test--buffer-text)))
       "the implementation to finish")
      (planbridge-test--wait
       (lambda () (string-match-p "All steps done" (planbridge-test--buffer-text)))
       "the resumed turn")
      (should (string-match-p "^▶ Resume implementation$" (planbridge-test--buffer-text)))
      (should (equal (planbridge-test--tracking-text)
                     "\nPlan: Rename the greeting — 2/2 steps, done\n"))
      (should-not (string-match-p "steps" (planbridge-test--header))))))

(ert-deftest planbridge-test-todo-list ()
  "todo_write during a Plan turn shows the todo list above the prompt."
  (planbridge-test-with-session
      (planbridge-test--script
       (list :tool_calls
             (vector (list :name "todo_write"
                           :arguments
                           (list :items
                                 (vector (list :content "Read hello.txt" :status "completed")
                                         (list :content "Draft the plan" :status "in_progress")
                                         (list :content "Ask for approval" :status "pending"))))))
       (list :text "Planned.\n"))
    (planbridge-toggle-plan)
    (planbridge-test--wait-header "[Plan · ask]")
    (planbridge-test--type "plan the greeting")
    (planbridge-test--wait-turn-end 1)
    (planbridge-test--wait (lambda () (planbridge-test--tracking-text)) "the todo list")
    (should (equal (planbridge-test--tracking-text)
                   (concat "\nTodo: 1/3 done\n"
                           "  [x] Read hello.txt\n"
                           "  [>] Draft the plan\n"
                           "  [ ] Ask for approval\n")))
    (goto-char (point-min))
    (search-forward "[>] Draft")
    (should (eq (get-text-property (point) 'face) 'planbridge-tracking-active))
    (search-forward "[ ] Ask")
    (should-not (get-text-property (point) 'face))
    (let ((text (planbridge-test--buffer-text)))
      (should (string-match-p "Planned\\.\n─ turn 1 done\n\nTodo: 1/3 done" text))
      (should-not (string-match-p "^\\[todo\\]" text)))
    ;; A reopened buffer shows the same list (replay and session/tracking).
    (let ((id planbridge--session-id))
      (kill-buffer (current-buffer))
      (with-current-buffer (planbridge-open-session id)
        (planbridge-test--wait (lambda () (not planbridge--opening)) "session/open")
        (planbridge-test--wait (lambda () (planbridge-test--tracking-text)) "the todo list")
        (should (= 1 (planbridge-test--count "^Todo: 1/3 done$" (planbridge-test--buffer-text))))))))

(ert-deftest planbridge-test-compact ()
  "`planbridge-compact' asks the backend; the compacted event is a notice."
  (planbridge-test-with-session
      (planbridge-test--script (list :text "Hello there.\n")
                               (list :text "Summary: the person said hi."))
    (planbridge-test--type "hi")
    (planbridge-test--wait-turn-end 1)
    (let ((sent (planbridge-test--sent-recorder)))
      (unwind-protect
          (call-interactively #'planbridge-compact)
        (funcall sent 'stop))
      (should (equal (funcall sent "session/compact")
                     (list (list :session planbridge--session-id)))))
    (planbridge-test--wait
     (lambda () (string-match-p "^ℹ Conversation compacted (requested): context segment [0-9]+, [0-9]+ characters carried$"
                                (planbridge-test--buffer-text)))
     "the compacted notice")
    (should-not (string-match-p "^\\[compacted\\]" (planbridge-test--buffer-text)))))

(ert-deftest planbridge-test-resume-implementation ()
  "`planbridge-recover' and its older names send handoff/recover, the one recovery method."
  (planbridge-test-with-session "[]"
    (dolist (cmd '(planbridge-recover planbridge-resume-implementation
                                      planbridge-retry-plan-implementation))
      ;; The same message twice would be folded into one line ("[2 times]").
      (with-current-buffer (messages-buffer)
        (let ((inhibit-read-only t)) (erase-buffer)))
      (let ((sent (planbridge-test--sent-recorder))
            (messages (planbridge-test--messages-mark)))
        (unwind-protect
            (call-interactively cmd)
          (funcall sent 'stop))
        (should (equal (funcall sent "handoff/recover")
                       (list (list :session planbridge--session-id))))
        (should-not (funcall sent "implementation/resume"))
        (should-not (funcall sent "handoff/retry"))
        ;; Nothing waits: the backend says so, as a message.
        (planbridge-test--wait
         (lambda () (string-match-p "^planbridge: Nothing to recover"
                                    (planbridge-test--messages-since messages)))
         "the answer")))))

(ert-deftest planbridge-test-share ()
  "Sharing confirms, lists the links, copies one, and never logs a link."
  (planbridge-test-with-session "[]"
    (let ((messages (planbridge-test--messages-mark))
          (asked nil)
          (kill-ring nil)
          (sent (planbridge-test--sent-recorder)))
      (unwind-protect
          (progn
            ;; Declining shares nothing.
            (cl-letf (((symbol-function 'yes-or-no-p) (lambda (&rest _) nil)))
              (should-error (call-interactively #'planbridge-share) :type 'user-error))
            (should-not (funcall sent "share/start"))
            (cl-letf (((symbol-function 'yes-or-no-p)
                       (lambda (prompt) (push prompt asked) t))
                      ((symbol-function 'completing-read)
                       (lambda (_prompt table &rest _)
                         (should (equal table '("view" "full" "owner")))
                         "full")))
              (call-interactively #'planbridge-share)))
        (funcall sent 'stop))
      (should (string-match-p "secrets" (car asked)))
      (let* ((url (car kill-ring))
             (secret (and url (cadr (split-string url "#k=")))))
        (should (string-match-p "\\`http://127\\.0\\.0\\.1:[0-9]+/.*#k=." url))
        (should (> (length secret) 16))
        (let ((logged (planbridge-test--messages-since messages)))
          (should (string-match-p "^planbridge: Copied the full link (expires " logged))
          (should-not (string-match-p (regexp-quote secret) logged))
          (should-not (string-match-p "http" logged)))
        (with-current-buffer (jsonrpc-events-buffer planbridge--connection)
          (should-not (string-match-p (regexp-quote secret) (buffer-string))))
        (let ((list (get-buffer (format "*planbridge share: %s*" planbridge--session-id))))
          (should list)
          (with-current-buffer list
            (should (string-match-p "^ full +\\[copy\\] expires .*#k=" (buffer-string)))
            (should (string-match-p "^Transport: direct" (buffer-string)))
            (should (= 3 (planbridge-test--count "\\[copy\\]" (buffer-string))))
            (should (string-match-p (regexp-quote url) (buffer-string)))))
        (should (= 3 (length (plist-get (jsonrpc-request planbridge--connection :share/links
                                                         (list :session planbridge--session-id))
                                        :links))))
        (call-interactively #'planbridge-share-stop)
        (planbridge-test--wait
         (lambda () (string-match-p "^planbridge: Sharing stopped"
                                    (planbridge-test--messages-since messages)))
         "share/stop")
        (should-not (get-buffer (format "*planbridge share: %s*" planbridge--session-id)))
        (should (seq-empty-p (plist-get (jsonrpc-request planbridge--connection :share/links
                                                         (list :session planbridge--session-id))
                                        :links)))
        (should-not (string-match-p (regexp-quote secret)
                                    (planbridge-test--messages-since messages)))))))

(ert-deftest planbridge-test-share-relay ()
  "With `planbridge-share-relay' the links are the relay's and the buffer says so."
  (let* ((relay (start-process "planbridge-relay" nil (planbridge-test--program)
                               "relay" "--listen" "127.0.0.1:0"))
         (out ""))
    (set-process-filter relay (lambda (_ s) (setq out (concat out s))))
    (unwind-protect
        (progn
          (planbridge-test--wait (lambda () (string-match "listening on \\(http://[^ \n]+\\)" out))
                                 "the relay")
          (let ((planbridge-share-relay (match-string 1 out)))
            (planbridge-test-with-session "[]"
              (let ((kill-ring nil))
                (cl-letf (((symbol-function 'yes-or-no-p) (lambda (&rest _) t))
                          ((symbol-function 'completing-read) (lambda (&rest _) "view")))
                  (call-interactively #'planbridge-share))
                (should (string-prefix-p (concat planbridge-share-relay "/r/") (car kill-ring)))
                (should (string-match-p "#k=.+&t=view\\'" (car kill-ring)))
                (with-current-buffer (format "*planbridge share: %s*" planbridge--session-id)
                  (should (string-match-p "^Transport: relay" (buffer-string))))
                (call-interactively #'planbridge-share-stop)))))
      (delete-process relay))))

(ert-deftest planbridge-test-worktree-fork ()
  "A Worktree acceptance opens the fork's buffer in the planning buffer's windows."
  (planbridge-test-with-session planbridge-test--propose-and-implement
    (let ((planning (current-buffer))
          (id planbridge--session-id))
      (should (get-buffer-window planning t))
      (let ((card (planbridge-test--propose)))
        (planbridge-test--press card "l")
        (planbridge-test--wait
         (lambda () (string-match-p "Location +Worktree" (planbridge-test--row card 'location)))
         "Worktree")
        (planbridge-test--wait
         (lambda () (string-match-p "\\`the fork starts from HEAD; no uncommitted changes stay behind"
                                    (planbridge-test--row card 'notice)))
         "the fork notice")
        (planbridge-test--press card "m")
        (planbridge-test--wait
         (lambda () (string-match-p "Mode +edits" (planbridge-test--row card 'mode)))
         "mode edits")
        (cl-letf (((symbol-function 'read-string) (lambda (&rest _) "plan/rename")))
          (planbridge-test--press card "RET")))
      (planbridge-test--wait (lambda () (null (get-buffer-window-list planning nil t)))
                             "the planning buffer to leave its windows" 20)
      (let* ((fork-id (plist-get planbridge--info :forked_to))
             (fork (gethash fork-id planbridge--buffers))
             (dir (expand-file-name ".worktrees/rename/" planbridge-test--repo)))
        (should (string-prefix-p "s-" fork-id))
        (should-not (equal fork-id id))
        (should (buffer-live-p fork))
        (should (get-buffer-window fork t))
        (planbridge-test--wait
         (lambda () (equal (planbridge-test--file ".worktrees/rename/hello.txt") "hi\n"))
         "the fork to edit hello.txt" 20)
        ;; The source checkout is untouched.
        (should (equal (planbridge-test--file "hello.txt") "hello\n"))
        ;; The planning buffer stays, marked ended.
        (should (buffer-live-p planning))
        (should (string-match-p "ended → fork plan/rename" (planbridge-test--header)))
        (should (string-match-p "^⑂ Continued in a Worktree fork: branch plan/rename in .*\\.worktrees/rename \\[open\\]$"
                                (planbridge-test--buffer-text)))
        (with-current-buffer fork
          (planbridge-test--wait
           (lambda () (string-match-p "Done: hello.txt says hi"
                                      (planbridge-test--buffer-text)))
           "the fork's implementation turn" 20)
          (should (equal (file-name-as-directory
                          (file-truename (plist-get planbridge--info :workspace)))
                         (file-truename dir)))
          (should-not (string-match-p "ended" (planbridge-test--header)))
          ;; The plan's progress came along with the implementation.
          (planbridge-test--wait
           (lambda () (string-match-p "\\`\nPlan: Rename the greeting — 0/1 steps"
                                      (or (planbridge-test--tracking-text) "")))
           "the fork's plan steps"))
        (should-not (planbridge-test--tracking-text))))))

(ert-deftest planbridge-test-events-held-while-opening ()
  "Events notified while `session/open' is in flight are held in order."
  (let ((planbridge--buffers (make-hash-table :test #'equal)))
    (with-temp-buffer
      (planbridge-session-mode)
      (setq planbridge--session-id "s-held")
      (puthash "s-held" (current-buffer) planbridge--buffers)
      (setq planbridge--opening t)
      (dolist (seq '(1 2))
        (planbridge-handle-notification
         nil 'session/event (list :session "s-held" :seq seq :kind "notice"
                                  :data (list :message (format "n%d" seq)))))
      (should (equal (mapcar (lambda (e) (plist-get e :seq)) planbridge--opening) '(2 1)))
      (should (= 0 planbridge--last-seq)))))

(ert-deftest planbridge-test-share-listen ()
  "`planbridge-share-listen' reaches the backend's command line."
  (let ((planbridge-state-dir nil))
    (let ((planbridge-share-listen nil))
      (should-not (member "--share-listen" (planbridge--command))))
    (let ((planbridge-share-listen "127.0.0.1:8765"))
      (should (equal (last (planbridge--command) 2)
                     '("--share-listen" "127.0.0.1:8765"))))))

(ert-deftest planbridge-test-render-tracking-events ()
  "Goal, todo, steps, compacted, forked and status events render as lines."
  (with-temp-buffer
    (planbridge-session-mode)
    (let ((planbridge--replaying t))
      (planbridge--handle-event
       '(:seq 1 :kind "goal"
              :data (:goal (:id "g-1" :objective "Ship it" :status "active" :budget 0
                                :tokens_used 0 :turns 0)
                           :summary "Goal active · 0 tokens (no budget) · 0 turns"
                           :kickoff_pending t)))
      (planbridge--handle-event
       '(:seq 2 :kind "goal"
              :data (:goal (:id "g-1" :objective "Ship it" :status "active" :budget 0
                                :tokens_used 120 :turns 1)
                           :summary "Goal active · 120 tokens (no budget) · 1 turn")))
      (should (equal (planbridge-test--header)
                     "[?] Goal active · 120 tokens (no budget) · 1 turn · disconnected"))
      (planbridge--handle-event
       '(:seq 3 :kind "goal"
              :data (:goal (:id "g-1" :objective "Ship it" :status "blocked" :reason "no access"
                                :budget 0 :tokens_used 150 :turns 2)
                           :summary "Goal blocked · 150 tokens (no budget) · 2 turns")))
      (planbridge--handle-event
       '(:seq 4 :kind "steps"
              :data (:title "Ship it" :artifact "work://plans/accepted-1.md" :status "paused"
                            :reason "paused by restart"
                            :steps [(:id "s1" :imperative "Add a flag" :gerund "Adding a flag"
                                         :status "completed")
                                    (:id "s2" :imperative "Test it" :gerund "Testing it"
                                         :status "blocked")
                                    (:id "s3" :imperative "Document it" :gerund "Documenting it"
                                         :status "skipped")
                                    (:id "s4" :imperative "Ship it" :gerund "Shipping it"
                                         :status "pending")])))
      (planbridge--handle-event '(:seq 5 :kind "todo" :data (:items [])))
      (should (equal (planbridge-test--tracking-text)
                     (concat "\nPlan: Ship it — 2/4 steps, paused: paused by restart (M-x planbridge-recover)\n"
                             "  [x] Add a flag\n"
                             "  [!] Test it\n"
                             "  [-] Document it\n"
                             "  [ ] Ship it\n")))
      (should (string-match-p " 2/4 steps (paused) " (planbridge-test--header)))
      (planbridge--handle-event
       '(:seq 6 :kind "compacted" :data (:segment 2 :reason "auto" :chars 900)))
      (planbridge--handle-event
       '(:seq 7 :kind "forked" :data (:fork "s-fork" :branch "plan/x" :dir "/tmp/r/.worktrees/x")))
      (planbridge--handle-event
       '(:seq 8 :kind "status" :data (:plan :json-false :mode "ask" :busy :json-false
                                            :goal "Goal blocked · 150 tokens (no budget) · 2 turns"
                                            :forked_to "s-fork"))))
    (let ((text (planbridge-test--buffer-text)))
      ;; One line when the Goal starts, one per change of its status.
      (should (= 2 (planbridge-test--count "^◎ Goal" text)))
      (should (string-match-p "^◎ Goal active: Ship it$" text))
      (should (string-match-p "^◎ Goal blocked: no access$" text))
      (should (string-match-p "^⏸ Plan implementation paused (paused by restart); recover with M-x planbridge-recover$" text))
      (should (string-match-p "^ℹ Conversation compacted (auto): context segment 2, 900 characters carried$" text))
      (should (string-match-p "^⑂ Continued in a Worktree fork: branch plan/x in /tmp/r/\\.worktrees/x \\[open\\]$" text))
      (should-not (string-match-p "^\\[[a-z]+\\] " text))
      ;; The plan's progress went to the fork.
      (should-not (planbridge-test--tracking-text)))
    ;; A live status change of the Goal is a line too.
    (planbridge--handle-event
     '(:seq 9 :kind "goal"
            :data (:goal (:id "g-1" :objective "Ship it" :status "paused" :reason "paused by you"
                              :budget 0 :tokens_used 150 :turns 2)
                         :summary "Goal paused · 150 tokens (no budget) · 2 turns")))
    (should (string-match-p "^◎ Goal paused: paused by you$"
                            (planbridge-test--buffer-text)))
    (should (equal (planbridge-test--header)
                   "[ask] ended → fork plan/x · Goal paused · 150 tokens (no budget) · 2 turns · disconnected"))))

(ert-deftest planbridge-test-dispatch ()
  "The transient cockpit is defined with the session commands."
  (should (commandp 'planbridge-dispatch))
  (let ((layout (format "%S" (get 'planbridge-dispatch 'transient--layout))))
    (dolist (cmd '(planbridge-toggle-plan planbridge-cycle-permission-mode
                                          planbridge-show-approval
                                          planbridge-recover
                                          planbridge-save-plan planbridge-sessions
                                          planbridge-parked
                                          planbridge-interrupt planbridge-plan-status
                                          planbridge-goal planbridge-goal-pause
                                          planbridge-goal-resume planbridge-goal-budget
                                          planbridge-goal-edit planbridge-goal-clear
                                          planbridge-compact
                                          planbridge-share planbridge-share-stop))
      (should (commandp cmd))
      (should (string-match-p (regexp-quote (symbol-name cmd)) layout))))
  (with-temp-buffer
    (planbridge-session-mode)
    (should (eq (key-binding (kbd "C-c C-d")) #'planbridge-dispatch))))

(ert-deftest planbridge-test-tmux ()
  "The real-terminal test, elisp/test/tmux-test.sh, passes."
  (let ((script (expand-file-name "test/tmux-test.sh"
                                  (file-name-directory planbridge-test--source))))
    ;; No skipping: .ci/run installs tmux, and a missing tool must fail.
    (unless (executable-find "tmux")
      (ert-fail "tmux is not installed (.ci/run installs it)"))
    (let* ((status nil)
           (output (with-temp-buffer
                     (setq status (call-process "bash" nil t nil script))
                     (buffer-string))))
      (unless (equal (list status (car (last (split-string (string-trim output) "\n"))))
                     (list 0 "tmux-test: ok"))
        (ert-fail (format "tmux-test.sh exited %s:\n%s" status output))))))


;;; Tests of issue 17: calm, discoverable, never surprising
;;;

(ert-deftest planbridge-test-card-never-takes-focus ()
  "A proposal arriving while the person types elsewhere takes no focus.
The card is displayed next to the session, unselected; a message says
how to review it; keys typed in the other buffer never reach it."
  (planbridge-test-with-session (planbridge-test--script (list :text planbridge-test--plan-text))
    (should-not planbridge-select-approval-card)
    (planbridge-toggle-plan)
    (planbridge-test--wait-header "[Plan · ask]")
    (delete-other-windows)
    (switch-to-buffer (current-buffer))
    (let* ((session (current-buffer))
           (code (get-buffer-create "*planbridge-test code*"))
           (code-win (split-window-right))
           (messages (planbridge-test--messages-mark)))
      (unwind-protect
          (progn
            (set-window-buffer code-win code)
            (select-window code-win)
            (set-buffer code)
            (with-current-buffer session
              (goto-char (point-max))
              (insert "rename the greeting")
              (planbridge-send))
            ;; The person keeps typing in the code buffer.
            (execute-kbd-macro (kbd "l m c e"))
            (let ((card (with-current-buffer session (planbridge-test--wait-card))))
              (execute-kbd-macro (kbd "l m RET"))
              (should (eq (selected-window) code-win))
              (should (eq (window-buffer code-win) code))
              (should (equal (with-current-buffer code (buffer-string)) "lmcelm\n"))
              (should (get-buffer-window card))
              (should-not (eq (get-buffer-window card) code-win))
              (planbridge-test--wait
               (lambda () (string-match-p "^planbridge: Plan proposed — C-c C-a to review$"
                                          (planbridge-test--messages-since messages)))
               "the message")
              (with-current-buffer session
                (let ((sel (plist-get (planbridge-test--approval) :selection)))
                  (should (eq t (plist-get (planbridge-test--approval) :pending)))
                  (should (equal (plist-get sel :location) "here"))
                  (should (equal (plist-get sel :mode) "ask"))
                  (should (equal (plist-get sel :context) "current")))
                ;; C-c C-a goes to the card.
                (call-interactively #'planbridge-show-approval)
                (planbridge-test--wait (lambda () (eq (window-buffer (selected-window)) card))
                                       "the card to be selected"))))
        (kill-buffer code)))))

(ert-deftest planbridge-test-card-hidden-session-no-window ()
  "With the session buffer not visible, the card is not displayed at all."
  (planbridge-test-with-session (planbridge-test--script (list :text planbridge-test--plan-text))
    (planbridge-toggle-plan)
    (planbridge-test--wait-header "[Plan · ask]")
    (delete-other-windows)
    (let ((session (current-buffer))
          (code (get-buffer-create "*planbridge-test code*")))
      (unwind-protect
          (progn
            (switch-to-buffer code)
            (with-current-buffer session
              (planbridge-test--type "rename the greeting")
              (planbridge-test--wait-turn-end 1)
              (planbridge-test--wait (lambda () (planbridge--card-live-p)) "the card")
              (should-not (get-buffer-window (planbridge--card-live-p) t))
              (should (string-match-p "1 plan" (planbridge-test--header)))
              (should (string-match-p "1 plan to review" planbridge--global-indicator)))
            (should (eq (window-buffer (selected-window)) code))
            (should (one-window-p)))
        (kill-buffer code)))))

(ert-deftest planbridge-test-prompt-while-plan-waits ()
  "A prompt typed while a card waits asks: feedback, queue or keep editing."
  (planbridge-test-with-session
      (planbridge-test--script (list :text planbridge-test--plan-text)
                               (list :text "Revised.\n"))
    (planbridge-test--propose)
    (let ((sent (planbridge-test--sent-recorder)))
      (unwind-protect
          (progn
            ;; Keep editing: nothing is sent, the text stays.
            (cl-letf (((symbol-function 'read-multiple-choice) (lambda (&rest _) '(?c "cancel"))))
              (planbridge-test--type "also update the README"))
            (should (equal (planbridge--composer-text) "also update the README"))
            (should-not (funcall sent "session/submit"))
            ;; Queue: the plan keeps waiting.
            (cl-letf (((symbol-function 'read-multiple-choice) (lambda (&rest _) '(?q "queue"))))
              (call-interactively #'planbridge-send))
            (should (equal (planbridge--composer-text) ""))
            (planbridge-test--wait (lambda () (funcall sent "session/queue")) "session/queue")
            (should (equal (plist-get (car (funcall sent "session/queue")) :text)
                           "also update the README"))
            (planbridge-test--wait
             (lambda () (string-match-p "^… queued: also update the README$"
                                        (planbridge-test--buffer-text)))
             "the queued line")
            (should (eq t (plist-get (planbridge-test--approval) :pending)))
            (should (equal "proposed" (plist-get (planbridge-test--status) :proposal_status)))
            ;; Feedback: the agent revises the plan.
            (cl-letf (((symbol-function 'read-multiple-choice) (lambda (&rest _) '(?f "feedback"))))
              (planbridge-test--type "use hey instead"))
            (planbridge-test--wait (lambda () (funcall sent "approval/feedback")) "approval/feedback")
            (should (equal (plist-get (car (funcall sent "approval/feedback")) :text)
                           "use hey instead"))
            (should-not (funcall sent "session/submit"))
            (planbridge-test--wait
             (lambda () (string-match-p "^▶ Feedback: use hey instead$" (planbridge-test--buffer-text)))
             "the feedback turn"))
        (funcall sent 'stop)))))

(ert-deftest planbridge-test-slash-commands ()
  "/help is local, an unknown /cmd is an error, slash commands complete.
C-h m lists them with the main commands."
  (planbridge-test-with-session "[{\"text\": \"as a prompt\\n\"}]"
    (let ((sent (planbridge-test--sent-recorder)))
      (unwind-protect
          (progn
            (planbridge-test--type "/help")
            (should (equal (planbridge--composer-text) ""))
            (let ((text (planbridge-test--buffer-text)))
              (should (string-match-p "^ℹ Slash commands:$" text))
              (should (string-match-p "^  /plan status +show the posture" text))
              (should (string-match-p "^  /goal resume +resume the Goal" text)))
            (goto-char (point-max))
            (insert "/frobnicate now")
            (let ((err (should-error (call-interactively #'planbridge-send) :type 'user-error)))
              (should (string-match-p "Unknown command /frobnicate; /help lists the commands"
                                      (cadr err))))
            (should (equal (planbridge--composer-text) "/frobnicate now"))
            (should-not (funcall sent "session/submit"))
            ;; C-u RET sends it as a prompt anyway.
            (let ((current-prefix-arg '(4)))
              (call-interactively #'planbridge-send))
            (planbridge-test--wait (lambda () (funcall sent "session/submit")) "the submit")
            (should (equal (plist-get (car (funcall sent "session/submit")) :text) "/frobnicate now")))
        (funcall sent 'stop))
      (planbridge-test--wait-turn-end 1)
      ;; Completion at point offers the slash commands.
      (goto-char (point-max))
      (insert "/go")
      (let ((capf (planbridge-completion-at-point)))
        (should capf)
        (should (member "/goal pause" (all-completions "/go" (nth 2 capf))))
        (should-not (all-completions "/x" (nth 2 capf))))
      (should (eq (key-binding (kbd "TAB")) #'planbridge-complete-or-indent))
      (planbridge-complete-or-indent)
      (should (string-prefix-p "/goal" (planbridge--composer-text)))
      (delete-region planbridge--input-start (point-max))
      (insert "no slash")
      (should-not (planbridge-completion-at-point))
      ;; In the transcript, TAB goes to the composer past the last button.
      (goto-char (point-min))
      (planbridge-complete-or-indent)
      (should (= (point) (point-max)))
      ;; C-h m.
      (let ((help (with-temp-buffer
                    (let ((doc (documentation 'planbridge-session-mode)))
                      (insert (substitute-command-keys doc))
                      (buffer-string)))))
        (dolist (want '("/plan status" "/compact" "/goal OBJ" "/help" "C-j"
                        "M-p" "C-c C-a" "planbridge-restore-draft" "planbridge-interrupt"))
          (should (string-match-p (regexp-quote want) help)))))))

(ert-deftest planbridge-test-history-and-prompt-navigation ()
  "M-p, M-n and M-r recall prompts; C-c C-p and C-c C-n move between them."
  (planbridge-test-with-session "[{\"text\": \"one\\n\"}, {\"text\": \"two\\n\"}]"
    (planbridge-test--type "first prompt")
    (planbridge-test--wait-turn-end 1)
    (planbridge-test--type "second prompt")
    (planbridge-test--wait-turn-end 2)
    (goto-char (point-max))
    (should (eq (key-binding (kbd "M-p")) #'planbridge-previous-input))
    (call-interactively #'planbridge-previous-input)
    (should (equal (planbridge--composer-text) "second prompt"))
    (call-interactively #'planbridge-previous-input)
    (should (equal (planbridge--composer-text) "first prompt"))
    (call-interactively #'planbridge-next-input)
    (should (equal (planbridge--composer-text) "second prompt"))
    (call-interactively #'planbridge-next-input)
    (should (equal (planbridge--composer-text) ""))
    (planbridge-search-input "fir")
    (should (equal (planbridge--composer-text) "first prompt"))
    (delete-region planbridge--input-start (point-max))
    ;; Prompt navigation in the transcript.
    (goto-char (point-max))
    (planbridge-previous-prompt 1)
    (should (looking-at "▶ second prompt$"))
    (planbridge-previous-prompt 1)
    (should (looking-at "▶ first prompt$"))
    (should-error (planbridge-previous-prompt 1) :type 'user-error)
    (planbridge-next-prompt 1)
    (should (looking-at "▶ second prompt$"))
    (planbridge-next-prompt 1)
    (should (= (point) (point-max)))
    (should (eq (key-binding (kbd "C-j")) #'newline))))

(ert-deftest planbridge-test-header-percent-and-read-only-start ()
  "The header shows % literally; nothing can be typed before the transcript."
  (with-temp-buffer
    (planbridge-session-mode)
    (let ((planbridge--connection nil))
      (planbridge--handle-event
       '(:seq 1 :kind "goal" :data (:goal (:id "g1" :status "active" :objective "x")
                                          :summary "Goal active · 1,200/5,000 tokens (24%) · 2 turns")))
      (planbridge--handle-event '(:seq 2 :kind "notice" :data (:message "hello")))
      (setq planbridge--tracked-plan '(:status "running" :steps [(:status "completed") (:status "pending")]))
      ;; `format-mode-line' needs a real frame (see the tmux test); the
      ;; construct doubles each %, which the mode line shows as one.
      (should (equal header-line-format '((:eval (planbridge--header-line-format)))))
      (should (string-match-p "(24%%) · 2 turns · 1/2 steps" (planbridge--header-line-format)))
      (should-not (string-match-p "[^%]%[^%]" (planbridge--header-line-format)))
      ;; The header's own string keeps its properties.
      (should (string-match-p "(24%)" (planbridge--header-line)))
      (goto-char (point-min))
      (should-error (insert "x") :type 'text-read-only)
      (should (string-prefix-p "◎ Goal active" (buffer-string))))))

(ert-deftest planbridge-test-paragraphs-left-to-right ()
  "Session buffers lay paragraphs out left to right, for redisplay's sake.
With the direction left to redisplay, each keystroke's redisplay looks
for where the displayed paragraphs start (elisp/test/bench.el measures
it); right-to-left text within a line is still reordered."
  (with-temp-buffer
    (planbridge-session-mode)
    (should (eq bidi-paragraph-direction 'left-to-right))
    (should bidi-display-reordering)))

(ert-deftest planbridge-test-restart-renders-from-log ()
  "A new backend instance, or a log shorter than the buffer, re-renders.
A live event that repeats a seq also makes the buffer render the log."
  (planbridge-test-with-session "[{\"text\": \"the answer\\n\"}]"
    (planbridge-test--type "question")
    (planbridge-test--wait-turn-end 1)
    (let ((instance planbridge--instance)
          (old (planbridge--conn-process planbridge--connection)))
      (should (string-prefix-p "i-" instance))
      ;; Kill the backend; the next command starts a new instance.
      (signal-process (process-id old) 'KILL)
      (planbridge-test--wait (lambda () (null planbridge--connection)) "the death to be noticed")
      ;; Pretend the buffer had seen more than the log holds.
      (planbridge--with-transcript (insert "stale line from the old instance\n"))
      (let ((default-directory planbridge-test--repo))
        (planbridge))
      (planbridge-test--wait (lambda () (not planbridge--opening)) "the reopen")
      (should-not (equal instance planbridge--instance))
      (let ((text (planbridge-test--buffer-text)))
        (should-not (string-match-p "stale line" text))
        (should (= 1 (planbridge-test--count "^▶ question$" text)))
        (should (= 1 (planbridge-test--count "the answer" text)))))
    ;; Same instance, but the log ends before the buffer's last seq.
    (planbridge--with-transcript (insert "stale again\n"))
    (setq planbridge--last-seq (+ planbridge--last-seq 100))
    (planbridge--reopen)
    (planbridge-test--wait (lambda () (not planbridge--opening)) "the second reopen")
    (planbridge-test--wait (lambda () (not (string-match-p "stale again" (planbridge-test--buffer-text))))
                           "the re-render")
    (should (= 1 (planbridge-test--count "the answer" (planbridge-test--buffer-text))))
    ;; A live event with a seq already seen.
    (planbridge--with-transcript (insert "stale the third\n"))
    (planbridge-handle-notification planbridge--connection 'session/event
                                    (list :session planbridge--session-id
                                          :seq 1 :kind "notice" :data '(:message "replayed?")))
    (planbridge-test--wait (lambda () (not planbridge--opening)) "the third reopen")
    (planbridge-test--wait (lambda () (not (string-match-p "stale the third" (planbridge-test--buffer-text))))
                           "the third re-render")
    (should-not (string-match-p "replayed\\?" (planbridge-test--buffer-text)))
    (should (= 1 (planbridge-test--count "^▶ question$" (planbridge-test--buffer-text))))))

(ert-deftest planbridge-test-crash-mid-implementation-retried-turn-appears ()
  "Killing the backend mid-implementation and recovering shows the retried turn."
  (planbridge-test-with-session
      (planbridge-test--script
       (list :text planbridge-test--steps-plan-text)
       (list :text (concat "Slowly implementing" (make-string 300 ?.) "\n") :delay_ms 30)
       (list :tool_calls (vector (list :name "update_plan_step"
                                       :arguments (list :step "s1" :status "completed"))
                                 (list :name "update_plan_step"
                                       :arguments (list :step "s2" :status "completed"))))
       (list :text "Recovered and finished.\n"))
    (let ((card (planbridge-test--propose))
          (buf (current-buffer)))
      (planbridge-test--press card "RET")
      (planbridge-test--wait (lambda () (string-match-p "Slowly implementing" (planbridge-test--buffer-text)))
                             "the implementation to stream")
      (signal-process (process-id (planbridge--conn-process planbridge--connection)) 'KILL)
      (planbridge-test--wait (lambda () (null planbridge--connection)) "the death to be noticed")
      ;; Reopened by a new backend: the killed turn left a `turn_start'
      ;; without its end, and the header still says the session is idle.
      (let ((default-directory planbridge-test--repo))
        (should (eq (planbridge) buf)))
      (planbridge-test--wait (lambda () (not planbridge--opening)) "the reopen")
      (should-not (string-match-p "busy" (planbridge-test--header)))
      (should (= 1 (planbridge-test--count "^▶ rename the greeting$" (planbridge-test--buffer-text))))
      (call-interactively #'planbridge-resume-implementation)
      (should (eq (current-buffer) buf))
      (planbridge-test--wait
       (lambda () (string-match-p "Recovered and finished\\." (planbridge-test--buffer-text)))
       "the retried turn, without reopening")
      (should (eq (gethash planbridge--session-id planbridge--buffers) buf))
      (should (= 1 (planbridge-test--count "^▶ rename the greeting$" (planbridge-test--buffer-text)))))))

(ert-deftest planbridge-test-queued-prompt-survives-quit ()
  "Quitting Emacs mid-turn keeps a queued prompt: reopened, it shows as queued and runs on recovery."
  (planbridge-test-with-session
      (planbridge-test--script
       (list :text (concat "Slowly answering" (make-string 300 ?.) "\n") :delay_ms 30)
       (list :text "The queued one ran.\n"))
    (planbridge-test--type "first prompt")
    (planbridge-test--wait (lambda () (string-match-p "Slowly answering" (planbridge-test--buffer-text)))
                           "the first turn to stream")
    (planbridge-test--type "second prompt")
    (planbridge-test--wait (lambda () (string-match-p "^… queued: second prompt$" (planbridge-test--buffer-text)))
                           "the prompt to be queued")
    (let ((id planbridge--session-id))
      ;; Quit Emacs: the backend dies with it, mid-turn, and the buffers go.
      (signal-process (process-id (planbridge--conn-process planbridge--connection)) 'KILL)
      (planbridge-test--wait (lambda () (null planbridge--connection)) "the death to be noticed")
      (let ((kill-buffer-query-functions nil))
        (kill-buffer (current-buffer)))
      (clrhash planbridge--buffers)
      (setq planbridge-test--wire nil)
      ;; A new Emacs opens the project again.
      (let ((buf (let ((default-directory planbridge-test--repo)) (planbridge))))
        (with-current-buffer buf
          (should (equal planbridge--session-id id))
          (planbridge-test--wait (lambda () (not planbridge--opening)) "the reopen")
          (let ((text (planbridge-test--buffer-text)))
            (should (= 1 (planbridge-test--count "^… queued: second prompt$" text)))
            (should-not (string-match-p "The queued one ran" text)))
          (should (string-match-p "1 queued" (planbridge-test--header)))
          (should-not (string-match-p "busy" (planbridge-test--header)))
          (call-interactively #'planbridge-recover)
          (planbridge-test--wait
           (lambda () (string-match-p "The queued one ran\\." (planbridge-test--buffer-text)))
           "the queued prompt to run")
          (planbridge-test--wait (lambda () (not (string-match-p "queued" (planbridge-test--header))))
                                 "the header to drop the queued count")
          (should (= 1 (planbridge-test--count "^▶ second prompt$" (planbridge-test--buffer-text)))))))))

(ert-deftest planbridge-test-buffer-names-and-new-session ()
  "Buffers are named by project and title; C-u M-x planbridge starts anew.
Each new session replays the script from its first response."
  (planbridge-test-with-session "[{\"text\": \"first response\\n\"}]"
    (should (equal (buffer-name) "*planbridge: repo*"))
    (planbridge-test--type "rename the greeting")
    (planbridge-test--wait-turn-end 1)
    (should (equal (buffer-name) "*planbridge: repo · rename the greeting*"))
    (should-not (string-match-p "s-" (buffer-name)))
    (let* ((first (current-buffer))
           (second (let ((default-directory planbridge-test--repo))
                     (planbridge '(4)))))
      (should-not (eq first second))
      (with-current-buffer second
        (planbridge-test--wait (lambda () (not planbridge--opening)) "the new session")
        (should-not (equal planbridge--session-id
                           (buffer-local-value 'planbridge--session-id first)))
        (should (equal (buffer-name) "*planbridge: repo*"))
        (planbridge-test--type "again")
        (planbridge-test--wait
         (lambda () (string-match-p "first response" (planbridge-test--buffer-text)))
         "the first response in the new session")
        (should-not (string-match-p "script exhausted" (planbridge-test--buffer-text))))
      ;; Without the prefix, the most recent live buffer of the project.
      (should (memq (let ((default-directory planbridge-test--repo)) (planbridge))
                    (list first second))))))

(ert-deftest planbridge-test-implementation-recorded-and-files-reverted ()
  "The transcript records the implementation's settings; the header its
mode while it runs; buffers visiting the files it wrote are reverted."
  (planbridge-test-with-session planbridge-test--propose-and-implement
    (let* ((file (expand-file-name "hello.txt" planbridge-test--repo))
           (visiting (find-file-noselect file))
           (card (planbridge-test--propose)))
      (unwind-protect
          (progn
            (should (equal (with-current-buffer visiting (buffer-string)) "hello\n"))
            (planbridge-test--press card "m")
            (planbridge-test--wait (lambda () (string-match-p "Mode +edits" (planbridge-test--row card 'mode)))
                                   "mode edits")
            (planbridge-test--press card "RET")
            (planbridge-test--wait
             (lambda () (string-match-p "^ℹ The implementation runs with mode edits · model default · effort default · skills none · Here, current context$"
                                        (planbridge-test--buffer-text)))
             "the implementation line")
            (planbridge-test--wait
             (lambda () (string-match-p "Done: hello.txt says hi" (planbridge-test--buffer-text)))
             "the implementation")
            (planbridge-test--wait (lambda () (equal (with-current-buffer visiting (buffer-string)) "hi\n"))
                                   "the visiting buffer to be reverted")
            ;; While an implementation runs the header shows its mode.
            (let ((planbridge--info (list :busy t :implementation_mode "edits" :mode "ask")))
              (should (string-prefix-p "[implementing · edits]" (planbridge--header-line))))
            ;; The line is in the log: a reopened buffer shows it too.
            (let ((id planbridge--session-id))
              (planbridge-test--wait-turn-end 2)
              (kill-buffer (current-buffer))
              (with-current-buffer (planbridge-open-session id)
                (planbridge-test--wait (lambda () (not planbridge--opening)) "session/open")
                (should (string-match-p "^ℹ The implementation runs with mode edits"
                                        (planbridge-test--buffer-text))))))
        (kill-buffer visiting)))))

(ert-deftest planbridge-test-card-conveniences ()
  "Settings cycle both ways, the branch defaults to the plan's title, an
unchanged edit sends nothing and keeps the comments."
  (planbridge-test-with-session (planbridge-test--script (list :text planbridge-test--plan-text))
    (let ((card (planbridge-test--propose))
          (sent (planbridge-test--sent-recorder)))
      (unwind-protect
          (progn
            ;; Backward: ask → full-auto, then forward again.
            (with-current-buffer card
              (let ((current-prefix-arg '(4)))
                (call-interactively (key-binding (kbd "m")))))
            (planbridge-test--wait (lambda () (string-match-p "Mode +full-auto" (planbridge-test--row card 'mode)))
                                   "mode full-auto")
            (planbridge-test--press card "<backtab>")
            (planbridge-test--wait (lambda () (string-match-p "Mode +edits" (planbridge-test--row card 'mode)))
                                   "mode edits")
            (planbridge-test--press card "C")
            (planbridge-test--wait (lambda () (string-match-p "Context +Summary" (planbridge-test--row card 'context)))
                                   "context summary")
            ;; An unchanged edit: nothing sent, the comment stays.
            (with-current-buffer card
              (goto-char (point-min))
              (forward-line 1)
              (planbridge-approval-comment "hey"))
            (planbridge-test--press card "E")
            (with-current-buffer (format "*planbridge plan edit: %s*" planbridge--session-id)
              (call-interactively (key-binding (kbd "C-c C-c"))))
            (should-not (funcall sent "approval/edit"))
            (should (buffer-live-p card))
            (should (equal (buffer-local-value 'planbridge--card-comments card) '((1 . "hey"))))
            (should (eq :json-false (plist-get (planbridge-test--approval) :edited)))
            ;; The branch prompt offers one derived from the title.
            (should (equal (planbridge--branch-from-title "Add a --name flag to the greeter!")
                           "plan/add-a-name-flag-to-the-greeter"))
            (should-not (planbridge--branch-from-title "!!!"))
            (planbridge-test--press card "l")
            (planbridge-test--wait (lambda () (string-match-p "Location +Worktree" (planbridge-test--row card 'location)))
                                   "worktree")
            (let (prompt default)
              (cl-letf (((symbol-function 'read-string)
                         (lambda (p &optional _init _hist def &rest _)
                           (setq prompt p default def) "")))
                (with-current-buffer card
                  (condition-case nil
                      (call-interactively #'planbridge-approval-accept)
                    (user-error nil))))
              (should (equal default "plan/rename-the-greeting"))
              (should (string-match-p "plan/rename-the-greeting" prompt))))
        (funcall sent 'stop)))))

(ert-deftest planbridge-test-card-notice-is-filled ()
  "A long notice is filled over several rows, never cut."
  (let* ((notice (mapconcat #'identity (make-list 30 "blocker") " "))
         (text (planbridge--card-string
                (list :pending t :attempt "a-1" :title "T" :body "# T"
                      :notice notice :selection '(:location "here"))
                60 nil))
         (rows nil))
    (with-temp-buffer
      (insert text)
      (goto-char (point-min))
      (while (not (eobp))
        (when (eq (get-text-property (point) 'planbridge-row) 'notice)
          (push (buffer-substring-no-properties (point) (line-end-position)) rows))
        (forward-line 1)))
    (should (> (length rows) 2))
    (dolist (row rows) (should (<= (string-width row) 60)))
    (should (equal (mapconcat #'identity (nreverse rows) " ") notice))
    (should-not (seq-some (lambda (row) (string-match-p "…" row)) rows))))

(ert-deftest planbridge-test-permission-window ()
  "A permission question shows what would change and needs a typed answer."
  (let* ((dir (file-name-as-directory (make-temp-file "planbridge-perm-" t)))
         (default-directory dir)
         (asked nil))
    (unwind-protect
        (progn
          (with-temp-file (expand-file-name "a.txt" dir) (insert "old line\n"))
          (cl-letf (((symbol-function 'y-or-n-p) (lambda (&rest _) (error "A stray key could answer")))
                    ((symbol-function 'yes-or-no-p)
                     (lambda (prompt)
                       (setq asked prompt)
                       (with-current-buffer "*planbridge permission*"
                         (let ((text (buffer-string)))
                           (should (string-match-p "The agent asks to run write_file (edits need approval)" text))
                           (should (string-match-p "^-old line$" text))
                           (should (string-match-p "^\\+new line$" text))))
                       (should (get-buffer-window "*planbridge permission*"))
                       t)))
            (should (planbridge-ask-permission "s-1" "write_file"
                                               '(:path "a.txt" :content "new line\n")
                                               "edits need approval")))
          (should (string-match-p "Allow write_file a.txt" asked))
          (should-not (get-buffer "*planbridge permission*"))
          (cl-letf (((symbol-function 'yes-or-no-p)
                     (lambda (_)
                       (should (string-match-p "^\\$ rm -rf build$"
                                               (with-current-buffer "*planbridge permission*"
                                                 (buffer-string))))
                       nil)))
            (should-not (planbridge-ask-permission "s-1" "bash" '(:command "rm -rf build") ""))))
      (delete-directory dir t))))

(ert-deftest planbridge-test-permission-scope-effects ()
  "A question about a command that already changed files outside the scope.
It says what happened and asks to extend the scope, never to allow a run;
the kind reaches the permission function from the request."
  (let ((asked nil) (seen-kind 'unset))
    (cl-letf (((symbol-function 'yes-or-no-p)
               (lambda (prompt)
                 (setq asked prompt)
                 (with-current-buffer "*planbridge permission*"
                   (should (string-match-p
                            "A bash command changed files outside the declared scope (bash changed x.txt"
                            (buffer-string))))
                 nil)))
      (let ((planbridge--permission-kind "scope_effects"))
        (should-not (planbridge-ask-permission "s-1" "bash" '(:command "echo x > x.txt")
                                               "bash changed x.txt, outside the scope"))))
    (should (equal asked "Extend the scope to what it changed (no restores it)? "))
    (cl-letf (((symbol-function 'jsonrpc-running-p) (lambda (_) nil)))
      (let ((planbridge-permission-function
             (lambda (&rest _) (setq seen-kind planbridge--permission-kind) t)))
        (planbridge--answer-permission 'no-conn 1 "s-1" "bash" '(:command "true") "why" "scope_effects")
        (should (equal seen-kind "scope_effects"))
        (planbridge--answer-permission 'no-conn 2 "s-1" "bash" '(:command "true") "why")
        (should (null seen-kind))))))

(ert-deftest planbridge-test-quit-asks-while-busy ()
  "Quitting Emacs asks while a turn runs; the global indicator says so."
  (planbridge-test-with-session
      (format "[{\"text\": %S, \"delay_ms\": 40}]" (make-string 200 ?x))
    (planbridge-test--type "stream slowly")
    (planbridge-test--wait (lambda () (planbridge-test--events "text")) "streaming")
    (should (memq #'planbridge--kill-emacs-query kill-emacs-query-functions))
    (should (string-match-p "working" planbridge--global-indicator))
    (let (asked)
      (cl-letf (((symbol-function 'yes-or-no-p) (lambda (p) (setq asked p) nil)))
        (should-not (planbridge--kill-emacs-query)))
      (should (string-match-p "1 session is still working; quit anyway" asked)))
    (planbridge-interrupt)
    (planbridge-test--wait-turn-end 1)
    (cl-letf (((symbol-function 'yes-or-no-p) (lambda (_) (error "Asked while idle"))))
      (should (planbridge--kill-emacs-query)))
    (should (equal planbridge--global-indicator ""))))

(ert-deftest planbridge-test-retry-points-at-goal-resume ()
  "After a Goal kickoff error, retry says what to do: /goal resume."
  (planbridge-test-with-session "[{\"error\": \"provider down\"}]"
    (planbridge-test--type "/goal greet the world")
    (planbridge-test--wait
     (lambda () (member (plist-get planbridge--goal :status) '("paused" "blocked")))
     (format "the Goal to stop (is %S)" (plist-get planbridge--goal :status)))
    (planbridge-test--wait-turn-end 1)
    (let ((messages (planbridge-test--messages-mark))
          (status (plist-get planbridge--goal :status)))
      (call-interactively #'planbridge-retry-plan-implementation)
      (planbridge-test--wait
       (lambda () (string-match-p (format "^planbridge: Nothing to recover; the Goal is %s: resume it with M-x planbridge-goal-resume or /goal resume$"
                                          status)
                                  (planbridge-test--messages-since messages)))
       "the message"))))

(ert-deftest planbridge-test-render-event-methods ()
  "Each kind is a `planbridge-render-event' method; unknown kinds are logged."
  (dolist (kind '(user text tool_call tool_result blocked proposal diagnostic status
                       notice error queued turn_start turn_end corrupt compacted
                       approval approval_closed handoff summary goal todo steps forked))
    (should (cl-find-method #'planbridge-render-event nil (list `(eql ',kind) t))))
  (with-temp-buffer
    (planbridge-session-mode)
    (let ((planbridge--connection nil)
          (seen nil))
      (cl-letf (((symbol-function 'planbridge--log) (lambda (_c fmt &rest args) (push (apply #'format fmt args) seen))))
        (setq planbridge--connection 'fake)
        (planbridge--handle-event '(:seq 1 :kind "mystery" :data (:x 1))))
      (should (equal seen '("unknown event kind mystery")))
      (should (string-match-p "^\\[mystery\\] {\"x\":1}$" (buffer-string))))))

;;; Parked plans and the Plan: trailer
;;;

(defconst planbridge-test--plan-body
  "# Rename the greeting\n\n## Key Changes\n- Change hello to hi in hello.txt\n\n## Validation\n- cat hello.txt"
  "The body `planbridge-test--plan-text' proposes.")

(ert-deftest planbridge-test-park-start-and-trailer ()
  "P parks the plan and starts nothing; the parked list starts it once;
then the commit trailer names it in a commit message buffer."
  (planbridge-test-with-session planbridge-test--propose-and-implement
    (let* ((session-buf (current-buffer))
           (repo planbridge-test--repo)
           (card (planbridge-test--propose))
           (trailer (format "Plan: Rename the greeting (sha256:%s)"
                            (substring (secure-hash 'sha256 planbridge-test--plan-body) 0 12))))
      ;; No accepted plan yet: no trailer.
      (with-temp-buffer
        (setq default-directory repo)
        (should-error (planbridge-insert-plan-trailer) :type 'user-error))
      (should (eq (with-current-buffer card (key-binding (kbd "P")))
                  #'planbridge-approval-park))
      (planbridge-test--press card "P")
      (planbridge-test--wait (lambda () (not (buffer-live-p card))) "the card to close")
      (planbridge-test--wait
       (lambda () (equal "parked" (plist-get (planbridge-test--status) :proposal_status)))
       "the parked status")
      (planbridge-test--wait
       (lambda () (string-match-p "^ℹ Plan \"Rename the greeting\" approved and parked"
                                  (planbridge-test--buffer-text)))
       "the parked line")
      ;; Nothing ran.
      (should (equal 1 (length (planbridge-test--events "turn_end"))))
      (should (null (planbridge-test--events "handoff")))
      (let ((list-buf (planbridge-parked)))
        (with-current-buffer list-buf
          (should (eq major-mode 'planbridge-parked-mode))
          (should (equal 1 (length tabulated-list-entries)))
          (goto-char (point-min))
          (should (equal "Rename the greeting" (aref (tabulated-list-get-entry) 0)))
          (should (equal "here" (aref (tabulated-list-get-entry) 1)))
          (planbridge-parked-start-here)
          (should (null tabulated-list-entries)))
        (kill-buffer list-buf))
      (with-current-buffer session-buf
        (planbridge-test--wait
         (lambda () (seq-some (lambda (e) (string-match-p "\"done\"" (format "%S" e)))
                              (planbridge-test--events "handoff")))
         "the handoff to finish" 60)
        (should (equal "accepted" (plist-get (planbridge-test--status) :proposal_status))))
      (should (equal trailer (planbridge-plan-trailer repo)))
      ;; A git-commit message: the trailer goes before the comments.
      (with-temp-buffer
        (setq default-directory repo)
        (insert "Rename the greeting\n\n# Please enter the commit message.\n# On branch master\n")
        (planbridge-insert-plan-trailer)
        (should (equal (buffer-string)
                       (concat "Rename the greeting\n\n" trailer
                               "\n\n# Please enter the commit message.\n# On branch master\n")))
        ;; Once only.
        (planbridge-insert-plan-trailer)
        (should (= 1 (planbridge-test--count (regexp-quote trailer) (buffer-string)))))
      ;; An existing trailer paragraph is joined.
      (with-temp-buffer
        (setq default-directory repo)
        (insert "Rename\n\nBody text.\n\nSigned-off-by: A <a@b>\n")
        (planbridge-insert-plan-trailer)
        (should (equal (buffer-string)
                       (concat "Rename\n\nBody text.\n\nSigned-off-by: A <a@b>\n" trailer "\n")))))))

;; The timeout is bound around the session: the backend starts inside it.
(ert-deftest planbridge-test-approval-timeout ()
  "With `planbridge-approval-timeout' an undecided card closes as timed out.
The proposal becomes a draft and nothing runs."
  (let ((planbridge-approval-timeout 0.3))
    (planbridge-test-with-session planbridge-test--propose-and-implement
      (let ((card (planbridge-test--propose)))
        (planbridge-test--wait (lambda () (not (buffer-live-p card))) "the card to time out")
        (planbridge-test--wait
         (lambda () (string-match-p "^ℹ Approval timed out: nothing runs; the proposal is a draft now"
                                    (planbridge-test--buffer-text)))
         "the timed-out line")
        (should (equal "draft" (plist-get (planbridge-test--status) :proposal_status)))
        (should (equal 1 (length (planbridge-test--events "turn_end"))))
        (should (null (planbridge-test--events "handoff")))
        (should (equal '("timed_out")
                       (mapcar (lambda (o) (plist-get o :outcome))
                               (jsonrpc-request planbridge--connection :approval/outcomes
                                                (list :session planbridge--session-id)))))))))

(provide 'planbridge-test)
;;; planbridge-test.el ends here

(ert-deftest planbridge-test-card-scope-row-and-version-diff ()
  "The card shows the scope the plan declares; S edits it, d diffs versions."
  (planbridge-test-with-session planbridge-test--propose-and-implement
    (let* ((card (planbridge-test--propose))
           (lines (planbridge-test--card-lines card)))
      (should (string-match-p "^ S   Scope +hello\\.txt$" (planbridge-test--row card 'scope)))
      (cl-letf (((symbol-function 'read-string) (lambda (&rest _) "hello.txt, docs/ ,")))
        (planbridge-test--press card "S"))
      (planbridge-test--wait
       (lambda () (string-match-p "Scope +hello\\.txt, docs$" (planbridge-test--row card 'scope)))
       "the scope row")
      (should (= lines (planbridge-test--card-lines card)))
      ;; A path outside the workspace is refused in the backend's words.
      (let ((mark (planbridge-test--messages-mark)))
        (cl-letf (((symbol-function 'read-string) (lambda (&rest _) "../etc")))
          (planbridge-test--press card "S"))
        (planbridge-test--wait
         (lambda () (string-match-p "not a path inside the workspace"
                                    (planbridge-test--messages-since mark)))
         "the refusal"))
      (should (string-match-p "Scope +hello\\.txt, docs$" (planbridge-test--row card 'scope)))
      ;; The first version has nothing to diff against.
      (should (string-match-p "no earlier plan version"
                              (cadr (should-error (planbridge-test--press card "d")
                                                  :type 'user-error)))))))

(ert-deftest planbridge-test-report-buffer ()
  "A report renders as collapsible sections; its event is one summary line."
  (let ((report '(:title "Greet" :hash "0123456789abcdef" :base "fedcba9876543210"
                         :summary "3/3 steps · 5 files · 1 outside the plan"
                         :steps [(:id "s1" :text "Edit a.txt" :status "completed" :files ["a.txt"])
                                 (:id "s2" :text "Tidy" :status "completed" :files [] :no_change t)]
                         :files [(:path "a.txt" :status "modified" :added 1 :removed 1 :outside_plan :json-false)
                                 (:path "stray.txt" :status "added" :added 2 :removed 0 :outside_plan t)]
                         :validation [(:command "go test ./..." :ran t :exit 0)
                                      (:command "make lint" :ran :json-false)]
                         :scope_extensions ["stray.txt"]
                         :scope_restored [(:command "echo x > out.txt" :by "person" :paths ["out.txt"] :kept "sessions/s/review/b/restored/1"
                                                    :failed ["big.bin: too large"])]
                         :scope_unsettled ["make dist"])))
    (with-temp-buffer
      (planbridge--report-insert report)
      (planbridge-report-mode)
      (let ((text (buffer-string)))
        (should (string-match-p "^3/3 steps · 5 files · 1 outside the plan$" text))
        (should (string-match-p "^\\* Steps$" text))
        (should (string-match-p "^\\*\\* \\[completed\\] s2 Tidy (done, no change)$" text))
        (should (string-match-p "^   added    stray\\.txt \\+2 -0  OUTSIDE THE PLAN$" text))
        (should (string-match-p "^   ran (exit 0)  go test \\./\\.\\.\\.$" text))
        (should (string-match-p "^   not run  make lint$" text))
        (should (string-match-p "^\\* Scope extended to\n   stray\\.txt$" text))
        (should (string-match-p "^\\* Not held to the scope (stopped before its effects were compared)\n   `make dist`$" text))
        (should (string-match-p "^\\* Restored outside the scope\n   after `echo x > out\\.txt` (person): out\\.txt\n   what it left is kept in sessions/s/review/b/restored/1\n   not restored: big\\.bin: too large$" text)))
      (should buffer-read-only)
      ;; Sections fold: hiding the Steps body leaves its heading.
      (goto-char (point-min))
      (re-search-forward "^\\* Steps")
      (outline-hide-subtree)
      (should (outline-invisible-p (progn (forward-line 1) (line-end-position))))
      (goto-char (point-min))
      (re-search-forward "stray\\.txt \\+2")
      (should (equal (get-text-property (point) 'planbridge-report-file) "stray.txt")))
    (with-temp-buffer
      (planbridge-session-mode)
      (planbridge--handle-event (list :seq 1 :kind "report" :data report))
      (should (string-match-p "^ℹ Implementation report: 3/3 steps · 5 files · 1 outside the plan (M-x planbridge-review)$"
                              (planbridge-test--buffer-text)))
      (planbridge--handle-event (list :seq 2 :kind "scope"
                                      :data '(:paths ["a.txt"] :extensions ["stray.txt"]
                                                     :restored [(:command "rm b" :by "unattended" :paths ["b"])])))
      (should (string-match-p "^ℹ Scope extended to stray\\.txt; restored outside it after `rm b` (unattended): b$"
                              (planbridge-test--buffer-text))))))

(ert-deftest planbridge-test-review-buffer-file-diff ()
  "After an implementation, M-x planbridge-review shows the report; RET on
a file opens its diff against the base in `diff-mode'."
  (planbridge-test-with-session planbridge-test--propose-and-implement
    (let ((card (planbridge-test--propose)))
      (planbridge-test--press card "m")
      (planbridge-test--wait
       (lambda () (string-match-p "Mode +edits" (planbridge-test--row card 'mode)))
       "mode edits")
      (planbridge-test--press card "RET")
      (planbridge-test--wait-turn-end 2)
      (planbridge-test--wait
       (lambda () (string-match-p "Implementation handoff done" (planbridge-test--buffer-text)))
       "the handoff to finish")
      (let ((report (planbridge-review)))
        (unwind-protect
            (with-current-buffer report
              (should (eq major-mode 'planbridge-report-mode))
              (should (string-match-p "^0/1 steps · 1 file · 0 outside the plan$" (buffer-string)))
              (goto-char (point-min))
              (re-search-forward "^   modified hello\\.txt \\+1 -1$")
              (beginning-of-line)
              (let ((diff (call-interactively (key-binding (kbd "RET")))))
                (unwind-protect
                    (with-current-buffer diff
                      (should (eq major-mode 'diff-mode))
                      (should (equal (buffer-string)
                                     "--- a/hello.txt\n+++ b/hello.txt\n@@ -1 +1 @@\n-hello\n+hi\n")))
                  (kill-buffer diff)))
              ;; A line without a file is a user error.
              (with-current-buffer report
                (goto-char (point-min))
                (should-error (call-interactively (key-binding (kbd "RET"))) :type 'user-error)))
          (kill-buffer report))))))

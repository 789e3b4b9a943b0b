;;; planbridge.el --- Plan-mode coding agent sessions over JSON-RPC  -*- lexical-binding: t; -*-

;; Copyright (C) 2025 The planbridge authors

;; Author: The planbridge authors
;; Maintainer: The planbridge authors
;; Version: 0.1.0
;; Package-Requires: ((emacs "28.1") (jsonrpc "1.0.14"))
;; Keywords: tools, processes
;; URL: https://github.com/planbridge/planbridge

;; This file is not part of GNU Emacs.

;; This program is free software; you can redistribute it and/or modify
;; it under the terms of the GNU General Public License as published by
;; the Free Software Foundation, either version 3 of the License, or
;; (at your option) any later version.

;; This program is distributed in the hope that it will be useful,
;; but WITHOUT ANY WARRANTY; without even the implied warranty of
;; MERCHANTABILITY or FITNESS FOR A PARTICULAR PURPOSE.  See the
;; GNU General Public License for more details.

;; You should have received a copy of the GNU General Public License
;; along with this program.  If not, see <https://www.gnu.org/licenses/>.

;;; Commentary:

;; planbridge is the Emacs front end of the `planbridge' backend, a
;; coding agent with a sticky, read-only Plan posture.  One backend
;; process per Emacs serves every session; it speaks JSON-RPC 2.0 over
;; stdio and keeps sessions in SQLite, so they survive restarts.
;;
;; Usage:
;;
;;   M-x planbridge              session for the current project
;;   M-x planbridge-open-session  reopen a stored session by id
;;
;; In the session buffer, type at the prompt and press RET (or
;; C-c C-c) to send.  C-<tab> toggles Plan, S-<tab> cycles the
;; permission mode (ask → edits → full-auto), C-c C-k interrupts the
;; running turn.  The header line shows the posture, e.g. `[Plan · ask]'.
;; Slash commands such as `/plan status' are handled by the backend.
;;
;; When the agent proposes a plan, an approval card opens in the
;; `*planbridge approval: PROJECT*' buffer: the plan above a compact
;; Implementation section, one row per setting.  There, l, c, e, b, m
;; (or TAB), M, s and i change Location, Context, Execution, Budget,
;; Mode, Model, Skills and Instructions; RET accepts, f sends feedback
;; (with the comments made on plan lines with `;'), E edits the plan,
;; q hides the card (the header's "1 plan" brings it back, as does
;; C-c C-a) and C-g cancels it.  C-c TAB in the composer queues a
;; follow-up that runs after the implementation starts.
;;
;;   M-x planbridge-sessions     every stored session, RET opens one
;;   M-x planbridge-dispatch     a transient menu of the session commands
;;   M-x planbridge-retry-plan-implementation
;;                               resume an accepted plan's handoff
;;
;; A Goal (Execution = Goal on the card, M-x planbridge-goal, or
;; `/goal OBJECTIVE') keeps the agent working turn after turn until it
;; is complete, blocked, paused or out of budget; the header shows its
;; status, token use and turns.  planbridge-goal-pause, -resume,
;; -budget, -edit and -clear act on it.  Above the prompt, the todo
;; list the agent keeps and the steps of an accepted plan being
;; implemented are shown live ([ ] pending, [>] in progress, [x] done);
;; M-x planbridge-resume-implementation continues a paused one and
;; M-x planbridge-compact summarises the conversation.  A Worktree
;; acceptance continues in a fork session whose buffer takes the place
;; of the planning buffer, which stays, marked ended.
;;
;;   M-x planbridge-share        share links for browsers (asks first;
;;                               the chosen link is copied, never shown
;;                               in *Messages*)
;;   M-x planbridge-share-stop   every link stops working
;;
;; The wire log lives in the `*planbridge events*' buffer (bounded by
;; `planbridge-events-buffer-size'), as eglot does it.

;;; Code:

(require 'cl-lib)
(require 'seq)
(require 'subr-x)
(require 'jsonrpc)
(require 'button)
(require 'tabulated-list)
(require 'transient)

(declare-function project-root "project" (project))
(declare-function auth-source-search "auth-source" (&rest spec))
(declare-function url-host "url-parse" (url))
(declare-function url-generic-parse-url "url-parse" (url))
(declare-function markdown-mode "markdown-mode" ())


;;; Customization
;;;

(defgroup planbridge nil
  "Plan-mode coding agent sessions backed by the planbridge process."
  :prefix "planbridge-"
  :group 'tools)

(defcustom planbridge-program "planbridge"
  "The planbridge executable, a file name or a command on variable `exec-path'."
  :type 'string)

(defcustom planbridge-state-dir nil
  "Directory where the backend keeps its state, or nil for its default.
The default is $PLANBRIDGE_STATE_DIR or $XDG_STATE_HOME/planbridge."
  :type '(choice (const :tag "Backend default" nil) directory))

(defcustom planbridge-engine nil
  "The model engine the backend is told to use at `initialize'.
nil leaves the choice to the backend (its flags and environment).
\(script :file FILE) replays the model responses listed in FILE.
\(openai :base-url URL :model MODEL) talks to an OpenAI-compatible
endpoint; the API key is read from auth-source for URL's host and is
never written anywhere by planbridge."
  :type '(choice (const :tag "Backend default" nil)
                 (list :tag "Scripted replay"
                       (const script) (const :file) (file :must-match t))
                 (list :tag "OpenAI-compatible"
                       (const openai)
                       (const :base-url) (string :tag "Base URL")
                       (const :model) (string :tag "Model"))))

(defcustom planbridge-default-permission-mode "ask"
  "Permission mode given to sessions that `planbridge' creates.
Ask runs read-only tools and asks about the rest; edits also runs
file edits; full-auto runs everything.  Plan is independent of it."
  :type '(choice (const "ask") (const "edits") (const "full-auto")))

(defcustom planbridge-events-buffer-size 2000000
  "Maximum size in characters of the `*planbridge events*' wire log.
0 disables the log; nil means no limit."
  :type '(choice (const :tag "No limit" nil) natnum))

(defcustom planbridge-permission-function #'planbridge-ask-permission
  "Function that decides a `permission/ask' request from the backend.
It is called with the arguments SESSION, TOOL, ARGUMENTS and SUMMARY
\(a session id, a tool name, the tool's arguments as a plist and the
backend's reason) and returns non-nil to allow the call."
  :type 'function)

(defcustom planbridge-request-timeout 30
  "Seconds to wait for the backend before a request times out."
  :type 'natnum)

(defcustom planbridge-share-listen nil
  "Address the backend's browser share server listens on, or nil.
nil keeps the backend's default, a free port on 127.0.0.1 (or
$PLANBRIDGE_SHARE_LISTEN).  A LAN or VPN address such as
\"192.168.1.10:8765\" lets other machines open share links; the links
carry secrets, so choose an address only the intended people reach."
  :type '(choice (const :tag "Backend default" nil)
                 (string :tag "HOST:PORT")))

(defcustom planbridge-models nil
  "The model catalog given to the backend at `initialize'.
Each element is (NAME EFFORT...): a model the approval card can pick
for the implementation, with the efforts it takes (none: it takes no
effort setting).  nil sends no catalog, and the backend accepts any
model."
  :type '(repeat (cons :tag "Model"
                       (string :tag "Name")
                       (repeat :tag "Efforts" (string :tag "Effort")))))

(defcustom planbridge-workloads nil
  "Model and effort per workload, given to the backend at `initialize'.
An alist from a workload name (\"planning\", \"plan-implementation\"
or \"summarization\") to a list (MODEL EFFORT); an empty string
inherits the session default.  The approval card starts from the
\"plan-implementation\" entry."
  :type '(alist :key-type (choice (const "planning")
                                  (const "plan-implementation")
                                  (const "summarization"))
                :value-type (list (string :tag "Model")
                                  (string :tag "Effort"))))

(defcustom planbridge-approval-display-action
  '((display-buffer-reuse-window display-buffer-below-selected)
    (window-height . fit-window-to-buffer))
  "The `display-buffer' action that shows the approval card."
  :type '(cons (choice function (repeat function))
               (alist :key-type symbol :value-type sexp)))

(defcustom planbridge-select-approval-card t
  "Non-nil means a newly presented approval card is selected.
Its keys work only while point is in the card."
  :type 'boolean)

(defface planbridge-plan-indicator
  '((t :inherit warning :weight bold))
  "Face of the Plan indicator in the header line.")

(defface planbridge-mode-indicator
  '((t :inherit font-lock-constant-face))
  "Face of the permission mode in the header line.")

(defface planbridge-prompt
  '((t :inherit minibuffer-prompt))
  "Face of the composer prompt.")

(defface planbridge-user
  '((t :inherit bold))
  "Face of the person's prompts in the transcript.")

(defface planbridge-tool-call
  '((t :inherit font-lock-function-name-face))
  "Face of tool calls in the transcript.")

(defface planbridge-tool-result
  '((t :inherit shadow))
  "Face of tool results in the transcript.")

(defface planbridge-blocked
  '((t :inherit error))
  "Face of tool calls refused by the Plan gate.")

(defface planbridge-diagnostic
  '((t :inherit warning))
  "Face of diagnostics and warnings in the transcript.")

(defface planbridge-notice
  '((t :inherit font-lock-doc-face))
  "Face of notices from the backend.")

(defface planbridge-proposal-title
  '((t :inherit (bold font-lock-keyword-face)))
  "Face of the title of a plan proposal card.")

(defface planbridge-card-heading
  '((t :inherit (bold font-lock-keyword-face)))
  "Face of headings on the approval card.")

(defface planbridge-card-key
  '((t :inherit help-key-binding))
  "Face of the keys on the approval card.")

(defface planbridge-card-label
  '((t :inherit font-lock-variable-name-face))
  "Face of the setting names on the approval card.")

(defface planbridge-card-value
  '((t :inherit bold))
  "Face of the setting values on the approval card.")

(defface planbridge-card-dimmed
  '((t :inherit shadow))
  "Face of rows of the approval card that do not apply.")

(defface planbridge-card-notice
  '((t :inherit warning))
  "Face of the notice row of the approval card.")

(defface planbridge-counter
  '((t :inherit (warning bold)))
  "Face of the interaction counter in the header line.")

(defface planbridge-goal
  '((t :inherit font-lock-keyword-face))
  "Face of an active Goal in the header line and the transcript.")

(defface planbridge-goal-done
  '((t :inherit success))
  "Face of a completed Goal.")

(defface planbridge-goal-stopped
  '((t :inherit warning))
  "Face of a paused, blocked or budget-limited Goal.")

(defface planbridge-ended
  '((t :inherit (error bold)))
  "Face of the header mark of a session that continued in a fork.")

(defface planbridge-tracking-heading
  '((t :inherit (bold font-lock-doc-face)))
  "Face of the headings of the todo list and the plan steps.")

(defface planbridge-tracking-active
  '((t :inherit (warning bold)))
  "Face of the todo item or plan step in progress.")

(defface planbridge-tracking-done
  '((t :inherit shadow))
  "Face of finished or skipped todo items and plan steps.")


;;; Global state
;;;

(defvar planbridge--connection nil
  "The `planbridge-connection' of this Emacs, or nil.")

(defvar planbridge--buffers (make-hash-table :test #'equal)
  "Map from session id to its session buffer.")


;;; Session buffer state
;;;

(defvar-local planbridge--session-id nil
  "Id of the session shown in this buffer.")

(defvar-local planbridge--info nil
  "Plist of the session's last known state.
Keys as in the protocol's Session object: :plan, :mode, :busy,
:proposal_status, :blocked_total, :title, :workspace.")

(defvar-local planbridge--last-seq 0
  "Seq of the last event rendered in this buffer.")

(defvar-local planbridge--opening nil
  "Non-nil while `session/open' is in flight.
The value is t or the list of events that arrived meanwhile, newest
first; they are rendered after the replay.")

(defvar-local planbridge--last-kind nil
  "Kind of the last event rendered, a string.")

(defvar-local planbridge--transcript-end nil
  "Marker at the end of the transcript, before the prompt.")

(defvar-local planbridge--input-start nil
  "Marker at the start of the composer, after the prompt.")

(defvar-local planbridge--approval nil
  "The session's last known approval view, a plist, or nil.")

(defvar-local planbridge--card nil
  "The approval card buffer of this session, or nil.")

(defvar-local planbridge--card-memory nil
  "What a dismissed card leaves behind: (ATTEMPT . COMMENTS).
A hidden card that is shown again gets its line comments back.")

(defvar-local planbridge--goal nil
  "The session's Goal, a plist as in the protocol's Goal object, or nil.")

(defvar-local planbridge--todos nil
  "The session's todo list, a list of plists (:id :content :status).")

(defvar-local planbridge--tracked-plan nil
  "The accepted plan being implemented, a plist, or nil.
Keys as in the protocol's tracked plan: :title, :artifact, :status,
:reason and :steps, each step a plist (:id :imperative :gerund :status).")

(defvar planbridge--replaying nil
  "Non-nil, dynamically, while stored events are replayed.
Replayed events redraw the transcript only; the approval card comes
from `approval/get' afterwards.")

;;; The connection
;;;

(defclass planbridge-connection (jsonrpc-process-connection)
  ((-shutdown-requested
    :initform nil :accessor planbridge--shutdown-requested
    :documentation "Non-nil when Emacs itself ends the process.")
   (-death-reported
    :initform nil :accessor planbridge--death-reported
    :documentation "Non-nil once the death of the process was reported."))
  :documentation "A JSON-RPC connection to the planbridge backend.")

(cl-defstruct (planbridge--deferred (:constructor planbridge--deferred (fn)))
  "A reply to a server request that is sent later.
FN is called with the request id once the dispatcher has returned."
  fn)

(cl-defmethod jsonrpc-connection-send :around
  ((_conn planbridge-connection) &rest args &key id result &allow-other-keys)
  "Hold back replies whose RESULT is a `planbridge--deferred'.
The deferred object is given the request ID so that it can answer
later, asynchronously; other messages are sent as ARGS say."
  (ignore args)
  (if (planbridge--deferred-p result)
      (funcall (planbridge--deferred-fn result) id)
    (cl-call-next-method)))

(defun planbridge--log (conn format &rest args)
  "Append a line made from FORMAT and ARGS to CONN's events buffer."
  (let ((max (jsonrpc--events-buffer-scrollback-size conn)))
    (unless (eql max 0)
      (with-current-buffer (jsonrpc-events-buffer conn)
        (let ((inhibit-read-only t))
          (save-excursion
            (goto-char (point-max))
            (insert (format "[planbridge] %s %s\n"
                            (current-time-string)
                            (apply #'format format args)))))))))

(defun planbridge--command ()
  "Return the command line to start the backend."
  `(,planbridge-program "serve"
                        ,@(when planbridge-state-dir
                            (list "--state-dir"
                                  (expand-file-name planbridge-state-dir)))
                        ,@(when planbridge-share-listen
                            (list "--share-listen" planbridge-share-listen))))

(defun planbridge--api-key (base-url)
  "Return the API key for BASE-URL's host from auth-source, or nil."
  (require 'auth-source)
  (require 'url-parse)
  (let* ((host (or (ignore-errors (url-host (url-generic-parse-url base-url)))
                   base-url))
         (found (car (auth-source-search :host host :max 1)))
         (secret (plist-get found :secret)))
    (if (functionp secret) (funcall secret) secret)))

(defun planbridge--engine-params ()
  "Return the `engine' parameter of `initialize', or nil."
  (let ((args (cdr-safe planbridge-engine)))
    (pcase (car-safe planbridge-engine)
      ('script
       (list :kind "script"
             :script (expand-file-name (plist-get args :file))))
      ('openai
       (let* ((url (plist-get args :base-url))
              (key (and url (planbridge--api-key url))))
         `(:kind "openai" :base_url ,url :model ,(plist-get args :model)
                 ,@(and key (list :api_key key))))))))

(defun planbridge--models-params ()
  "Return the `models' parameter of `initialize', or nil."
  (when (or planbridge-models planbridge-workloads)
    `(,@(and planbridge-models
             (list :models
                   (vconcat
                    (mapcar (lambda (m)
                              (list :name (car m) :efforts (vconcat (cdr m))))
                            planbridge-models))))
      ,@(and planbridge-workloads
             (list :workloads
                   (cl-loop for (name model effort) in planbridge-workloads
                            append (list (intern (concat ":" name))
                                         (list :model model :effort effort))))))))

(defun planbridge--initialize (conn)
  "Send `initialize' to CONN and wait for the answer.
An API key in the parameters is kept out of the wire log."
  (let* ((engine (planbridge--engine-params))
         (models (planbridge--models-params))
         (params `(,@(and engine (list :engine engine))
                   ,@(and models (list :models models))
                   :client (:name "emacs" :version ,emacs-version)))
         (secret (plist-get engine :api_key))
         (size (jsonrpc--events-buffer-scrollback-size conn)))
    (if (not secret)
        (jsonrpc-request conn :initialize params
                         :timeout planbridge-request-timeout)
      (planbridge--log conn "initialize (parameters not logged: API key)")
      (setf (jsonrpc--events-buffer-scrollback-size conn) 0)
      (unwind-protect
          (jsonrpc-request conn :initialize params
                           :timeout planbridge-request-timeout)
        (setf (jsonrpc--events-buffer-scrollback-size conn) size)))))

(defvar planbridge--starting nil
  "Non-nil while `planbridge--start' waits for the backend to initialize.")

(defun planbridge--stderr-tail (conn)
  "Return the last line CONN's process wrote to stderr, or nil."
  (when-let ((buf (ignore-errors (jsonrpc-stderr-buffer conn))))
    (when (buffer-live-p buf)
      (with-current-buffer buf
        (let ((text (string-trim (buffer-string))))
          (unless (string-empty-p text)
            (car (last (split-string text "\n")))))))))

(defun planbridge--start ()
  "Start the backend, initialize it and return the new connection."
  (unless (executable-find planbridge-program)
    (user-error "planbridge: Cannot find the backend program %S (see `planbridge-program')"
                planbridge-program))
  (let* ((command (planbridge--command))
         (conn
          (make-instance
           'planbridge-connection
           :name "planbridge"
           :events-buffer-scrollback-size planbridge-events-buffer-size
           :notification-dispatcher #'planbridge--dispatch-notification
           :request-dispatcher #'planbridge--dispatch-request
           :on-shutdown #'planbridge--on-shutdown
           :process
           (lambda ()
             (make-process
              :name "planbridge"
              :command command
              :connection-type 'pipe
              :coding 'utf-8-emacs-unix
              :noquery t
              ;; jsonrpc.el expects exactly this name: it mirrors the
              ;; lines into the events buffer.
              :stderr (get-buffer-create "*planbridge stderr*")))))
         (proc (jsonrpc--process conn))
         (sentinel (process-sentinel proc)))
    (set-process-sentinel proc (planbridge--wrap-sentinel sentinel))
    (condition-case err
        (let ((planbridge--starting t))
          (planbridge--initialize conn))
      (error
       (let ((stderr (planbridge--stderr-tail conn)))
         (setf (planbridge--shutdown-requested conn) t)
         (when (jsonrpc-running-p conn)
           (ignore-errors (jsonrpc-shutdown conn)))
         (user-error "planbridge: The backend did not start: %s%s"
                     (planbridge--error-text err)
                     (if stderr (format " (%s)" stderr) "")))))
    conn))

(defun planbridge--wrap-sentinel (sentinel)
  "Return a process sentinel running SENTINEL quietly.
jsonrpc.el's own messages and the errors of pending requests are
kept out of the echo area; the death is reported once instead."
  (lambda (proc change)
    (let ((inhibit-message t)
          (message-log-max nil))
      (funcall sentinel proc change))
    (unless (process-live-p proc)
      (when-let ((conn (process-get proc 'jsonrpc-connection)))
        (unless (or planbridge--starting
                    (planbridge--shutdown-requested conn)
                    (planbridge--death-reported conn))
          (setf (planbridge--death-reported conn) t)
          (message "planbridge: The backend exited (%s); the next command restarts it"
                   (string-trim change)))))))

(defun planbridge--on-shutdown (conn)
  "Forget CONN, whose process died, and mark its session buffers."
  (when (eq conn planbridge--connection)
    (setq planbridge--connection nil))
  (maphash (lambda (_id buf)
             (when (buffer-live-p buf)
               (with-current-buffer buf
                 (setq planbridge--opening nil)
                 (planbridge--update-info '(:busy :json-false)))))
           planbridge--buffers))

(defun planbridge--live-p ()
  "Return non-nil if the backend process is running."
  (and planbridge--connection
       (jsonrpc-running-p planbridge--connection)))

(defun planbridge--connection ()
  "Return a running connection, starting the backend if needed.
After a restart, every open session buffer is reopened."
  (if (planbridge--live-p)
      planbridge--connection
    (let ((restart (or planbridge--connection
                       (> (hash-table-count planbridge--buffers) 0))))
      (setq planbridge--connection (planbridge--start))
      (when restart
        (maphash (lambda (_id buf)
                   (when (buffer-live-p buf)
                     (with-current-buffer buf (planbridge--reopen))))
                 planbridge--buffers))
      planbridge--connection)))

(defun planbridge--error-text (err)
  "Return a human message for ERR, a `jsonrpc-error' or other error."
  (if (eq (car-safe err) 'jsonrpc-error)
      (or (alist-get 'jsonrpc-error-message (cdr err))
          (format "%s" (cdr err)))
    (error-message-string err)))

(defun planbridge--request (method params)
  "Send METHOD with PARAMS and wait for the result.
Only for answers needed at command time.  Errors become `user-error's."
  (condition-case err
      (jsonrpc-request (planbridge--connection) method params
                       :timeout planbridge-request-timeout)
    (jsonrpc-error
     (user-error "planbridge: %s" (planbridge--error-text err)))))

(defun planbridge--error-reporter (what)
  "Return an error handler for an asynchronous request about WHAT.
The handler shows the backend's message, prefixed `planbridge: '."
  (lambda (err)
    (let ((message (plist-get err :message))
          (code (plist-get (plist-get err :data) :code)))
      (message "planbridge: %s failed: %s%s" what (or message "unknown error")
               (if code (format " (%s)" code) "")))))

(defun planbridge--method-name (method)
  "Return METHOD, a keyword or string, as the protocol spells it."
  (string-remove-prefix ":" (format "%s" method)))

(cl-defun planbridge--async (method params &key success error)
  "Send METHOD with PARAMS without waiting.
SUCCESS is called with the result; ERROR with the error object, and
defaults to reporting it as a message."
  (jsonrpc-async-request (planbridge--connection) method params
                         :success-fn (or success #'ignore)
                         :error-fn (or error (planbridge--error-reporter
                                               (planbridge--method-name method)))
                         :timeout planbridge-request-timeout
                         :timeout-fn
                         (lambda ()
                           (message "planbridge: %s timed out"
                                    (planbridge--method-name method)))))

(defun planbridge-shutdown ()
  "Stop the backend process.  Sessions stay stored and can be reopened."
  (interactive)
  (when-let ((conn planbridge--connection))
    (setf (planbridge--shutdown-requested conn) t)
    (when (jsonrpc-running-p conn)
      (ignore-errors
        (jsonrpc-request conn :shutdown nil :timeout 5))
      (jsonrpc-shutdown conn))
    (setq planbridge--connection nil)))

(defun planbridge-events-buffer ()
  "Show the wire log of the backend connection."
  (interactive)
  (unless planbridge--connection
    (user-error "planbridge: No backend is running"))
  (pop-to-buffer (jsonrpc-events-buffer planbridge--connection)))


;;; Server notifications and requests
;;;

(defun planbridge--dispatch-notification (conn method params)
  "Hand notification METHOD with PARAMS from CONN to its handler."
  (apply #'planbridge-handle-notification conn method params))

(defun planbridge--dispatch-request (conn method params)
  "Hand request METHOD with PARAMS from CONN to its handler."
  (apply #'planbridge-handle-request conn method params))

(cl-defgeneric planbridge-handle-notification (conn method &rest params)
  "Handle notification METHOD, a symbol, with PARAMS from CONN."
  (:method (conn method &rest params)
           (planbridge--log conn "unhandled notification %s %S" method params)))

(cl-defgeneric planbridge-handle-request (conn method &rest params)
  "Answer request METHOD, a symbol, with PARAMS from CONN."
  (:method (conn method &rest _params)
           (planbridge--log conn "unhandled request %s" method)
           (jsonrpc-error :code -32601
                          :message (format "emacs does not handle %s" method))))

(cl-defmethod planbridge-handle-notification
  (_conn (_method (eql session/event)) &rest event &key session &allow-other-keys)
  "Render EVENT in the buffer of SESSION, if there is one."
  (let ((buf (gethash session planbridge--buffers)))
    (when (buffer-live-p buf)
      (with-current-buffer buf
        (if planbridge--opening
            ;; The value is t until the first held event arrives.
            (setq planbridge--opening
                  (cons event (and (consp planbridge--opening) planbridge--opening)))
          (planbridge--handle-event event))))))

(defvar planbridge--asking nil
  "Non-nil, dynamically, while a permission question is being asked.")

(defun planbridge--answer-permission (conn id session tool arguments summary)
  "Ask about TOOL with ARGUMENTS in SESSION and answer request ID on CONN.
SUMMARY is the backend's reason.  Questions are asked one at a time: a
question due while another is open waits for it."
  (if planbridge--asking
      (run-at-time 0.2 nil #'planbridge--answer-permission
                   conn id session tool arguments summary)
    (let ((allow (let ((planbridge--asking t))
                   (condition-case nil
                       (funcall planbridge-permission-function
                                session tool arguments summary)
                     ((error quit) nil)))))
      (planbridge--note-permission session tool arguments allow)
      (when (jsonrpc-running-p conn)
        (jsonrpc-connection-send
         conn :id id :result (list :allow (if allow t :json-false)))))))

(cl-defmethod planbridge-handle-request
  (conn (_method (eql permission/ask)) &key session tool arguments summary
        &allow-other-keys)
  "Ask the person whether TOOL may run with ARGUMENTS in SESSION.
SUMMARY is the backend's reason.  The question is asked from a timer,
after the dispatcher has returned, and answered to CONN from there."
  (planbridge--deferred
   (lambda (id)
     (run-at-time 0 nil #'planbridge--answer-permission
                  conn id session tool arguments summary))))

(defun planbridge--json (object)
  "Return OBJECT, a parsed JSON value, as compact JSON text."
  (condition-case nil
      (json-serialize object :false-object :json-false :null-object nil)
    (error (prin1-to-string object))))

(defun planbridge--clip (string &optional width)
  "Return the first line of STRING, clipped to WIDTH characters."
  (let* ((width (or width 120))
         (line (car (split-string (or string "") "\n"))))
    (if (> (length line) width)
        (concat (substring line 0 (1- width)) "…")
      line)))

(defun planbridge-ask-permission (_session tool arguments summary)
  "Ask in the minibuffer whether TOOL may run with ARGUMENTS.
SUMMARY, the backend's reason, is shown with the question."
  (y-or-n-p (format "Allow %s %s%s? "
                    tool (planbridge--clip (planbridge--json arguments) 80)
                    (if (and summary (not (string-empty-p summary)))
                        (format " (%s)" (planbridge--clip summary 60))
                      ""))))


;;; Session buffers
;;;

(defvar planbridge-session-mode-map
  (let ((map (make-sparse-keymap)))
    (define-key map (kbd "RET") #'planbridge-send)
    (define-key map (kbd "C-c C-c") #'planbridge-send)
    (define-key map (kbd "C-j") #'newline)
    (define-key map (kbd "C-<tab>") #'planbridge-toggle-plan)
    ;; Most terminals cannot send C-<tab>.
    (define-key map (kbd "C-c C-t") #'planbridge-toggle-plan)
    (define-key map (kbd "S-<tab>") #'planbridge-cycle-permission-mode)
    (define-key map (kbd "<backtab>") #'planbridge-cycle-permission-mode)
    (define-key map (kbd "C-c C-k") #'planbridge-interrupt)
    (define-key map (kbd "C-c C-e") #'planbridge-events-buffer)
    (define-key map (kbd "C-c TAB") #'planbridge-queue-follow-up)
    (define-key map (kbd "C-c C-a") #'planbridge-show-approval)
    (define-key map (kbd "C-c C-d") #'planbridge-dispatch)
    map)
  "Keymap of `planbridge-session-mode'.")

(define-derived-mode planbridge-session-mode fundamental-mode "planbridge"
  "Major mode of a planbridge session buffer.
The transcript above the prompt is read-only; type at the prompt and
send with RET.

\\{planbridge-session-mode-map}"
  (setq-local header-line-format '((:eval (planbridge--header-line))))
  (setq-local truncate-lines nil)
  (setq-local word-wrap t)
  (add-hook 'kill-buffer-hook #'planbridge--forget-buffer nil t)
  (let ((inhibit-read-only t))
    (erase-buffer)
    (insert (propertize "\n> " 'face 'planbridge-prompt 'read-only t
                        'front-sticky t 'rear-nonsticky t)))
  (setq planbridge--transcript-end (copy-marker (point-min) t))
  (setq planbridge--input-start (copy-marker (point-max))))

(defun planbridge--forget-buffer ()
  "Remove the current buffer from the session table, with its card."
  (planbridge--dismiss-card)
  (when (eq (gethash planbridge--session-id planbridge--buffers)
            (current-buffer))
    (remhash planbridge--session-id planbridge--buffers)))

(defun planbridge--true-p (value)
  "Return non-nil if VALUE, a decoded JSON boolean, is true."
  (eq value t))

(defun planbridge--posture ()
  "Return the posture indicator, such as \"[Plan · ask]\"."
  (let ((mode (propertize (or (plist-get planbridge--info :mode) "?")
                          'face 'planbridge-mode-indicator)))
    (if (planbridge--true-p (plist-get planbridge--info :plan))
        (concat "[" (propertize "Plan" 'face 'planbridge-plan-indicator)
                " · " mode "]")
      (concat "[" mode "]"))))

(defun planbridge--nonempty (value)
  "Return VALUE if it is a non-empty string, else nil."
  (and (stringp value) (not (string-empty-p value)) value))

(defun planbridge--ended-indicator ()
  "Return the header's mark of a session that continued in a fork, or nil."
  (when-let ((fork (planbridge--nonempty (plist-get planbridge--info :forked_to))))
    (propertize (format "ended → fork %s"
                        (or (planbridge--nonempty (plist-get planbridge--info :fork_branch))
                            fork))
                'face 'planbridge-ended
                'help-echo (format "This session continued in the Worktree fork %s" fork))))

(defun planbridge--goal-status ()
  "Return the status of the session's Goal, a string, or nil."
  (let ((summary (planbridge--nonempty (plist-get planbridge--info :goal))))
    ;; Called from the header line, in redisplay.
    (save-match-data
      (if (and summary (string-match "\\`Goal \\([a-z-]+\\)" summary))
          (match-string 1 summary)
        (plist-get planbridge--goal :status)))))

(defun planbridge--goal-face (status)
  "Return the face of a Goal whose status is STATUS."
  (pcase status
    ("active" 'planbridge-goal)
    ("complete" 'planbridge-goal-done)
    (_ 'planbridge-goal-stopped)))

(defun planbridge--goal-indicator ()
  "Return the header's Goal summary, or nil when there is no Goal.
It reads like \"Goal active · 1,200/5,000 tokens (24%) · 2 turns\"."
  (let ((summary (planbridge--nonempty (plist-get planbridge--info :goal))))
    (when (and summary (not (equal summary "No goal")))
      (propertize summary
                  'face (planbridge--goal-face (planbridge--goal-status))
                  'help-echo (or (plist-get planbridge--goal :objective) summary)))))

(defun planbridge--steps-done (step-list)
  "Return how many plan step plists in STEP-LIST are finished.
A step is finished when it is completed or skipped."
  (seq-count (lambda (step) (member (plist-get step :status) '("completed" "skipped")))
             step-list))

(defun planbridge--steps-indicator ()
  "Return the header's plan step progress, or nil.
It reads like \"2/5 steps\", while an accepted plan is being
implemented or is paused."
  (let ((plan planbridge--tracked-plan))
    (when (and plan (member (plist-get plan :status) '("running" "paused")))
      (let ((steps (append (plist-get plan :steps) nil)))
        (format "%d/%d steps%s" (planbridge--steps-done steps) (length steps)
                (if (equal (plist-get plan :status) "paused") " (paused)" ""))))))

(defun planbridge--header-line ()
  "Return the header line of a session buffer."
  (string-join
   (delq nil
         (list (planbridge--posture)
               (planbridge--ended-indicator)
               (planbridge--approval-counter)
               (and (planbridge--true-p (plist-get planbridge--info :busy))
                    "busy…")
               (planbridge--goal-indicator)
               (planbridge--steps-indicator)
               (and (not (planbridge--live-p)) "disconnected")
               (and planbridge--opening "opening…")
               (let ((title (plist-get planbridge--info :title)))
                 (and title (not (string-empty-p title)) title))))
   " "))

(defun planbridge--update-info (plist)
  "Merge PLIST, a Session object or status data, into the session state."
  (cl-loop for (key value) on plist by #'cddr
           do (setq planbridge--info (plist-put planbridge--info key value)))
  (force-mode-line-update))

(defun planbridge--project-name (workspace)
  "Return a short name for WORKSPACE, a directory."
  (file-name-nondirectory (directory-file-name workspace)))

(defun planbridge--session-buffer (info)
  "Return the buffer of the session described by INFO, creating it.
INFO is a Session plist.  A new buffer is registered and opened."
  (let* ((id (plist-get info :id))
         (buf (gethash id planbridge--buffers)))
    (if (buffer-live-p buf)
        buf
      (setq buf (generate-new-buffer
                 (format "*planbridge: %s*"
                         (planbridge--project-name
                          (or (plist-get info :workspace) id)))))
      (with-current-buffer buf
        (planbridge-session-mode)
        (setq planbridge--session-id id)
        (setq default-directory
              (file-name-as-directory
               (or (plist-get info :workspace) default-directory)))
        (planbridge--update-info info)
        (puthash id buf planbridge--buffers)
        (planbridge--reopen))
      buf)))

(defun planbridge--reopen ()
  "Fetch the events this buffer has not seen with `session/open'.
Events notified meanwhile are held and rendered after the replay."
  (let ((buf (current-buffer))
        (id planbridge--session-id))
    (setq planbridge--opening t)
    (force-mode-line-update)
    (planbridge--async
     :session/open (list :session id :since planbridge--last-seq)
     :success
     (lambda (result)
       (when (buffer-live-p buf)
         (with-current-buffer buf
           (let ((held (and (listp planbridge--opening) planbridge--opening))
                 (planbridge--replaying t))
             (setq planbridge--opening nil)
             (planbridge--update-info (plist-get result :session))
             (seq-doseq (event (plist-get result :events))
               (planbridge--handle-event event))
             (dolist (event (nreverse held))
               (planbridge--handle-event event)))
           (planbridge--refresh-approval)
           (planbridge--refresh-tracking)
           (planbridge--refresh-goal))))
     :error
     (lambda (err)
       (when (buffer-live-p buf)
         (with-current-buffer buf
           (setq planbridge--opening nil)
           (force-mode-line-update)))
       (funcall (planbridge--error-reporter "session/open") err)))))


;;; Rendering events
;;;

(defmacro planbridge--with-transcript (&rest body)
  "Run BODY with point at the end of the transcript.
The text BODY inserts is made read-only."
  (declare (indent 0) (debug t))
  (let ((beg (make-symbol "beg")))
    `(let ((inhibit-read-only t)
           (buffer-undo-list t))
       (save-excursion
         (goto-char planbridge--transcript-end)
         (let ((,beg (point)))
           (prog1 (progn ,@body)
             (add-text-properties ,beg (point)
                                  '(read-only t front-sticky nil
                                              rear-nonsticky t))))))))

(defun planbridge--insert-line (face &rest strings)
  "Insert STRINGS as one transcript line in FACE."
  (planbridge--with-transcript
    (unless (or (bobp) (eq (char-before) ?\n))
      (insert "\n"))
    (insert (propertize (apply #'concat strings) 'face face) "\n")))

(defun planbridge--handle-event (event)
  "Render EVENT, a plist, unless its seq was already seen."
  (let ((seq (plist-get event :seq)))
    (unless (and (integerp seq) (<= seq planbridge--last-seq))
      (when (integerp seq)
        (setq planbridge--last-seq seq))
      (let ((kind (plist-get event :kind)))
        (condition-case err
            (planbridge--render kind (plist-get event :data))
          (error
           (planbridge--insert-line
            'planbridge-diagnostic
            (format "[could not render %s event: %s]"
                    kind (error-message-string err)))))
        (setq planbridge--last-kind kind)))))

(defun planbridge--show-output (name output)
  "Show OUTPUT of tool NAME in a help buffer."
  (with-help-window (get-buffer-create "*planbridge output*")
    (princ (format "%s output:\n\n%s" name output))))

(defun planbridge--render (kind data)
  "Insert the transcript rendering of an event of KIND with DATA."
  (pcase kind
    ("user"
     (when (string-empty-p (or (plist-get planbridge--info :title) ""))
       (planbridge--update-info
        (list :title (planbridge--clip (plist-get data :text) 60))))
     (planbridge--insert-line 'planbridge-user
                              "▶ " (or (plist-get data :display)
                                       (plist-get data :text) "")))
    ("text"
     (let ((delta (or (plist-get data :delta) "")))
       (planbridge--with-transcript
         (unless (or (equal planbridge--last-kind "text")
                     (bobp) (eq (char-before) ?\n))
           (insert "\n"))
         (insert delta))))
    ("tool_call"
     (planbridge--insert-line 'planbridge-tool-call
                              "⚙ " (plist-get data :name) " "
                              (planbridge--clip
                               (planbridge--json (plist-get data :arguments)))))
    ("tool_result"
     (let* ((output (or (plist-get data :output) ""))
            (name (plist-get data :name))
            (ok (planbridge--true-p (plist-get data :ok)))
            (lines (length (split-string (string-trim-right output) "\n"))))
       (planbridge--insert-line
        (if ok 'planbridge-tool-result 'planbridge-diagnostic)
        (if ok "  → " "  ✗ ") (planbridge--clip output))
       (when (> lines 1)
         (planbridge--with-transcript
           (backward-char)
           (insert " ")
           (insert-text-button
            (format "[%d lines]" lines)
            'action (lambda (_) (planbridge--show-output name output))
            'help-echo "Show the whole output")))))
    ("blocked"
     (planbridge--insert-line 'planbridge-blocked
                              "  ⛔ blocked " (or (plist-get data :name) "")
                              " (" (or (plist-get data :code) "") "): "
                              (or (plist-get data :reason) "")))
    ("proposal"
     (let ((title (or (plist-get data :title) "Proposed plan")))
       (planbridge--insert-line 'planbridge-proposal-title
                                "┌─ Plan proposal: " title)
       (planbridge--with-transcript
         (dolist (line (split-string (or (plist-get data :text)
                                         (plist-get data :body) "")
                                     "\n"))
           (insert "│ " line "\n"))
         (insert "└─\n"))))
    ("diagnostic"
     (planbridge--insert-line 'planbridge-diagnostic
                              "⚠ " (or (plist-get data :level) "warning") ": "
                              (or (plist-get data :message) "")))
    ("status" (planbridge--update-info data))
    ("notice"
     (let ((message (or (plist-get data :message) "")))
       (planbridge--insert-line 'planbridge-notice "ℹ " message)
       (unless planbridge--replaying
         (message "planbridge: %s" message))))
    ("approval"
     (unless planbridge--replaying
       (planbridge--apply-approval data)))
    ("approval_closed"
     (let ((reason (plist-get data :reason)))
       (pcase reason
         ("cancelled"
          (planbridge--insert-line 'planbridge-notice
                                   "ℹ Plan cancelled: the proposal is a draft now"))
         ("demoted"
          (planbridge--insert-line 'planbridge-notice
                                   "ℹ The proposal is a draft now")))
       (unless planbridge--replaying
         (planbridge--close-approval (plist-get data :attempt)))))
    ("handoff"
     (let ((state (plist-get data :state))
           (step (plist-get data :step))
           (reason (plist-get data :reason)))
       (pcase state
         ("started"
          (planbridge--insert-line 'planbridge-notice
                                   "ℹ Implementation handoff started"
                                   (if (and step (not (equal step "")))
                                       (format " (step %s)" step)
                                     "")))
         ("done"
          (planbridge--insert-line 'planbridge-notice
                                   "ℹ Implementation handoff done"))
         (_
          (let ((text (format "Implementation handoff %s%s%s; retry with M-x planbridge-retry-plan-implementation"
                              (or state "failed")
                              (if step (format " at step %s" step) "")
                              (if (and reason (not (equal reason "")))
                                  (format ": %s" reason)
                                ""))))
            (planbridge--insert-line 'planbridge-blocked "✗ " text)
            (unless planbridge--replaying
              (message "planbridge: %s" text)))))))
    ("summary"
     (planbridge--insert-line 'planbridge-notice
                              (format "ℹ Handoff summary ready (%s characters)"
                                      (or (plist-get data :chars) "?"))))
    ("error"
     (planbridge--insert-line 'planbridge-blocked
                              "✗ error: " (or (plist-get data :message) "")))
    ("queued"
     (planbridge--insert-line 'planbridge-notice
                              "… queued: " (or (plist-get data :text) ""))
     (planbridge--refresh-pending-approval))
    ("turn_start"
     ;; The backend sends no `status' when a turn starts.
     (planbridge--update-info '(:busy t)))
    ("turn_end"
     (planbridge--refresh-pending-approval)
     (let ((err (plist-get data :error)))
       (planbridge--insert-line 'planbridge-tool-result
                                (format "─ turn %s %s"
                                        (or (plist-get data :turn) "")
                                        (if err (format "ended: %s" err)
                                          "done")))))
    ("corrupt"
     (planbridge--insert-line 'planbridge-diagnostic
                              "⚠ unreadable stored event ("
                              (or (plist-get data :kind) "?") ")"))
    ("goal" (planbridge--apply-goal data))
    ("todo"
     (setq planbridge--todos (append (plist-get data :items) nil))
     (planbridge--draw-tracking))
    ("steps" (planbridge--apply-tracked-plan data))
    ("compacted"
     (planbridge--insert-line 'planbridge-notice
                              (format "ℹ Conversation compacted (%s): context segment %s%s"
                                      (or (planbridge--nonempty (plist-get data :reason))
                                          "requested")
                                      (or (plist-get data :segment) "?")
                                      (if (integerp (plist-get data :chars))
                                          (format ", %d characters carried"
                                                  (plist-get data :chars))
                                        ""))))
    ("forked" (planbridge--forked data))
    (_
     (planbridge--insert-line 'planbridge-diagnostic
                              (format "[%s] %s" kind (planbridge--json data))))))

(defun planbridge--note-permission (session tool arguments allow)
  "Note in SESSION's buffer the answer ALLOW about TOOL with ARGUMENTS."
  (let ((buf (gethash session planbridge--buffers)))
    (when (buffer-live-p buf)
      (with-current-buffer buf
        (planbridge--insert-line
         'planbridge-notice
         (format "? %s %s — %s" tool
                 (planbridge--clip (planbridge--json arguments) 80)
                 (if allow "allowed" "refused")))))))


;;; Commands
;;;

(defun planbridge--session-or-error ()
  "Return the session id of the current buffer or signal a `user-error'."
  (or planbridge--session-id
      (user-error "planbridge: Not in a session buffer")))

(defun planbridge--composer-text ()
  "Return the text typed in the composer."
  (buffer-substring-no-properties planbridge--input-start (point-max)))

(defun planbridge-send ()
  "Send the composer text to the session.
On a button in the transcript, push the button instead."
  (interactive)
  (let ((id (planbridge--session-or-error)))
    (cond
     ((and (< (point) planbridge--input-start) (button-at (point)))
      (push-button))
     ((< (point) planbridge--input-start)
      (goto-char (point-max)))
     (t
      (let ((text (string-trim (planbridge--composer-text)))
            (buf (current-buffer)))
        (when (string-empty-p text)
          (user-error "planbridge: Nothing to send"))
        (delete-region planbridge--input-start (point-max))
        (planbridge--async
         :session/submit (list :session id :text text)
         :success
         (lambda (result)
           (when (planbridge--true-p (plist-get result :queued))
             (message "planbridge: Queued behind the running turn")))
         :error
         (lambda (err)
           (when (buffer-live-p buf)
             (with-current-buffer buf
               (when (string-empty-p (planbridge--composer-text))
                 (save-excursion
                   (goto-char (point-max))
                   (insert text)))))
           (funcall (planbridge--error-reporter "session/submit") err))))))))

(defun planbridge--posture-request (method params)
  "Send METHOD with PARAMS and update this buffer from the result."
  (let ((buf (current-buffer)))
    (planbridge--async
     method params
     :success (lambda (info)
                (when (buffer-live-p buf)
                  (with-current-buffer buf
                    (planbridge--update-info info)))))))

(defun planbridge-toggle-plan ()
  "Toggle the Plan posture of this session."
  (interactive)
  (let ((id (planbridge--session-or-error)))
    (planbridge--posture-request
     (if (planbridge--true-p (plist-get planbridge--info :plan))
         :plan/exit
       :plan/enter)
     (list :session id))))

(defun planbridge--next-mode (mode)
  "Return the permission mode after MODE: ask → edits → full-auto → ask."
  (pcase mode
    ("ask" "edits")
    ("edits" "full-auto")
    (_ "ask")))

(defun planbridge-cycle-permission-mode ()
  "Cycle the permission mode: ask → edits → full-auto → ask.
Plan is left as it is."
  (interactive)
  (let ((id (planbridge--session-or-error)))
    (planbridge--posture-request
     :session/setPermissionMode
     (list :session id
           :mode (planbridge--next-mode (plist-get planbridge--info :mode))))))

(defun planbridge-interrupt ()
  "Interrupt the running turn, dropping any queued prompt."
  (interactive)
  (planbridge--async :session/interrupt
                     (list :session (planbridge--session-or-error))))

(defun planbridge--workspace ()
  "Return the workspace of the current buffer: its project root or directory."
  (let ((project (and (require 'project nil t) (project-current))))
    (directory-file-name
     (file-truename (if project (project-root project) default-directory)))))

(defun planbridge--find-or-create (workspace)
  "Return the Session for WORKSPACE: the most recent one, or a new one."
  (or (seq-find (lambda (s) (equal (plist-get s :workspace) workspace))
                (planbridge--request :session/list nil))
      (let ((info (planbridge--request :session/create
                                       (list :workspace workspace))))
        (if (equal (plist-get info :mode) planbridge-default-permission-mode)
            info
          (planbridge--request :session/setPermissionMode
                               (list :session (plist-get info :id)
                                     :mode planbridge-default-permission-mode))))))

;;;###autoload
(defun planbridge ()
  "Open the planbridge session of the current project.
Start the backend if needed, reuse the most recent session of the
project (or of `default-directory') and show its buffer."
  (interactive)
  (let* ((workspace (planbridge--workspace))
         (buf (progn
                (planbridge--connection)
                (or (planbridge--live-buffer-for workspace)
                    (planbridge--session-buffer
                     (planbridge--find-or-create workspace))))))
    (pop-to-buffer buf)
    (goto-char (point-max))
    buf))

(defun planbridge--live-buffer-for (workspace)
  "Return a live session buffer whose workspace is WORKSPACE, or nil."
  (cl-loop for buf being the hash-values of planbridge--buffers
           when (and (buffer-live-p buf)
                     (equal (plist-get (buffer-local-value 'planbridge--info buf)
                                       :workspace)
                            workspace))
           return buf))

(defun planbridge--read-session ()
  "Read a session id in the minibuffer, offering the stored sessions."
  (let* ((sessions (planbridge--request :session/list nil))
         (table (mapcar (lambda (s)
                          (cons (format "%s  %s  %s"
                                        (plist-get s :id)
                                        (plist-get s :workspace)
                                        (or (plist-get s :title) ""))
                                (plist-get s :id)))
                        sessions)))
    (unless table
      (user-error "planbridge: No stored sessions"))
    (cdr (assoc (completing-read "Session: " table nil t) table))))

;;;###autoload
(defun planbridge-open-session (id)
  "Open the stored session ID in its buffer."
  (interactive (list (planbridge--read-session)))
  (planbridge--connection)
  (let ((buf (or (gethash id planbridge--buffers)
                 (planbridge--session-buffer
                  (or (seq-find (lambda (s) (equal (plist-get s :id) id))
                                (planbridge--request :session/list nil))
                      (user-error "planbridge: No session %s" id))))))
    (pop-to-buffer buf)
    (goto-char (point-max))
    buf))

;;; The approval card
;;;

(defvar-local planbridge--card-session nil
  "Id of the session whose approval card this buffer shows.")

(defvar-local planbridge--card-view nil
  "The approval view this card buffer draws, a plist.")

(defvar-local planbridge--card-comments nil
  "Comments on plan lines, newest first: a list of (LINE . TEXT).")

(defvar-local planbridge--card-width nil
  "The width the card was last drawn for.")

(defun planbridge--view-true-p (view key)
  "Return non-nil if KEY of VIEW is the JSON value true."
  (planbridge--true-p (plist-get view key)))

(defun planbridge--showable-p (view)
  "Return non-nil if VIEW is a pending approval that is not hidden."
  (and (planbridge--view-true-p view :pending)
       (not (planbridge--view-true-p view :hidden))))

(defun planbridge--session-buffer-of (id)
  "Return the live session buffer of session ID, or nil."
  (let ((buf (gethash id planbridge--buffers)))
    (and (buffer-live-p buf) buf)))

(defun planbridge--card-live-p ()
  "Return the card buffer of the current session buffer, if it is live."
  (and (buffer-live-p planbridge--card) planbridge--card))

(defun planbridge--apply-approval (view &optional select)
  "Make VIEW the current session's approval and show or hide its card.
A card is drawn when VIEW is pending and not hidden; otherwise it is
dismissed.  SELECT non-nil selects the card's window."
  (setq planbridge--approval view)
  (planbridge--update-info
   (list :approval (cond ((not (planbridge--view-true-p view :pending)) "")
                         ((planbridge--view-true-p view :hidden) "hidden")
                         (t "shown"))))
  (if (planbridge--showable-p view)
      (planbridge--show-card view select)
    (planbridge--dismiss-card)))

(defun planbridge--close-approval (attempt)
  "Forget the approval of ATTEMPT, which the backend closed, and its card."
  (when (or (null planbridge--approval)
            (equal attempt (plist-get planbridge--approval :attempt)))
    (setq planbridge--approval nil)
    (planbridge--update-info '(:approval ""))
    (planbridge--dismiss-card)))

(defun planbridge--refresh-approval ()
  "Fetch the current session's approval view and apply it."
  (let ((buf (current-buffer)))
    (planbridge--async
     :approval/get (list :session planbridge--session-id)
     :success (lambda (view)
                (when (buffer-live-p buf)
                  (with-current-buffer buf
                    (planbridge--apply-approval view)))))))

(defun planbridge--refresh-pending-approval ()
  "Fetch the approval again if one is pending and this is no replay.
The view's Worktree blockers change when a turn ends or input is
queued, and the backend sends no new approval event then."
  (when (and (not planbridge--replaying)
             (planbridge--view-true-p planbridge--approval :pending)
             (planbridge--live-p))
    (planbridge--refresh-approval)))

(defun planbridge--card-name ()
  "Return the name of the current session's approval card buffer."
  (format "*planbridge approval: %s*"
          (planbridge--project-name
           (or (plist-get planbridge--info :workspace) planbridge--session-id))))

(defun planbridge--show-card (view select)
  "Draw VIEW on the current session's card and display it.
A card for a new attempt starts without comments and is selected when
`planbridge-select-approval-card' says so; SELECT non-nil selects it
in any case."
  (let* ((card (or (planbridge--card-live-p)
                   (setq planbridge--card
                         (with-current-buffer
                             (generate-new-buffer (planbridge--card-name))
                           (planbridge-approval-mode)
                           (current-buffer)))))
         (attempt (plist-get view :attempt))
         (shown (plist-get (buffer-local-value 'planbridge--card-view card) :attempt))
         (new (not (equal attempt (or shown (car planbridge--card-memory)))))
         (comments (and (not shown) (equal attempt (car planbridge--card-memory))
                        (cdr planbridge--card-memory)))
         (id planbridge--session-id)
         (dir default-directory))
    (setq planbridge--card-memory nil)
    (with-current-buffer card
      (setq planbridge--card-session id)
      (setq default-directory dir)
      (cond (comments (setq planbridge--card-comments comments))
            ((not (equal attempt shown)) (setq planbridge--card-comments nil)))
      (setq planbridge--card-view view))
    (when (planbridge--draw-card card)
      (let ((win (or (get-buffer-window card t)
                     (display-buffer card planbridge-approval-display-action))))
        (when (window-live-p win)
          ;; The width may differ from the one guessed before display.
          (unless (equal (planbridge--card-target-width card)
                         (buffer-local-value 'planbridge--card-width card))
            (planbridge--draw-card card))
          (when (and (or select (and new planbridge-select-approval-card))
                     (not (eq (selected-window) win)))
            (select-window win)
            (goto-char (point-min))))))))

(defun planbridge--dismiss-card ()
  "Remove the current session's approval card, if it exists."
  (when-let ((card (planbridge--card-live-p)))
    (setq planbridge--card nil)
    (setq planbridge--card-memory
          (cons (plist-get (buffer-local-value 'planbridge--card-view card) :attempt)
                (buffer-local-value 'planbridge--card-comments card)))
    (dolist (win (get-buffer-window-list card nil t))
      (when (window-live-p win)
        (quit-window nil win)))
    (let ((kill-buffer-query-functions nil))
      (kill-buffer card))))

(defun planbridge--card-target-width (card)
  "Return the width of a card row for CARD: its narrowest window's width.
One column is left for the continuation glyph of terminals."
  (let ((wins (get-buffer-window-list card nil t)))
    (max 20
         (1- (if wins
                 (apply #'min (mapcar #'window-body-width wins))
               (window-body-width
                (or (let ((session (planbridge--session-buffer-of
                                    (buffer-local-value 'planbridge--card-session card))))
                      (and session (get-buffer-window session t)))
                    (selected-window))))))))

(defun planbridge--draw-card (card)
  "Draw CARD from its view; return non-nil if it was drawn.
The card is built as a string first and replaces the old one only
when it is complete.  When building fails, the card is dismissed and
nothing is sent to the backend: the approval stays pending."
  (cl-assert (planbridge--card-p card))
  (let* ((width (planbridge--card-target-width card))
         (text (condition-case err
                   (with-current-buffer card
                     (planbridge--card-string planbridge--card-view width
                                              planbridge--card-comments))
                 (error
                  (planbridge--card-failed card err)
                  nil))))
    (when text
      (with-current-buffer card
        (let ((inhibit-read-only t)
              (line (line-number-at-pos))
              (column (current-column)))
          (erase-buffer)
          (insert text)
          (goto-char (point-min))
          (forward-line (1- line))
          (move-to-column column))
        (setq planbridge--card-width width)
        (set-buffer-modified-p nil))
      t)))

(defun planbridge--card-failed (card err)
  "Dismiss CARD, which could not be drawn because of ERR, and say so."
  (let ((session (planbridge--session-buffer-of
                  (buffer-local-value 'planbridge--card-session card))))
    (if session
        (with-current-buffer session (planbridge--dismiss-card))
      (let ((kill-buffer-query-functions nil))
        (kill-buffer card)))
    (message "planbridge: Could not draw the approval card (%s); the plan is still pending"
             (error-message-string err))))

(defun planbridge--card-p (buffer)
  "Return non-nil if BUFFER is a live approval card buffer."
  (and (buffer-live-p buffer)
       (eq (buffer-local-value 'major-mode buffer) 'planbridge-approval-mode)))

(defun planbridge--card-redraw-soon (window)
  "Redraw the card shown in WINDOW soon if its width changed.
Run from the buffer-local window change hooks of a card buffer."
  (let ((card (and (windowp window) (window-buffer window))))
    (when (planbridge--card-p card)
      (run-at-time 0 nil
                   (lambda ()
                     (when (and (planbridge--card-p card)
                                (not (equal (planbridge--card-target-width card)
                                            (buffer-local-value 'planbridge--card-width card))))
                       (planbridge--draw-card card)))))))

(defun planbridge--card-row (width text &rest props)
  "Return TEXT cut to WIDTH with an ellipsis, as one card row.
The full text is the row's `help-echo'; PROPS are added to it."
  (let* ((plain (substring-no-properties text))
         (row (if (> (string-width text) width)
                  (truncate-string-to-width text width nil nil "…")
                text)))
    (setq row (concat row "\n"))
    (add-text-properties 0 (length row) `(help-echo ,plain ,@props) row)
    row))

(defun planbridge--card-cell (key label value &optional value-face)
  "Return the text of a card row: KEY, LABEL and VALUE in VALUE-FACE."
  (concat " "
          (propertize (string-pad (or key "") 4) 'face 'planbridge-card-key)
          (propertize (string-pad label 14) 'face 'planbridge-card-label)
          (propertize value 'face (or value-face 'planbridge-card-value))))

(defun planbridge--capitalize-value (value)
  "Return VALUE, an axis value such as \"here\", for display."
  (if (or (null value) (equal value "")) "—" (capitalize value)))

(defun planbridge--skill-name (path view)
  "Return the display name of the skill at PATH, looked up in VIEW."
  (or (seq-some (lambda (skill)
                  (and (equal (plist-get skill :path) path)
                       (plist-get skill :name)))
                (plist-get view :skills))
      (file-name-nondirectory (directory-file-name (file-name-directory path)))))

(defun planbridge--card-axis-rows (view)
  "Return the Implementation rows of VIEW: a list of (AXIS KEY LABEL VALUE FACE).
The list has the same length for every selection."
  (let* ((sel (plist-get view :selection))
         (goal (equal (plist-get sel :execution) "goal"))
         (budget (plist-get sel :budget))
         (model (plist-get sel :model))
         (effort (plist-get sel :effort))
         (skills (plist-get sel :skills))
         (instructions (or (plist-get sel :instructions) "")))
    (list
     (list 'location "l" "Location"
           (planbridge--capitalize-value (plist-get sel :location)))
     (list 'context "c" "Context"
           (pcase (plist-get sel :context)
             ("summary" "Summary (one extra model request)")
             (value (planbridge--capitalize-value value))))
     (list 'execution "e" "Execution"
           (planbridge--capitalize-value (plist-get sel :execution)))
     (if goal
         (list 'budget "b" "Budget"
               (if (and (integerp budget) (> budget 0))
                   (format "%d tokens" budget)
                 "Unlimited"))
       (list 'budget nil "Budget" "Goal execution only" 'planbridge-card-dimmed))
     (list 'mode "m" "Mode" (or (plist-get sel :mode) "—"))
     (list 'model "M" "Model"
           (concat (if (or (null model) (equal model "")) "default" model)
                   " · effort "
                   (if (or (null effort) (equal effort "")) "default" effort)))
     (list 'skills "s" "Skills"
           (if (seq-empty-p skills)
               "none"
             (mapconcat (lambda (p) (planbridge--skill-name p view)) skills ", ")))
     (list 'instructions "i" "Instructions"
           (if (string-empty-p instructions)
               "none"
             (let ((lines (split-string instructions "\n")))
               (if (cdr lines)
                   (format "%s (+%d lines)" (car lines) (1- (length lines)))
                 (car lines))))))))

(defun planbridge--card-notice (view)
  "Return the notice row text of VIEW, possibly empty."
  (let ((sel (plist-get view :selection))
        (blockers (append (plist-get view :blockers) nil))
        (notice (plist-get view :notice)))
    (string-join
     (delq nil
           (list (and (equal (plist-get sel :location) "worktree") blockers
                      (concat "Worktree blocked by: " (string-join blockers "; ")))
                 (and notice (not (equal notice "")) notice)))
     " · ")))

(defun planbridge--card-footer (comments)
  "Return the action footer, mentioning the COMMENTS to send."
  (concat (propertize "RET" 'face 'planbridge-card-key) " accept  "
          (propertize "f" 'face 'planbridge-card-key) " feedback"
          (if comments (format " (%d comment%s)" (length comments)
                               (if (cdr comments) "s" ""))
            "")
          "  "
          (propertize "E" 'face 'planbridge-card-key) " edit  "
          (propertize "q" 'face 'planbridge-card-key) " hide  "
          (propertize "C-g" 'face 'planbridge-card-key) " cancel  "
          (propertize ";" 'face 'planbridge-card-key) " comment line"))

(defun planbridge--card-body-line (line)
  "Return LINE of the plan's Markdown with a face for headings."
  (if (string-match-p "\\`#+ " line)
      (propertize line 'face 'planbridge-card-heading)
    line))

(defun planbridge--card-string (view width comments)
  "Return the text of the approval card of VIEW for rows WIDTH wide.
COMMENTS are the comments collected on plan lines."
  (let* ((title (or (plist-get view :title) "Proposed plan"))
         (body (or (plist-get view :body) (plist-get view :text) ""))
         (n 0))
    (concat
     (planbridge--card-row
      width
      (concat (propertize "Plan proposal: " 'face 'planbridge-card-heading)
              (propertize title 'face 'planbridge-proposal-title)
              (if (planbridge--view-true-p view :edited) " (edited by you)" ""))
      'planbridge-row 'title)
     (mapconcat (lambda (line)
                  (setq n (1+ n))
                  (let ((text (propertize (planbridge--card-body-line line)
                                          'planbridge-plan-line n)))
                    (when (assq n comments)
                      (setq text (concat text (propertize "  ✎" 'face 'planbridge-card-notice
                                                          'planbridge-plan-line n))))
                    (concat text "\n")))
                (split-string body "\n")
                "")
     "\n"
     (planbridge--card-row width (propertize "Implementation" 'face 'planbridge-card-heading)
                           'planbridge-row 'implementation)
     (mapconcat (lambda (row)
                  (pcase-let ((`(,axis ,key ,label ,value ,face) row))
                    (planbridge--card-row
                     width
                     (planbridge--card-cell key label value
                                            (or face 'planbridge-card-value))
                     'planbridge-row axis)))
                (planbridge--card-axis-rows view)
                "")
     (planbridge--card-row width
                           (propertize (planbridge--card-notice view)
                                       'face 'planbridge-card-notice)
                           'planbridge-row 'notice)
     (planbridge--card-row width (planbridge--card-footer comments)
                           'planbridge-row 'footer))))

(defvar planbridge-approval-mode-map
  (let ((map (make-sparse-keymap)))
    (define-key map (kbd "l") #'planbridge-approval-cycle-location)
    (define-key map (kbd "c") #'planbridge-approval-cycle-context)
    (define-key map (kbd "e") #'planbridge-approval-cycle-execution)
    (define-key map (kbd "b") #'planbridge-approval-set-budget)
    (define-key map (kbd "m") #'planbridge-approval-cycle-mode)
    (define-key map (kbd "TAB") #'planbridge-approval-cycle-mode)
    (define-key map (kbd "M") #'planbridge-approval-set-model)
    (define-key map (kbd "s") #'planbridge-approval-toggle-skill)
    (define-key map (kbd "i") #'planbridge-approval-edit-instructions)
    (define-key map (kbd "RET") #'planbridge-approval-accept)
    (define-key map (kbd "f") #'planbridge-approval-feedback)
    (define-key map (kbd ";") #'planbridge-approval-comment)
    (define-key map (kbd "E") #'planbridge-approval-edit-plan)
    (define-key map (kbd "q") #'planbridge-approval-hide)
    (define-key map (kbd "C-g") #'planbridge-approval-cancel)
    (define-key map (kbd "g") #'planbridge-approval-refresh)
    map)
  "Keymap of `planbridge-approval-mode', the approval card.")

(define-derived-mode planbridge-approval-mode special-mode "planbridge-approval"
  "Major mode of a planbridge approval card.
The plan is shown above its Implementation settings.  Each key
changes one setting; RET accepts the plan with them.

\\{planbridge-approval-mode-map}"
  (setq-local truncate-lines nil)
  (setq-local word-wrap t)
  (setq-local revert-buffer-function
              (lambda (&rest _) (planbridge-approval-refresh)))
  (add-hook 'window-size-change-functions #'planbridge--card-redraw-soon nil t)
  (add-hook 'window-buffer-change-functions #'planbridge--card-redraw-soon nil t))

(defun planbridge--card-or-error ()
  "Return (SESSION . VIEW) of the card in the current buffer.
Signal a `user-error' outside a card or when it has no pending plan."
  (unless (derived-mode-p 'planbridge-approval-mode)
    (user-error "planbridge: Not on an approval card"))
  (unless (planbridge--view-true-p planbridge--card-view :pending)
    (user-error "planbridge: No plan is waiting for approval"))
  (cons planbridge--card-session planbridge--card-view))

(defun planbridge--approval-error-handler (session what)
  "Return an error handler for approval action WHAT in SESSION.
A stale attempt is reported and the card fetched again; other errors
are reported as messages."
  (lambda (err)
    (let ((code (plist-get (plist-get err :data) :code)))
      (if (equal code "stale_attempt")
          (progn
            (message "planbridge: This approval card is no longer current; nothing changed")
            (when-let ((buf (planbridge--session-buffer-of session)))
              (with-current-buffer buf
                (planbridge--refresh-approval))))
        (funcall (planbridge--error-reporter what) err)))))

(cl-defun planbridge--approval-action (session attempt method extra &key success)
  "Send approval METHOD for ATTEMPT of SESSION with EXTRA parameters.
SUCCESS is called with the result; by default a result that is an
approval view is applied to the session."
  (planbridge--async
   method `(:session ,session :attempt ,attempt ,@extra)
   :success (or success
                (lambda (view)
                  (when-let ((buf (and (plist-get view :attempt)
                                       (planbridge--session-buffer-of session))))
                    (with-current-buffer buf
                      (planbridge--apply-approval view)))))
   :error (planbridge--approval-error-handler
           session (planbridge--method-name method))))

(defun planbridge--card-update (change)
  "Send CHANGE, a plist for `approval/update', for the card at point."
  (pcase-let ((`(,session . ,view) (planbridge--card-or-error)))
    (planbridge--approval-action session (plist-get view :attempt)
                                 :approval/update (list :change change))))

(defun planbridge-approval-cycle-location ()
  "Cycle the Location of the implementation: Here, Worktree."
  (interactive)
  (planbridge--card-update '(:axis "location" :cycle t)))

(defun planbridge-approval-cycle-context ()
  "Cycle the Context of the implementation: Current, Fresh, Summary."
  (interactive)
  (planbridge--card-update '(:axis "context" :cycle t)))

(defun planbridge-approval-cycle-execution ()
  "Cycle the Execution of the implementation: Direct, Goal."
  (interactive)
  (planbridge--card-update '(:axis "execution" :cycle t)))

(defun planbridge-approval-cycle-mode ()
  "Cycle the permission Mode of the implementation."
  (interactive)
  (planbridge--card-update '(:axis "mode" :cycle t)))

(defun planbridge--read-budget ()
  "Read a Goal token budget: a positive integer, or 0 for unlimited."
  (let ((text (string-trim (read-string "Goal budget in tokens (empty = unlimited): "))))
    (cond ((string-empty-p text) 0)
          ((string-match-p "\\`[0-9]+\\'" text)
           (let ((n (string-to-number text)))
             (if (> n 0) n
               (user-error "planbridge: The budget must be a positive number of tokens"))))
          (t (user-error "planbridge: The budget must be a positive number of tokens")))))

(defun planbridge-approval-set-budget (budget)
  "Set the Goal token BUDGET; 0 (empty input) means unlimited."
  (interactive
   (progn
     (let ((view (cdr (planbridge--card-or-error))))
       (unless (equal (plist-get (plist-get view :selection) :execution) "goal")
         (user-error "planbridge: The budget applies to Goal execution only (press e)")))
     (list (planbridge--read-budget))))
  (planbridge--card-update (list :axis "budget" :budget budget)))

(defun planbridge-approval-set-model (model effort)
  "Choose the implementation MODEL and its EFFORT.
EFFORT is nil or empty for the model's default."
  (interactive
   (let* ((view (cdr (planbridge--card-or-error)))
          (models (append (plist-get view :models) nil))
          (names (mapcar (lambda (m) (plist-get m :name)) models)))
     (unless models
       (user-error "planbridge: No model catalog (see `planbridge-models')"))
     (let* ((model (completing-read "Implementation model: " names nil t nil nil
                                    (plist-get (plist-get view :selection) :model)))
            (efforts (append (plist-get (seq-find (lambda (m) (equal (plist-get m :name) model))
                                                  models)
                                        :efforts)
                             nil)))
       (list model
             (and efforts
                  (completing-read "Effort (empty for the default): " efforts nil t))))))
  (pcase-let ((`(,session . ,view) (planbridge--card-or-error)))
    (let ((attempt (plist-get view :attempt)))
      (planbridge--approval-action
       session attempt :approval/update (list :change (list :axis "model" :value model))
       :success
       (lambda (result)
         (if (null effort)
             (when-let ((buf (planbridge--session-buffer-of session)))
               (with-current-buffer buf (planbridge--apply-approval result)))
           (planbridge--approval-action
            session attempt :approval/update
            (list :change (list :axis "effort" :value effort)))))))))

(defun planbridge-approval-toggle-skill (path)
  "Toggle the skill whose SKILL.md is at PATH for the implementation."
  (interactive
   (let* ((view (cdr (planbridge--card-or-error)))
          (skills (seq-filter (lambda (s)
                                (and (planbridge--true-p (plist-get s :user_invocable))
                                     (not (planbridge--true-p (plist-get s :disabled)))))
                              (plist-get view :skills)))
          (table (mapcar (lambda (s)
                           (cons (format "%s — %s" (plist-get s :name)
                                         (or (plist-get s :description) ""))
                                 (plist-get s :path)))
                         skills)))
     (unless table
       (user-error "planbridge: No user-invocable skills found"))
     (list (cdr (assoc (completing-read "Toggle skill: " table nil t) table)))))
  (pcase-let* ((`(,_session . ,view) (planbridge--card-or-error))
               (current (append (plist-get (plist-get view :selection) :skills) nil)))
    (planbridge--card-update
     (list :axis "skills"
           :skills (vconcat (if (member path current)
                                (delete path current)
                              (append current (list path))))))))

(defun planbridge-approval-accept (&optional branch)
  "Accept the plan with the card's settings.
For a Worktree location, BRANCH names the new branch; it is read in
the minibuffer."
  (interactive
   (let ((view (cdr (planbridge--card-or-error))))
     (list (and (equal (plist-get (plist-get view :selection) :location) "worktree")
                (let ((name (string-trim (read-string "Branch for the worktree: "))))
                  (when (string-empty-p name)
                    (user-error "planbridge: A Worktree implementation needs a branch name"))
                  name)))))
  (pcase-let ((`(,session . ,view) (planbridge--card-or-error)))
    (planbridge--approval-action
     session (plist-get view :attempt) :approval/accept
     (and branch (list :branch branch))
     :success (lambda (result)
                (message "planbridge: %s"
                         (or (plist-get result :message) "Plan accepted"))))))

(defun planbridge-approval-hide ()
  "Hide the card; the plan stays pending.
The header's \"1 plan\" or \\[planbridge-show-approval] shows it again."
  (interactive)
  (pcase-let ((`(,session . ,view) (planbridge--card-or-error)))
    (planbridge--approval-action session (plist-get view :attempt) :approval/hide nil)))

(defun planbridge-approval-cancel ()
  "Cancel the approval: the plan becomes a draft, the settings are dropped."
  (interactive)
  (pcase-let ((`(,session . ,view) (planbridge--card-or-error)))
    (planbridge--approval-action
     session (plist-get view :attempt) :approval/cancel nil
     :success (lambda (_)
                (message "planbridge: Plan cancelled; it is a draft now")
                (when-let ((buf (planbridge--session-buffer-of session)))
                  (with-current-buffer buf
                    (planbridge--close-approval (plist-get view :attempt))))))))

(defun planbridge-approval-refresh ()
  "Fetch the approval again and redraw the card."
  (interactive)
  (pcase-let ((`(,session . ,_view) (planbridge--card-or-error)))
    (when-let ((buf (planbridge--session-buffer-of session)))
      (with-current-buffer buf (planbridge--refresh-approval)))))

(defun planbridge-approval-comment (text)
  "Comment TEXT on the plan line at point; it is sent with the feedback."
  (interactive
   (progn
     (planbridge--card-or-error)
     (let ((line (get-text-property (line-beginning-position) 'planbridge-plan-line)))
       (unless line
         (user-error "planbridge: Move to a line of the plan to comment on it"))
       (list (read-string (format "Comment on plan line %d: " line))))))
  (planbridge--card-or-error)
  (let ((line (get-text-property (line-beginning-position) 'planbridge-plan-line)))
    (unless line
      (user-error "planbridge: Move to a line of the plan to comment on it"))
    (if (string-empty-p (string-trim text))
        (setq planbridge--card-comments (assq-delete-all line planbridge--card-comments))
      (setf (alist-get line planbridge--card-comments) (string-trim text)))
    (planbridge--draw-card (current-buffer))
    (message "planbridge: %d comment(s) will be sent with the feedback (f)"
             (length planbridge--card-comments))))

;;; Drafts: instructions, feedback and the edited plan
;;;

(defvar-local planbridge--draft-save nil
  "Function called with the draft's text by \\[planbridge-draft-save].")

(defvar planbridge-draft-mode-map
  (let ((map (make-sparse-keymap)))
    (define-key map (kbd "C-c C-c") #'planbridge-draft-save)
    (define-key map (kbd "C-c C-k") #'planbridge-draft-cancel)
    map)
  "Keymap of `planbridge-draft-mode'.")

(define-minor-mode planbridge-draft-mode
  "Minor mode of planbridge draft buffers.
\\<planbridge-draft-mode-map>\\[planbridge-draft-save] sends the draft, \
\\[planbridge-draft-cancel] throws it away."
  :lighter " pb-draft"
  :keymap planbridge-draft-mode-map)

(defun planbridge--open-draft (name text what save &optional markdown)
  "Pop up draft buffer NAME holding TEXT, to be sent with SAVE.
SAVE is called with the text by \\<planbridge-draft-mode-map>\\[planbridge-draft-save].
WHAT says in the header line what saving does.  MARKDOWN non-nil
uses `markdown-mode' when it is installed."
  (let ((buf (get-buffer-create name)))
    (with-current-buffer buf
      (let ((inhibit-read-only t))
        (erase-buffer)
        (if (and markdown (require 'markdown-mode nil t))
            (markdown-mode)
          (text-mode))
        (insert text)
        (goto-char (point-min)))
      (planbridge-draft-mode 1)
      (setq planbridge--draft-save save)
      (setq header-line-format
            (substitute-command-keys
             (format "\\<planbridge-draft-mode-map>\\[planbridge-draft-save] %s, \\[planbridge-draft-cancel] cancel"
                     what)))
      (set-buffer-modified-p nil))
    (pop-to-buffer buf)
    buf))

(defun planbridge-draft-save ()
  "Send the draft in the current buffer and close it."
  (interactive)
  (unless planbridge--draft-save
    (user-error "planbridge: Not in a planbridge draft"))
  (let ((text (buffer-substring-no-properties (point-min) (point-max)))
        (save planbridge--draft-save)
        (buf (current-buffer)))
    (funcall save text)
    (planbridge--close-draft buf)))

(defun planbridge--close-draft (buf)
  "Quit the windows of draft buffer BUF and kill it."
  (dolist (win (get-buffer-window-list buf nil t))
    (when (window-live-p win)
      (quit-window nil win)))
  (kill-buffer buf))

(defun planbridge-draft-cancel ()
  "Throw away the draft in the current buffer."
  (interactive)
  (planbridge--close-draft (current-buffer))
  (message "planbridge: Draft discarded"))

(defun planbridge-approval-edit-instructions ()
  "Edit the implementation's Instructions in a buffer.
\\<planbridge-draft-mode-map>\\[planbridge-draft-save] saves them on the card, \\[planbridge-draft-cancel] cancels."
  (interactive)
  (pcase-let ((`(,session . ,view) (planbridge--card-or-error)))
    (let ((attempt (plist-get view :attempt)))
      (planbridge--open-draft
       (format "*planbridge instructions: %s*" session)
       (or (plist-get (plist-get view :selection) :instructions) "")
       "save the instructions"
       (lambda (text)
         (planbridge--approval-action
          session attempt :approval/update
          (list :change (list :axis "instructions" :value text))))))))

(defun planbridge-approval-feedback ()
  "Write feedback on the plan in a buffer; the agent revises the plan.
The comments made on plan lines with \\<planbridge-approval-mode-map>\
\\[planbridge-approval-comment] are sent with it."
  (interactive)
  (pcase-let ((`(,session . ,view) (planbridge--card-or-error)))
    (let ((attempt (plist-get view :attempt))
          (card (current-buffer))
          (comments (reverse planbridge--card-comments)))
      (planbridge--open-draft
       (format "*planbridge feedback: %s*" session)
       ""
       (if comments
           (format "send the feedback with %d line comment(s)" (length comments))
         "send the feedback")
       (lambda (text)
         (when (and (string-empty-p (string-trim text)) (null comments))
           (user-error "planbridge: The feedback is empty"))
         (planbridge--approval-action
          session attempt :approval/feedback
          `(:text ,text
                  ,@(and comments
                         (list :comments
                               (vconcat (mapcar (lambda (c)
                                                  (list :line (car c) :text (cdr c)))
                                                comments)))))
          :success (lambda (_)
                     (when (buffer-live-p card)
                       (with-current-buffer card
                         (setq planbridge--card-comments nil)))
                     (message "planbridge: Feedback sent; the plan is being revised"))))))))

(defun planbridge-approval-edit-plan ()
  "Edit the plan itself; the saved text becomes the proposal.
\\<planbridge-draft-mode-map>\\[planbridge-draft-save] saves, \\[planbridge-draft-cancel] cancels."
  (interactive)
  (pcase-let ((`(,session . ,view) (planbridge--card-or-error)))
    (let ((attempt (plist-get view :attempt)))
      (planbridge--open-draft
       (format "*planbridge plan edit: %s*" session)
       (or (plist-get view :body) "")
       "make this the proposed plan"
       (lambda (text)
         (when (string-empty-p (string-trim text))
           (user-error "planbridge: The edited plan is empty"))
         (planbridge--approval-action session attempt :approval/edit
                                      (list :body text)))
       t))))

;;; Session commands for the approval and the handoff
;;;

(defun planbridge--approval-counter ()
  "Return the header's interaction counter, or nil.
It shows while a plan is pending and its card is not visible."
  (let ((state (plist-get planbridge--info :approval))
        (card (planbridge--card-live-p)))
    (when (or (equal state "hidden")
              (and (equal state "shown")
                   (not (and card (get-buffer-window card t)))))
      (propertize "1 plan"
                  'face 'planbridge-counter
                  'mouse-face 'mode-line-highlight
                  'help-echo "mouse-1: show the plan waiting for approval"
                  'local-map (let ((map (make-sparse-keymap)))
                               (define-key map [header-line mouse-1]
                                 #'planbridge-show-approval)
                               map)))))

(defun planbridge--current-session-buffer ()
  "Return the session buffer the current buffer belongs to, or nil.
That is the current buffer in a session buffer, the card's session in
a card, else the session buffer of the current project."
  (cond
   (planbridge--session-id (current-buffer))
   (planbridge--card-session (planbridge--session-buffer-of planbridge--card-session))
   (t (ignore-errors (planbridge--live-buffer-for (planbridge--workspace))))))

(defun planbridge--current-session-id ()
  "Return the id of the session the current buffer belongs to.
Outside session buffers, the most recent stored session of the
current project.  Signal a `user-error' when there is none."
  (let ((buf (planbridge--current-session-buffer)))
    (if buf
        (buffer-local-value 'planbridge--session-id buf)
      (let ((workspace (planbridge--workspace)))
        (or (plist-get (seq-find (lambda (s) (equal (plist-get s :workspace) workspace))
                                 (planbridge--request :session/list nil))
                       :id)
            (user-error "planbridge: No session for %s" workspace))))))

(defun planbridge-show-approval (&optional event)
  "Show the plan waiting for approval in this session, if any.
A hidden card is shown again.  EVENT is the mouse event, when the
header line's counter was clicked."
  (interactive (list (and (mouse-event-p last-input-event) last-input-event)))
  (let ((buf (if event
                 (window-buffer (posn-window (event-start event)))
               (or (planbridge--current-session-buffer)
                   (user-error "planbridge: Not in a session buffer")))))
    (with-current-buffer buf
      (let ((id (planbridge--session-or-error)))
        (planbridge--async
         :approval/get (list :session id)
         :success
         (lambda (view)
           (cond
            ((not (planbridge--view-true-p view :pending))
             (message "planbridge: No plan is waiting for approval"))
            ((planbridge--view-true-p view :hidden)
             (planbridge--approval-action
              id (plist-get view :attempt) :approval/show nil
              :success (lambda (shown)
                         (when (buffer-live-p buf)
                           (with-current-buffer buf
                             (planbridge--apply-approval shown t))))))
            ((buffer-live-p buf)
             (with-current-buffer buf
               (planbridge--apply-approval view t))))))))))

(defun planbridge-queue-follow-up ()
  "Queue the composer text as a follow-up without touching the plan.
Unlike RET, it does not demote a pending proposal: it waits behind the
running turn, or runs after the implementation kickoff."
  (interactive)
  (let ((id (planbridge--session-or-error))
        (text (string-trim (planbridge--composer-text))))
    (when (string-empty-p text)
      (user-error "planbridge: Nothing to queue"))
    (delete-region planbridge--input-start (point-max))
    (planbridge--async
     :session/queue (list :session id :text text)
     :success (lambda (result)
                (message "planbridge: Follow-up %s"
                         (if (planbridge--true-p (plist-get result :queued))
                             "queued"
                           "sent"))))))

;;;###autoload
(defun planbridge-retry-plan-implementation ()
  "Resume the handoff of this session's accepted plan from its last step.
Nothing is archived, summarised or sent twice."
  (interactive)
  (let ((id (progn (planbridge--connection) (planbridge--current-session-id))))
    (planbridge--async
     :handoff/retry (list :session id)
     :success (lambda (_) (message "planbridge: Retrying the plan implementation"))
     :error (lambda (err)
              (if (equal (plist-get (plist-get err :data) :code) "nothing_to_retry")
                  (message "planbridge: Nothing to retry: no accepted plan is waiting")
                (funcall (planbridge--error-reporter "handoff/retry") err))))))

(defun planbridge-save-plan ()
  "Save the accepted plan into the project as docs/plans/DATE-SLUG.md."
  (interactive)
  (let ((id (planbridge--current-session-id)))
    (planbridge--async
     :handoff/savePlan (list :session id)
     :success (lambda (result)
                (message "planbridge: Saved the plan to %s" (plist-get result :path))))))

(defun planbridge-plan-status ()
  "Show the Plan posture, the proposal and the blocked-call count."
  (interactive)
  (let ((status (planbridge--request :plan/status
                                     (list :session (planbridge--current-session-id)))))
    (message "planbridge: %s" (plist-get status :text))))

;;; Tracking: the todo list and the accepted plan's steps
;;;

(defconst planbridge--todo-marks
  '(("pending" "[ ]" nil)
    ("in_progress" "[>]" planbridge-tracking-active)
    ("completed" "[x]" planbridge-tracking-done)
    ("blocked" "[!]" planbridge-blocked)
    ("skipped" "[-]" planbridge-tracking-done))
  "Mark and face of each todo or plan step status.")

(defun planbridge--tracking-item (status text)
  "Return the line of a todo item or plan step with STATUS and TEXT.
TEXT, written by the model, is cut to its first line."
  (pcase-let ((`(,mark ,face) (or (cdr (assoc status planbridge--todo-marks))
                                  (list "[?]" nil))))
    (concat "  " (propertize (concat mark " " (planbridge--clip text 200))
                             'face face
                             'planbridge-status status))))

(defun planbridge--step-line (step)
  "Return the line of plan STEP, a plist.
The step in progress reads in the gerund (\"Adding the flag\"), the
others in the imperative (\"Add the flag\")."
  (let ((status (plist-get step :status)))
    (planbridge--tracking-item
     status
     (or (and (equal status "in_progress")
              (planbridge--nonempty (plist-get step :gerund)))
         (plist-get step :imperative)
         ""))))

(defun planbridge--plan-lines (plan)
  "Return the lines of the tracked PLAN, a heading above one per step.
A finished plan is one line."
  (let* ((steps (append (plist-get plan :steps) nil))
         (status (plist-get plan :status))
         (reason (planbridge--nonempty (plist-get plan :reason))))
    (cons (propertize
           (format "Plan: %s — %d/%d steps%s"
                   (planbridge--clip (or (planbridge--nonempty (plist-get plan :title))
                                         "accepted plan"))
                   (planbridge--steps-done steps) (length steps)
                   (pcase status
                     ("done" ", done")
                     ("paused" (format ", paused%s (M-x planbridge-resume-implementation)"
                                       (if reason (format ": %s" reason) "")))
                     (_ "")))
           'face 'planbridge-tracking-heading)
          (unless (equal status "done")
            (mapcar #'planbridge--step-line steps)))))

(defun planbridge--todo-lines (todos)
  "Return the lines of the todo list TODOS: a heading and its items."
  (cons (propertize (format "Todo: %d/%d done"
                            (seq-count (lambda (item)
                                         (equal (plist-get item :status) "completed"))
                                       todos)
                            (length todos))
                    'face 'planbridge-tracking-heading)
        (mapcar (lambda (item)
                  (planbridge--tracking-item (plist-get item :status)
                                             (or (plist-get item :content) "")))
                todos)))

(defun planbridge--tracking-string ()
  "Return the text of the tracking section, or nil when it is empty."
  (let ((lines (append (and planbridge--tracked-plan
                            (planbridge--plan-lines planbridge--tracked-plan))
                       (and planbridge--todos
                            (planbridge--todo-lines planbridge--todos)))))
    (when lines
      (concat "\n" (mapconcat #'identity lines "\n") "\n"))))

(defun planbridge--draw-tracking ()
  "Redraw the tracking section of the current session buffer.
The section sits between the transcript and the prompt, and is
replaced as a whole; the transcript keeps growing above it."
  (let ((inhibit-read-only t)
        (buffer-undo-list t)
        (pos (marker-position planbridge--transcript-end))
        (text (planbridge--tracking-string)))
    (save-excursion
      (when (get-text-property pos 'planbridge-tracking)
        (delete-region pos (next-single-property-change pos 'planbridge-tracking
                                                        nil (point-max))))
      (when text
        (goto-char pos)
        (insert (propertize text 'planbridge-tracking t 'read-only t
                            'front-sticky nil 'rear-nonsticky t))
        ;; The marker advanced over the section; the transcript ends before it.
        (set-marker planbridge--transcript-end pos)))
    (force-mode-line-update)))

(defun planbridge--apply-tracked-plan (plan)
  "Make PLAN, a tracked plan plist or nil, the session's plan progress.
A change of its status is noted in the transcript."
  (let ((old (plist-get planbridge--tracked-plan :status))
        (new (plist-get plan :status)))
    (setq planbridge--tracked-plan plan)
    (planbridge--draw-tracking)
    (unless (equal old new)
      (let ((steps (append (plist-get plan :steps) nil))
            (reason (planbridge--nonempty (plist-get plan :reason))))
        (pcase new
          ("paused"
           (planbridge--insert-line
            'planbridge-diagnostic
            (format "⏸ Plan implementation paused%s; resume with M-x planbridge-resume-implementation"
                    (if reason (format " (%s)" reason) ""))))
          ("done"
           (planbridge--insert-line
            'planbridge-notice
            (format "ℹ Plan implementation done: %d/%d steps"
                    (planbridge--steps-done steps) (length steps)))))))))

(defun planbridge--refresh-tracking ()
  "Fetch the session's todo list and plan progress with `session/tracking'."
  (let ((buf (current-buffer)))
    (planbridge--async
     :session/tracking (list :session planbridge--session-id)
     :success (lambda (result)
                (when (buffer-live-p buf)
                  (with-current-buffer buf
                    (setq planbridge--todos (append (plist-get result :todos) nil))
                    (setq planbridge--tracked-plan (plist-get result :plan))
                    (planbridge--draw-tracking)))))))

(defun planbridge--session-command (method &optional what)
  "Send METHOD for the current session, saying WHAT on success, if given."
  (let ((id (progn (planbridge--connection) (planbridge--current-session-id))))
    (planbridge--async
     method (list :session id)
     :success (lambda (_) (when what (message "planbridge: %s" what))))))

(defun planbridge-compact ()
  "Compact the conversation into a summary that becomes the context.
An accepted plan being implemented survives it.  Also `/compact' in
the composer."
  (interactive)
  ;; The backend's notice says that it is compacting.
  (planbridge--session-command :session/compact))

(defun planbridge-resume-implementation ()
  "Resume a paused implementation of an accepted plan.
Only the steps still to do are run."
  (interactive)
  (planbridge--session-command :implementation/resume
                               "Resuming the plan implementation"))

;;; Goal
;;;

(defun planbridge--apply-goal (data)
  "Apply DATA of a `goal' event: the Goal, its summary.
A new Goal and each change of its status are noted in the transcript."
  (let* ((old planbridge--goal)
         (goal (plist-get data :goal))
         (status (plist-get goal :status))
         (reason (planbridge--nonempty (plist-get goal :reason))))
    (setq planbridge--goal goal)
    (planbridge--update-info (list :goal (if goal (or (plist-get data :summary) "") "")))
    (cond
     ((and old (null goal))
      (planbridge--insert-line 'planbridge-notice "◎ Goal cleared"))
     ((null goal))
     ((not (equal (plist-get old :id) (plist-get goal :id)))
      (planbridge--insert-line (planbridge--goal-face status)
                               "◎ Goal " (or status "?") ": "
                               (or (plist-get goal :objective) "")))
     ;; Accounting is settled after the status changes: the header
     ;; shows it, the line does not.
     ((not (equal (plist-get old :status) status))
      (planbridge--insert-line (planbridge--goal-face status)
                               "◎ Goal " (or status "?")
                               (if reason (concat ": " reason) ""))))))

(defun planbridge--refresh-goal ()
  "Fetch the session's Goal with `goal/get'."
  (let ((buf (current-buffer)))
    (planbridge--async
     :goal/get (list :session planbridge--session-id)
     :success (lambda (result)
                (when (buffer-live-p buf)
                  (with-current-buffer buf
                    (let ((goal (plist-get result :goal)))
                      (setq planbridge--goal goal)
                      (planbridge--update-info
                       (list :goal (if goal (or (plist-get result :summary) "") ""))))))))))

(defun planbridge--goal-command (method &optional params)
  "Send Goal METHOD with PARAMS for the current session.
The backend's answer, such as \"Goal paused.\", becomes the message."
  (let ((id (progn (planbridge--connection) (planbridge--current-session-id))))
    (planbridge--async
     method `(:session ,id ,@params)
     :success (lambda (result)
                (message "planbridge: %s" (or (plist-get result :message) "Done"))))))

(defconst planbridge--goal-verbs '("pause" "resume" "budget" "edit" "clear")
  "Words that start a `/goal' subcommand rather than an objective.")

(defun planbridge--read-objective (prompt &optional initial)
  "Read a Goal objective with PROMPT, starting from INITIAL.
The objective may not be empty nor start with a `/goal' subcommand
word: the backend would run that subcommand instead."
  (let ((text (string-trim (read-string prompt initial))))
    (when (string-empty-p text)
      (user-error "planbridge: The objective is empty"))
    ;; The backend matches the first word exactly, as `/goal' does.
    (when (member (car (split-string text " ")) planbridge--goal-verbs)
      (user-error "planbridge: An objective cannot start with \"%s\"; rephrase it"
                  (car (split-string text " "))))
    text))

(defun planbridge--session-goal ()
  "Return the Goal known to the current session buffer, or nil."
  (when-let ((buf (planbridge--current-session-buffer)))
    (buffer-local-value 'planbridge--goal buf)))

(defun planbridge-goal (objective)
  "Start a Goal: the agent works toward OBJECTIVE turn after turn.
It continues until the agent reports it complete or blocked, it is
paused, or its token budget runs out.  Also `/goal OBJECTIVE'."
  (interactive (list (planbridge--read-objective "Goal objective: ")))
  (planbridge--goal-command :goal/start (list :objective objective)))

(defun planbridge-goal-pause ()
  "Pause the session's Goal; work in flight finishes, nothing continues."
  (interactive)
  (planbridge--goal-command :goal/pause))

(defun planbridge-goal-resume (steering)
  "Resume the session's paused Goal.
STEERING, when not empty, is a prompt that runs first as a Goal turn."
  (interactive (list (string-trim (read-string "Steering for the Goal (empty for none): "))))
  (planbridge--goal-command
   :goal/resume (and steering (not (string-empty-p steering))
                     (list :steering steering))))

(defun planbridge-goal-budget (budget)
  "Set the Goal's token BUDGET; 0 (empty input) means none."
  (interactive (list (planbridge--read-budget)))
  (planbridge--goal-command :goal/budget (list :budget budget)))

(defun planbridge-goal-edit (objective)
  "Change the Goal's OBJECTIVE."
  (interactive (list (planbridge--read-objective
                      "Goal objective: "
                      (plist-get (planbridge--session-goal) :objective))))
  (planbridge--goal-command :goal/edit (list :objective objective)))

(defun planbridge-goal-clear ()
  "Clear the session's Goal."
  (interactive)
  (planbridge--goal-command :goal/clear))

;;; Share links
;;;

(defun planbridge--request-unlogged (method params)
  "Send METHOD with PARAMS, wait, and keep the answer out of the wire log.
For answers that carry secrets."
  (let* ((conn (planbridge--connection))
         (size (jsonrpc--events-buffer-scrollback-size conn)))
    (planbridge--log conn "%s (answer not logged: it carries secrets)"
                     (planbridge--method-name method))
    (setf (jsonrpc--events-buffer-scrollback-size conn) 0)
    (unwind-protect
        (planbridge--request method params)
      (setf (jsonrpc--events-buffer-scrollback-size conn) size))))

(defun planbridge--share-buffer-name (session)
  "Return the name of the buffer listing the share links of SESSION."
  (format "*planbridge share: %s*" session))

(defun planbridge--copy-link (link)
  "Copy the URL of share LINK, a plist, to the kill ring.
The message names the tier, never the URL."
  (kill-new (plist-get link :url))
  (message "planbridge: Copied the %s link (expires %s)"
           (plist-get link :tier)
           (planbridge--format-time (plist-get link :expires_at))))

(defun planbridge--show-links (session links)
  "Show the share LINKS of SESSION in a small buffer, one per tier."
  (let ((buf (get-buffer-create (planbridge--share-buffer-name session))))
    (with-current-buffer buf
      (let ((inhibit-read-only t))
        (erase-buffer)
        (special-mode)
        (insert (propertize "Share links" 'face 'planbridge-card-heading)
                " — anyone with a link sees the transcript and the plan.\n"
                "Stop sharing with M-x planbridge-share-stop.\n\n")
        (dolist (link links)
          (insert " " (propertize (string-pad (or (plist-get link :tier) "?") 6)
                                  'face 'planbridge-card-label)
                  " ")
          (insert-text-button "[copy]"
                              'action (lambda (_) (planbridge--copy-link link))
                              'help-echo "Copy this link")
          (insert (format " expires %s  %s\n"
                          (planbridge--format-time (plist-get link :expires_at))
                          (plist-get link :url))))
        (goto-char (point-min))))
    (display-buffer buf '((display-buffer-reuse-window display-buffer-below-selected)
                          (window-height . fit-window-to-buffer)))
    buf))

;;;###autoload
(defun planbridge-share ()
  "Share the current session to browsers and copy a link.
Asks first: the links show the transcript and the plan, which may
contain secrets.  The links (view, full, owner) are listed in a small
buffer; the chosen one is copied to the kill ring.  Links are never
written to *Messages*."
  (interactive)
  (let ((id (progn (planbridge--connection) (planbridge--current-session-id))))
    (unless (yes-or-no-p "Share this session (links show its transcript and plan, which may contain secrets)? ")
      (user-error "planbridge: Not shared"))
    (let* ((result (planbridge--request-unlogged :share/start (list :session id)))
           (links (append (plist-get result :links) nil))
           (tiers (mapcar (lambda (link) (plist-get link :tier)) links)))
      (unless links
        (user-error "planbridge: The backend returned no share links"))
      (planbridge--show-links id links)
      ;; Tier names only: the minibuffer and its history never see a URL.
      (let ((tier (completing-read (format "Copy which link (%s)? " (string-join tiers ", "))
                                   tiers nil t nil t (car tiers))))
        (planbridge--copy-link
         (seq-find (lambda (link) (equal (plist-get link :tier) tier)) links))))))

;;;###autoload
(defun planbridge-share-stop ()
  "Stop sharing the current session; every link stops working."
  (interactive)
  (let ((id (progn (planbridge--connection) (planbridge--current-session-id))))
    (when-let ((buf (get-buffer (planbridge--share-buffer-name id))))
      (dolist (win (get-buffer-window-list buf nil t))
        (quit-window nil win))
      (kill-buffer buf))
    (planbridge--async
     :share/stop (list :session id)
     :success (lambda (result)
                (message (if (planbridge--true-p (plist-get result :stopped))
                             "planbridge: Sharing stopped; the links no longer work"
                           "planbridge: The session was not shared"))))))

;;; Worktree fork
;;;

(defun planbridge--forked (data)
  "Handle DATA of a `forked' event: this session continued in a fork.
The line says where; outside a replay the fork's session is opened
in every window that showed this one.  This buffer stays, ended."
  (let ((fork (plist-get data :fork))
        (branch (plist-get data :branch))
        (dir (plist-get data :dir)))
    (planbridge--update-info (list :forked_to fork :fork_branch branch))
    ;; The plan's progress moved to the fork with the implementation.
    (when planbridge--tracked-plan
      (setq planbridge--tracked-plan nil)
      (planbridge--draw-tracking))
    (planbridge--insert-line 'planbridge-notice
                             (format "⑂ Continued in a Worktree fork: branch %s in %s "
                                     (or branch "?") (or dir "?")))
    (planbridge--with-transcript
      (backward-char)
      (insert-text-button "[open]"
                          'action (lambda (_) (planbridge-open-session fork))
                          'help-echo "Open the fork's session"))
    (when (and fork (not planbridge--replaying))
      (planbridge--open-fork fork dir))))

(defun planbridge--open-fork (fork dir)
  "Open session FORK, a fork whose workspace is DIR, in place of this buffer.
Every window on any frame that showed the current buffer shows the
fork's buffer instead."
  (let* ((planning (current-buffer))
         (buf (planbridge--session-buffer
               `(:id ,fork ,@(and dir (file-directory-p dir) (list :workspace dir))))))
    (dolist (win (get-buffer-window-list planning nil t))
      (set-window-buffer win buf)
      (set-window-point win (with-current-buffer buf (point-max))))
    (message "planbridge: The implementation continues in the Worktree fork, buffer %s"
             (buffer-name buf))
    buf))

;;; Sessions list
;;;

(defun planbridge--format-time (string)
  "Return the RFC 3339 time STRING as a short local time."
  (or (ignore-errors
        (format-time-string "%Y-%m-%d %H:%M" (date-to-time string)))
      (or string "")))

(defun planbridge--session-entry (session)
  "Return the `tabulated-list-entries' element for SESSION, a plist."
  (let ((approval (plist-get session :approval)))
    (list (plist-get session :id)
          (vector (abbreviate-file-name (or (plist-get session :workspace) ""))
                  (or (plist-get session :title) "")
                  (if (planbridge--true-p (plist-get session :plan)) "Plan" "")
                  (or (plist-get session :mode) "")
                  (concat (or (plist-get session :proposal_status) "")
                          (if (and approval (not (equal approval "")))
                              (format " (card %s)" approval)
                            "")
                          (let ((goal (planbridge--nonempty (plist-get session :goal))))
                            (if (and goal (string-match "\\`Goal [a-z-]+" goal))
                                (concat " · " (match-string 0 goal))
                              ""))
                          (if (planbridge--nonempty (plist-get session :forked_to))
                              " · forked"
                            ""))
                  (planbridge--format-time (plist-get session :updated_at))))))

(defun planbridge--sessions-refresh ()
  "Fill the sessions list from the backend."
  (setq tabulated-list-entries
        (mapcar #'planbridge--session-entry
                (planbridge--request :session/list nil))))

(defvar planbridge-sessions-mode-map
  (let ((map (make-sparse-keymap)))
    (set-keymap-parent map tabulated-list-mode-map)
    (define-key map (kbd "RET") #'planbridge-sessions-open)
    map)
  "Keymap of `planbridge-sessions-mode'.")

(define-derived-mode planbridge-sessions-mode tabulated-list-mode "planbridge-sessions"
  "Major mode listing the stored planbridge sessions.
\\{planbridge-sessions-mode-map}"
  (setq tabulated-list-format
        [("Workspace" 28 t) ("Title" 30 t) ("Plan" 5 t) ("Mode" 10 t)
         ("Proposal / Goal" 28 t) ("Last activity" 16 t)])
  (setq tabulated-list-sort-key '("Last activity" . t))
  (add-hook 'tabulated-list-revert-hook #'planbridge--sessions-refresh nil t)
  (tabulated-list-init-header))

(defun planbridge-sessions-open ()
  "Open the session on the current line."
  (interactive)
  (let ((id (tabulated-list-get-id)))
    (unless id
      (user-error "planbridge: No session on this line"))
    (planbridge-open-session id)))

;;;###autoload
(defun planbridge-sessions ()
  "List the stored planbridge sessions; RET opens one."
  (interactive)
  (planbridge--connection)
  (let ((buf (get-buffer-create "*planbridge sessions*")))
    (with-current-buffer buf
      (planbridge-sessions-mode)
      (planbridge--sessions-refresh)
      (tabulated-list-print))
    (pop-to-buffer buf)
    buf))

;;; Cockpit
;;;

;;;###autoload (autoload 'planbridge-dispatch "planbridge" nil t)
(transient-define-prefix planbridge-dispatch ()
  "The planbridge cockpit: the session's commands in one menu."
  [["Posture"
    ("t" "Toggle Plan" planbridge-toggle-plan)
    ("m" "Cycle permission mode" planbridge-cycle-permission-mode)
    ("?" "/plan status" planbridge-plan-status)]
   ["Plan"
    ("a" "Show approval card" planbridge-show-approval)
    ("r" "Retry implementation" planbridge-retry-plan-implementation)
    ("i" "Resume implementation" planbridge-resume-implementation)
    ("s" "Save plan to project" planbridge-save-plan)]
   ["Goal"
    ("g" "Start a Goal" planbridge-goal)
    ("p" "Pause" planbridge-goal-pause)
    ("u" "Resume" planbridge-goal-resume)
    ("b" "Budget" planbridge-goal-budget)
    ("E" "Edit objective" planbridge-goal-edit)
    ("x" "Clear" planbridge-goal-clear)]]
  [["Session"
    ("k" "Interrupt" planbridge-interrupt)
    ("c" "Compact conversation" planbridge-compact)
    ("l" "Sessions" planbridge-sessions)
    ("e" "Events log" planbridge-events-buffer)]
   ["Share"
    ("S" "Share links" planbridge-share)
    ("X" "Stop sharing" planbridge-share-stop)]])

(provide 'planbridge)
;;; planbridge.el ends here

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
;;   C-u M-x planbridge          a new session for the current project
;;   M-x planbridge-open-session  reopen a stored session by id
;;
;; In the session buffer, type at the prompt and press RET (or
;; C-c C-c) to send.  C-<tab> toggles Plan, S-<tab> cycles the
;; permission mode (ask → edits → full-auto), C-c C-k interrupts the
;; running turn.  The header line shows the posture, e.g. `[Plan · ask]'.
;; Slash commands such as `/plan status' are handled by the backend;
;; `/help' lists them (so does C-h m), TAB completes them.  M-p, M-n
;; and M-r recall prompts, C-j starts a new line of one.
;;
;; When the agent proposes a plan, an approval card is displayed, not
;; selected, in the `*planbridge approval: PROJECT*' buffer; C-c C-a
;; goes to it.  It shows the plan above a compact
;; Implementation section, one row per setting.  There, l, c, e, b, m
;; (or TAB), M, s and i change Location, Context, Execution, Budget,
;; Mode, Model, Skills and Instructions; RET accepts, f sends feedback
;; (with the comments made on plan lines with `;'), E edits the plan,
;; q hides the card (the header's "1 plan" brings it back, as does
;; C-c C-a) and C-g cancels it, after asking; C-c C-r brings the
;; cancelled plan back.  A prompt typed while a plan waits asks whether
;; it is feedback or should be queued; C-c TAB in the composer queues a
;; follow-up that runs after the implementation starts.
;;
;;   M-x planbridge-sessions     every stored session, RET opens one,
;;                               d deletes one (after asking)
;;   M-x planbridge-dispatch     a transient menu of the session commands
;;   M-x planbridge-recover      after a crash, a failed step or a restart:
;;                               resume the handoff, the implementation,
;;                               the Goal or the queued prompts
;;
;; A Goal (Execution = Goal on the card, M-x planbridge-goal, or
;; `/goal OBJECTIVE') keeps the agent working turn after turn until it
;; is complete, blocked, paused or out of budget; the header shows its
;; status, token use and turns.  planbridge-goal-pause, -resume,
;; -budget, -edit and -clear act on it.  Above the prompt, the todo
;; list the agent keeps and the steps of an accepted plan being
;; implemented are shown live ([ ] pending, [>] in progress, [x] done);
;; M-x planbridge-recover continues a paused one and
;; M-x planbridge-compact summarises the conversation.  A Worktree
;; acceptance continues in a fork session whose buffer takes the place
;; of the planning buffer, which stays, marked ended.
;;
;;   M-x planbridge-share        share links for browsers (asks first;
;;                               the chosen link is copied, never shown
;;                               in *Messages*)
;;   M-x planbridge-share-stop   every link stops working
;;
;; The wire log lives in the `*planbridge events*' buffer when
;; `planbridge-events-buffer-size' is not 0, as eglot does it.
;;
;; The package is split by feature: this file (the connection, session
;; buffers, the transcript and its commands), planbridge-card.el,
;; planbridge-goal.el, planbridge-tracking.el, planbridge-share.el and
;; planbridge-sessions.el.  Each event kind is rendered by a method of
;; the generic function `planbridge-render-event'.

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
(declare-function planbridge--approval-counter "planbridge-card" ())
(declare-function planbridge--dismiss-card "planbridge-card" ())
(declare-function planbridge-show-approval "planbridge-card" (&optional event))
(declare-function planbridge-queue-follow-up "planbridge-card" ())
(declare-function planbridge--session-buffer-of "planbridge-card" (id))
(declare-function planbridge--pending-prompt-choice "planbridge-card" (text))
(declare-function planbridge-restore-draft "planbridge-card" ())


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
endpoint, (anthropic :base-url URL :model MODEL) to Anthropic's
Messages API.  The API key is read from auth-source for URL's host
and handed to the backend in its environment: it never travels on
the wire and is never written anywhere by planbridge.
\(acp :command (PROGRAM ARG...) :env ((NAME . VALUE)...)) drives an
Agent Client Protocol agent such as claude-agent-acp, codex-acp or
gemini --acp, under planbridge's gate; :env (optional) is put in the
backend's environment, which the agent inherits, never on the wire.
In Plan the agent process runs under planbridge's OS confinement
\(writes only to its own directory, TCP only to the model's ports;
PLANBRIDGE_ACP_PORTS in :env adds ports); `/plan status' and
`planbridge doctor' say which layers hold it."
  :type '(choice (const :tag "Backend default" nil)
                 (list :tag "Scripted replay"
                       (const script) (const :file) (file :must-match t))
                 (list :tag "OpenAI-compatible"
                       (const openai)
                       (const :base-url) (string :tag "Base URL")
                       (const :model) (string :tag "Model"))
                 (list :tag "Anthropic"
                       (const anthropic)
                       (const :base-url) (string :tag "Base URL")
                       (const :model) (string :tag "Model"))
                 (list :tag "ACP agent"
                       (const acp)
                       (const :command) (repeat :tag "Program and arguments" string)
                       (const :env) (alist :tag "Environment"
                                           :key-type string :value-type string))))

(defcustom planbridge-default-permission-mode "ask"
  "Permission mode given to sessions that `planbridge' creates.
Ask runs read-only tools and asks about the rest; edits also runs
file edits; full-auto runs everything.  Plan is independent of it."
  :type '(choice (const "ask") (const "edits") (const "full-auto")))

(defcustom planbridge-events-buffer-size 0
  "Maximum size in characters of the `*planbridge events*' wire log.
0, the default, disables the log; nil means no limit.  jsonrpc.el
pretty-prints every message it logs, which costs more than rendering
it: a session streaming text or reopening a long transcript is many
times slower with the log on.  Turn it on to debug the wire, for
instance with 2000000 (eglot's size).  The backend never sends
secrets, and an API key reaches it in its environment, so the log
never holds one; share links are scrubbed from it."
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

(defcustom planbridge-approval-timeout nil
  "Seconds an approval card may wait undecided, or nil for no limit.
When it expires the card closes as timed out, the proposal becomes a
draft and nothing runs.  Presenting a card or changing one of its
settings starts the time again."
  :type '(choice (const :tag "No limit" nil) (number :tag "Seconds")))

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

(defcustom planbridge-select-approval-card nil
  "Non-nil means a newly presented approval card is selected.
By default the card is displayed next to its session, if that is
visible, without taking the focus: a message says how to review it
\(\\[planbridge-show-approval]), so keys typed elsewhere never reach
it.  Its keys work only while point is in the card."
  :type 'boolean)

(defcustom planbridge-global-indicator t
  "Non-nil means `planbridge-indicator-mode' is turned on with a session.
It shows in every mode line when a turn runs or a plan waits."
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

(defvar planbridge--turn-boundary-hook nil
  "Hook run in a session buffer when a turn ends or input is queued.")

(defvar-local planbridge--draft-hash nil
  "Hash of the session's last proposal, which a cancel leaves as a draft.")

(defconst planbridge--user-prefix "▶ "
  "What starts the transcript line of each of the person's prompts.")

(defvar-local planbridge--pending-text nil
  "Text deltas received but not inserted yet, newest first.
The symbol `break' stands for the start of a new text run.")

(defvar-local planbridge--flush-timer nil
  "Timer that inserts `planbridge--pending-text', or nil.")

(defvar-local planbridge--rendered-kind nil
  "Kind of the last event rendered into the transcript, a symbol.
Streamed text is rendered when it is flushed, so this can lag behind
`planbridge--last-kind'.")

(defvar-local planbridge--card-session nil
  "Id of the session whose approval card this buffer shows.")

(defvar planbridge-indicator-mode)

(defvar planbridge--after-open-hook nil
  "Hook run in a session buffer after `session/open' rendered its events.")

(defvar-local planbridge--instance nil
  "Instance id of the backend whose events this buffer shows.")

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
    :documentation "Non-nil once the death of the process was reported.")
   (-instance
    :initform nil :accessor planbridge--conn-instance
    :documentation "The backend's instance id, from `initialize'.")
   (-process
    :initform nil :accessor planbridge--conn-process
    :documentation "The backend process.")
   (-log-size
    :initarg :log-size :initform nil :accessor planbridge--log-size
    :documentation "The size limit of the events buffer, as given at start."))
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
  (let ((max (planbridge--log-size conn)))
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
      ('acp
       (list :kind "acp" :command (vconcat (plist-get args :command))))
      ((and kind (or 'openai 'anthropic))
       (list :kind (symbol-name kind) :base_url (plist-get args :base-url)
             :model (plist-get args :model))))))

(defun planbridge--process-environment ()
  "Return the environment of the backend process.
With an openai or anthropic engine, the API key from auth-source is
put in PLANBRIDGE_OPENAI_API_KEY or PLANBRIDGE_ANTHROPIC_API_KEY: it
never travels on the wire, so the events buffer never holds it.  With
an acp engine its :env is put there for the same reason: the agent
inherits the backend's environment."
  (let* ((kind (car-safe planbridge-engine))
         (args (cdr-safe planbridge-engine))
         (url (and (memq kind '(openai anthropic))
                   (or (plist-get args :base-url)
                       (and (eq kind 'anthropic) "https://api.anthropic.com"))))
         (key (and url (planbridge--api-key url))))
    (cond
     (key
      (cons (format "PLANBRIDGE_%s_API_KEY=%s" (upcase (symbol-name kind)) key)
            process-environment))
     ((eq kind 'acp)
      (append (mapcar (lambda (kv) (concat (car kv) "=" (cdr kv))) (plist-get args :env))
              process-environment))
     (t process-environment))))

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
  "Send `initialize' to CONN, wait for the answer and return it.
The answer's instance id is kept on CONN; its warnings (what the
backend's start could not finish) are shown by `display-warning'.
No secret is sent: an API key reaches the backend in its environment
\(see `planbridge--start')."
  (let* ((engine (planbridge--engine-params))
         (models (planbridge--models-params))
         (params `(,@(and engine (list :engine engine))
                   ,@(and models (list :models models))
                   ,@(and planbridge-approval-timeout
                          (list :approval_timeout planbridge-approval-timeout))
                   :client (:name "emacs" :version ,emacs-version)))
         (result (jsonrpc-request conn :initialize params
                                  :timeout planbridge-request-timeout)))
    (setf (planbridge--conn-instance conn) (plist-get result :instance))
    ;; What the backend's start could not finish (a delete a crash cut
    ;; short whose files it could not settle): the backend runs, and says.
    (seq-doseq (warning (plist-get result :warnings))
      (display-warning 'planbridge warning :warning))
    result))

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
         (env (planbridge--process-environment))
         (proc nil)
         (conn
          (make-instance
           'planbridge-connection
           :name "planbridge"
           :events-buffer-scrollback-size planbridge-events-buffer-size
           :log-size planbridge-events-buffer-size
           :notification-dispatcher #'planbridge--dispatch-notification
           :request-dispatcher #'planbridge--dispatch-request
           :on-shutdown #'planbridge--on-shutdown
           :process
           (lambda ()
             (setq proc
                   (let ((process-environment env))
                     (make-process
                      :name "planbridge"
                      :command command
                      :connection-type 'pipe
                      :coding 'utf-8-emacs-unix
                      :noquery t
                      ;; jsonrpc.el expects exactly this name: it
                      ;; mirrors the lines into the events buffer.
                      :stderr (get-buffer-create "*planbridge stderr*"))))))))
    (setf (planbridge--conn-process conn) proc)
    (set-process-sentinel proc (planbridge--wrap-sentinel (process-sentinel proc)))
    (condition-case err
        (let ((planbridge--starting t))
          (planbridge--initialize conn))
      (error
       (let ((stderr (planbridge--stderr-tail conn))
             (refusal (planbridge--refusal-text err)))
         (setf (planbridge--shutdown-requested conn) t)
         (when (jsonrpc-running-p conn)
           (ignore-errors (jsonrpc-shutdown conn)))
         (if refusal
             (user-error "%s" refusal)
           (user-error "planbridge: The backend did not start: %s%s"
                       (planbridge--error-text err)
                       (if stderr (format " (%s)" stderr) ""))))))
    conn))

(defun planbridge--refusal-text (err)
  "Return the plain message for a backend that refused to start, or nil.
ERR is the error of `initialize'.  The backend refuses with
`data.code' \"state_locked\" when another planbridge serve owns the
state directory (its message names the pid) and \"state_unavailable\"
when the state directory is damaged (its message says what to do)."
  (when (eq (car-safe err) 'jsonrpc-error)
    (let* ((data (alist-get 'jsonrpc-error-data (cdr err)))
           (code (and (listp data) (plist-get data :code)))
           (text (string-remove-prefix
                  "planbridge: " (or (alist-get 'jsonrpc-error-message (cdr err)) ""))))
      (pcase code
        ("state_locked"
         (let ((pid (and (string-match "(pid \\([0-9]+\\))" text)
                         (match-string 1 text)))
               (dir (and (string-match "\\`state directory \\(.*\\) is in use by" text)
                         (match-string 1 text))))
           (format "planbridge: Another planbridge serve%s is using the state directory%s; stop it (M-x planbridge-shutdown in the Emacs that started it) or set `planbridge-state-dir'"
                   (if pid (format " (pid %s)" pid) "")
                   (if dir (concat " " dir) ""))))
        ;; A damaged directory; any other failure to open the state
        ;; (not a directory, say) is reported as a failed start.
        ((and "state_unavailable" (guard (string-match-p " is damaged" text)))
         (format "planbridge: %s" (planbridge--capitalize text)))))))

(defun planbridge--capitalize (text)
  "Return TEXT with its first letter in upper case."
  (if (string-empty-p text) text
    (concat (upcase (substring text 0 1)) (substring text 1))))

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
  (let ((conn (planbridge--connection)))
    (unwind-protect
        (condition-case err
            (jsonrpc-request conn method params
                             :timeout planbridge-request-timeout)
          (jsonrpc-error
           (user-error "planbridge: %s" (planbridge--error-text err))))
      (planbridge--drain conn))))

(defun planbridge--drain (conn)
  "Read, from a timer, the messages CONN's process has left unread.
A synchronous request's answer ends jsonrpc's process filter by a
non-local exit (Emacs 28), so what arrived in the same chunk after
it stays unread until the backend writes again.  A question among
them (`permission/ask') would then wait forever, and so would the
backend.  Running the filter again on no new text reads them."
  (let ((proc (and conn (jsonrpc--process conn))))
    (when (and (process-live-p proc)
               (eq (process-filter proc) #'jsonrpc--process-filter))
      (run-at-time 0 nil (lambda ()
                           (when (process-live-p proc)
                             (jsonrpc--process-filter proc "")))))))

(defconst planbridge--method-phrases
  '(("approval/accept" . "accept the plan")
    ("approval/update" . "change the card's setting")
    ("approval/feedback" . "send the feedback")
    ("approval/cancel" . "cancel the plan")
    ("approval/hide" . "hide the card")
    ("approval/show" . "show the card")
    ("approval/edit" . "save the edited plan")
    ("approval/restore" . "restore the draft plan")
    ("approval/get" . "fetch the plan waiting for approval")
    ("session/submit" . "send the prompt")
    ("session/queue" . "queue the prompt")
    ("session/open" . "open the session")
    ("session/interrupt" . "interrupt the turn")
    ("handoff/recover" . "recover the session")
    ("handoff/retry" . "recover the session")
    ("handoff/savePlan" . "save the plan")
    ("implementation/resume" . "recover the session")
    ("session/compact" . "compact the conversation")
    ("session/setPermissionMode" . "change the permission mode")
    ("plan/enter" . "enter Plan")
    ("plan/exit" . "leave Plan")
    ("goal/start" . "start the Goal")
    ("goal/pause" . "pause the Goal")
    ("goal/resume" . "resume the Goal")
    ("goal/budget" . "set the Goal's budget")
    ("goal/edit" . "change the Goal's objective")
    ("goal/clear" . "clear the Goal")
    ("share/stop" . "stop sharing"))
  "What each request does, in words, for error messages.")

(defun planbridge--error-reporter (what)
  "Return an error handler for an asynchronous request WHAT, a method name.
The handler says in words what failed and why, as the backend's
message puts it; the protocol's method and code are left to the
events buffer."
  (lambda (err)
    (let ((message (or (planbridge--nonempty (plist-get err :message)) "unknown error"))
          (phrase (or (cdr (assoc what planbridge--method-phrases))
                      (format "do %s" what))))
      (message "planbridge: Could not %s: %s" phrase
               (concat (upcase (substring message 0 1)) (substring message 1))))))

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
  (planbridge-handle-notification conn method params))

(defun planbridge--dispatch-request (conn method params)
  "Hand request METHOD with PARAMS from CONN to its handler."
  (apply #'planbridge-handle-request conn method params))

(cl-defgeneric planbridge-handle-notification (conn method params)
  "Handle notification METHOD, a symbol, with PARAMS from CONN.
PARAMS is the notification's params plist as jsonrpc.el parsed it.
It is passed as one argument, as jsonrpc.el's dispatcher gets it, not
spread into a `&rest' list: a session streams a notification per text
delta, and spreading would copy each one twice for the garbage
collector to reclaim."
  (:method (conn method params)
           (planbridge--log conn "unhandled notification %s %S" method params)))

(cl-defgeneric planbridge-handle-request (conn method &rest params)
  "Answer request METHOD, a symbol, with PARAMS from CONN."
  (:method (conn method &rest _params)
           (planbridge--log conn "unhandled request %s" method)
           (jsonrpc-error :code -32601
                          :message (format "emacs does not handle %s" method))))

(cl-defmethod planbridge-handle-notification
  (_conn (_method (eql session/event)) event)
  "Render EVENT in the buffer of its session, if there is one.
EVENT is the notification's plist: :session, :seq, :kind and :data."
  (let* ((session (plist-get event :session))
         (buf (gethash session planbridge--buffers)))
    (when (buffer-live-p buf)
      (with-current-buffer buf
        (cond
         (planbridge--opening
          ;; The value is t until the first held event arrives.
          (setq planbridge--opening
                (cons event (and (consp planbridge--opening) planbridge--opening))))
         ((let ((seq (plist-get event :seq)))
            (and (integerp seq) (<= seq planbridge--last-seq)))
          ;; A live event never repeats a seq: the backend's log was
          ;; rewritten (a restart retried a turn).  Render it again.
          (planbridge--log planbridge--connection
                           "session %s: event seq %s after %s; rendering the log again"
                           session (plist-get event :seq) planbridge--last-seq)
          (planbridge--reset-transcript)
          (planbridge--reopen))
         (t (planbridge--handle-event event)))))))

(defvar planbridge--asking nil
  "Non-nil, dynamically, while a permission question is being asked.")

(defvar planbridge--permission-kind nil
  "The kind of the permission question being asked, dynamically.
nil asks whether a call may run; \"scope_effects\" asks about a
command that already ran and changed files outside the declared
scope: yes extends the scope, no restores them.")

(defun planbridge--answer-permission (conn id session tool arguments summary
                                           &optional kind)
  "Ask about TOOL with ARGUMENTS in SESSION and answer request ID on CONN.
SUMMARY is the backend's reason and KIND the question's kind (see
`planbridge--permission-kind').  Questions are asked one at a time: a
question due while another is open waits for it."
  (if planbridge--asking
      (run-at-time 0.2 nil #'planbridge--answer-permission
                   conn id session tool arguments summary kind)
    (let ((allow (let ((planbridge--asking t)
                       (planbridge--permission-kind kind))
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
        kind &allow-other-keys)
  "Ask the person whether TOOL may run with ARGUMENTS in SESSION.
SUMMARY is the backend's reason and KIND the question's kind.  The
question is asked from a timer, after the dispatcher has returned, and
answered to CONN from there."
  (planbridge--deferred
   (lambda (id)
     (run-at-time 0 nil #'planbridge--answer-permission
                  conn id session tool arguments summary kind))))

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

(defun planbridge--permission-diff (file new)
  "Return a unified diff from FILE's contents to the string NEW."
  (let ((tmp (make-temp-file "planbridge-new-")))
    (unwind-protect
        (progn
          (with-temp-file tmp (insert new))
          (with-temp-buffer
            (call-process "diff" nil t nil "-u"
                          "--label" (concat "a/" (file-name-nondirectory file))
                          "--label" (concat "b/" (file-name-nondirectory file))
                          (if (file-exists-p file) file null-device) tmp)
            (buffer-string)))
      (delete-file tmp))))

(defun planbridge--permission-details (tool arguments dir)
  "Return what TOOL with ARGUMENTS would change, as text.
File paths are relative to DIR, the session's workspace.  Edits are
shown as a diff, a shell command as itself."
  (let ((path (plist-get arguments :path)))
    (pcase tool
      ("write_file"
       (planbridge--permission-diff (expand-file-name (or path "") dir)
                                    (or (plist-get arguments :content) "")))
      ("edit_file"
       (let* ((file (expand-file-name (or path "") dir))
              (old (or (plist-get arguments :old) ""))
              (text (and (file-readable-p file)
                         (with-temp-buffer (insert-file-contents file) (buffer-string)))))
         (if (and text (string-search old text))
             (planbridge--permission-diff
              file (concat (substring text 0 (string-search old text))
                           (or (plist-get arguments :new) "")
                           (substring text (+ (string-search old text) (length old)))))
           (format "%s: replace\n%s\nwith\n%s\n" (or path "?") old
                   (or (plist-get arguments :new) "")))))
      ("apply_patch" (or (plist-get arguments :patch) ""))
      ("bash" (concat "$ " (or (plist-get arguments :command) "") "\n"))
      (_ (concat (planbridge--json arguments) "\n")))))

(defun planbridge--permission-buffer (session tool arguments summary)
  "Show what TOOL with ARGUMENTS would do in SESSION, in its own window.
SUMMARY is the backend's reason.  Return the buffer."
  (let* ((sbuf (gethash session planbridge--buffers))
         (dir (if (buffer-live-p sbuf)
                  (buffer-local-value 'default-directory sbuf)
                default-directory))
         (buf (get-buffer-create "*planbridge permission*")))
    (with-current-buffer buf
      (let ((inhibit-read-only t))
        (erase-buffer)
        (if (member tool '("write_file" "edit_file" "apply_patch"))
            (diff-mode)
          (fundamental-mode))
        (insert (propertize (if (equal planbridge--permission-kind "scope_effects")
                                (format "A %s command changed files outside the declared scope" tool)
                              (format "The agent asks to run %s" tool))
                            'face 'planbridge-card-heading)
                (if (planbridge--nonempty summary) (format " (%s)" summary) "")
                "\nAnswer \"yes\" or \"no\" in the minibuffer.\n\n")
        (insert (planbridge--permission-details tool arguments dir))
        (goto-char (point-min))
        (setq buffer-read-only t)))
    (display-buffer buf '((display-buffer-reuse-window display-buffer-below-selected)
                          (window-height . fit-window-to-buffer)
                          (inhibit-same-window . t)))
    buf))

(defun planbridge-ask-permission (session tool arguments summary)
  "Ask whether TOOL may run with ARGUMENTS in SESSION.
What would change (a diff for edits, the command for bash) is shown
in the `*planbridge permission*' window, SUMMARY (the backend's
reason) with it.  The answer is a typed \"yes\" or \"no\": a stray
key meant for another buffer cannot answer it."
  (let ((buf (planbridge--permission-buffer session tool arguments summary)))
    (unwind-protect
        (yes-or-no-p
         (if (equal planbridge--permission-kind "scope_effects")
             "Extend the scope to what it changed (no restores it)? "
           (format "Allow %s %s? "
                   tool (planbridge--clip
                         (or (plist-get arguments :path)
                             (plist-get arguments :command)
                             (planbridge--json arguments))
                         60))))
      (when (buffer-live-p buf)
        (dolist (win (get-buffer-window-list buf nil t))
          (quit-window nil win))
        (kill-buffer buf)))))


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
    (define-key map (kbd "TAB") #'planbridge-complete-or-indent)
    (define-key map (kbd "C-c C-k") #'planbridge-interrupt)
    (define-key map (kbd "C-c C-e") #'planbridge-events-buffer)
    (define-key map (kbd "C-c TAB") #'planbridge-queue-follow-up)
    (define-key map (kbd "C-c C-a") #'planbridge-show-approval)
    (define-key map (kbd "C-c C-r") #'planbridge-restore-draft)
    (define-key map (kbd "C-c C-d") #'planbridge-dispatch)
    (define-key map (kbd "M-p") #'planbridge-previous-input)
    (define-key map (kbd "M-n") #'planbridge-next-input)
    (define-key map (kbd "M-r") #'planbridge-search-input)
    (define-key map (kbd "C-c C-p") #'planbridge-previous-prompt)
    (define-key map (kbd "C-c C-n") #'planbridge-next-prompt)
    map)
  "Keymap of `planbridge-session-mode'.")

(defconst planbridge-slash-commands
  '(("/plan" . "toggle Plan; /plan on, /plan off, /plan status, /plan PROMPT plans PROMPT")
    ("/plan on" . "enter Plan")
    ("/plan off" . "leave Plan")
    ("/plan status" . "show the posture, the proposal and the blocked-call count")
    ("/compact" . "summarize the conversation into a new context")
    ("/goal" . "/goal OBJECTIVE starts a Goal: the agent works turn after turn")
    ("/goal pause" . "pause the Goal")
    ("/goal resume" . "resume the Goal, after a pause or a failed kickoff")
    ("/goal budget" . "/goal budget N sets the Goal's token budget")
    ("/goal edit" . "/goal edit OBJECTIVE changes the objective")
    ("/goal clear" . "clear the Goal")
    ("/help" . "list these commands (answered by Emacs)"))
  "The slash commands of the composer, with what they do.
All but /help are handled by the backend.")

(defun planbridge--slash-help ()
  "Return the slash commands as text, one per line."
  (mapconcat (lambda (c) (format "  %-14s %s" (car c) (cdr c)))
             planbridge-slash-commands "\n"))

(define-derived-mode planbridge-session-mode fundamental-mode "planbridge"
  "Major mode of a planbridge session buffer.
The transcript above the prompt is read-only; type at the prompt and
send with \\[planbridge-send].  \\[newline] inserts a newline: prompts can span
lines.  \\[planbridge-previous-input] and \\[planbridge-next-input] recall earlier prompts, \\[planbridge-search-input] searches
them; \\[planbridge-previous-prompt] and \\[planbridge-next-prompt] move between the prompts of the transcript.

Slash commands, typed at the prompt (TAB completes them):
  /plan          toggle Plan (/plan on, /plan off, /plan status)
  /plan PROMPT   plan PROMPT
  /compact       summarize the conversation into a new context
  /goal OBJ      start a Goal (/goal pause, resume, budget N, edit, clear)
  /help          list the slash commands
An unknown /command is an error; \\[universal-argument] \\[planbridge-send] sends the text as a prompt anyway.

When a plan is proposed its card is displayed but not selected;
\\[planbridge-show-approval] goes to it.  A prompt typed while a plan
waits asks whether it is feedback on the plan or should be queued.
\\[planbridge-restore-draft] brings a cancelled plan back as a card.

\\{planbridge-session-mode-map}"
  (setq-local header-line-format '((:eval (planbridge--header-line-format))))
  (setq-local truncate-lines nil)
  (setq-local word-wrap t)
  ;; Paragraphs are left to right, as in `prog-mode': otherwise
  ;; redisplay looks for where each displayed paragraph starts, and a
  ;; transcript has few blank lines.  Right-to-left text within a line
  ;; is still reordered.  This makes a keystroke's redisplay about three
  ;; times cheaper (elisp/test/bench.el).
  (setq-local bidi-paragraph-direction 'left-to-right)
  (add-hook 'kill-buffer-hook #'planbridge--forget-buffer nil t)
  (add-hook 'completion-at-point-functions #'planbridge-completion-at-point nil t)
  (let ((inhibit-read-only t))
    (erase-buffer)
    (insert (propertize "\n> " 'face 'planbridge-prompt 'read-only t
                        'front-sticky t 'rear-nonsticky t)))
  (setq planbridge--transcript-end (copy-marker (point-min) t))
  (setq planbridge--input-start (copy-marker (point-max))))

(defun planbridge--forget-buffer ()
  "Remove the current buffer from the session table, with its card."
  (planbridge--dismiss-card)
  (when (timerp planbridge--flush-timer)
    (cancel-timer planbridge--flush-timer))
  (when (eq (gethash planbridge--session-id planbridge--buffers)
            (current-buffer))
    (remhash planbridge--session-id planbridge--buffers)))

(defun planbridge--true-p (value)
  "Return non-nil if VALUE, a decoded JSON boolean, is true."
  (eq value t))

(defun planbridge--posture ()
  "Return the posture indicator, such as \"[Plan · ask]\".
While an accepted plan's implementation runs, it shows the mode the
implementation runs with."
  (let* ((impl (and (planbridge--true-p (plist-get planbridge--info :busy))
                    (planbridge--nonempty (plist-get planbridge--info :implementation_mode))))
         (mode (propertize (or impl (plist-get planbridge--info :mode) "?")
                           'face 'planbridge-mode-indicator)))
    (cond
     ((planbridge--true-p (plist-get planbridge--info :plan))
      (concat "[" (propertize "Plan" 'face 'planbridge-plan-indicator)
              " · " mode "]"))
     (impl (concat "[implementing · " mode "]"))
     (t (concat "[" mode "]")))))

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

(defun planbridge--queued-indicator ()
  "Return the queue part of the header line, or nil.
The queue is durable: what was queued before a restart is still
there, and waits while no turn runs until `planbridge-recover'."
  (let ((n (plist-get planbridge--info :queued)))
    (when (and (integerp n) (> n 0))
      (if (or (planbridge--true-p (plist-get planbridge--info :busy))
              (planbridge--view-pending-p)) ; they wait for the acceptance
          (format "%d queued" n)
        (format "%d queued (M-x planbridge-recover runs %s)" n (if (= n 1) "it" "them"))))))

(defun planbridge--header-line ()
  "Return the header line of a session buffer, as plain text to show.
The posture comes first; the other parts are separated by \" · \"."
  (let ((parts (delq nil
                     (list (planbridge--ended-indicator)
                           (planbridge--approval-counter)
                           (and (planbridge--true-p (plist-get planbridge--info :busy))
                                "busy…")
                           (planbridge--queued-indicator)
                           (planbridge--goal-indicator)
                           (planbridge--steps-indicator)
                           (and (not (planbridge--live-p)) "disconnected")
                           (and planbridge--opening "opening…")
                           (planbridge--nonempty (plist-get planbridge--info :title))))))
    (if parts
        (concat (planbridge--posture) " " (string-join parts " · "))
      (planbridge--posture))))

(defun planbridge--escape-percent (string)
  "Return STRING with each % doubled, for a mode line to show it literally.
Text properties are kept."
  (let ((start 0) (pieces nil))
    (while (string-match "%" string start)
      (push (substring string start (match-end 0)) pieces)
      (push "%" pieces)
      (setq start (match-end 0)))
    (push (substring string start) pieces)
    (apply #'concat (nreverse pieces))))

(defun planbridge--header-line-format ()
  "Return the header line as a mode line construct, % doubled."
  (planbridge--escape-percent (planbridge--header-line)))

(defun planbridge--update-info (plist)
  "Merge PLIST, a Session object or status data, into the session state."
  (let ((title (plist-get planbridge--info :title)))
    (cl-loop for (key value) on plist by #'cddr
             do (setq planbridge--info (plist-put planbridge--info key value)))
    (unless (equal title (plist-get planbridge--info :title))
      (planbridge--rename-buffer)))
  (planbridge--update-global-indicator)
  (force-mode-line-update))

(defun planbridge--project-name (workspace)
  "Return a short name for WORKSPACE, a directory."
  (file-name-nondirectory (directory-file-name workspace)))

(defun planbridge--buffer-name (info)
  "Return the name of the buffer of the session described by INFO.
It is made of the project and the session's title, never of its id."
  (let ((project (planbridge--project-name (or (plist-get info :workspace) "session")))
        (title (planbridge--nonempty (plist-get info :title))))
    (if title
        (format "*planbridge: %s · %s*" project (truncate-string-to-width title 40 nil nil "…"))
      (format "*planbridge: %s*" project))))

(defun planbridge--rename-buffer ()
  "Rename the current session buffer after its title, if it is one."
  (when (and planbridge--session-id
             (eq (gethash planbridge--session-id planbridge--buffers) (current-buffer)))
    (let ((name (planbridge--buffer-name planbridge--info)))
      (unless (string-prefix-p name (buffer-name))
        (rename-buffer name t)))))

(defun planbridge--session-buffer (info)
  "Return the buffer of the session described by INFO, creating it.
INFO is a Session plist.  A new buffer is registered and opened."
  (let* ((id (plist-get info :id))
         (buf (gethash id planbridge--buffers)))
    (if (buffer-live-p buf)
        buf
      (setq buf (generate-new-buffer (planbridge--buffer-name info)))
      (with-current-buffer buf
        (planbridge-session-mode)
        (setq planbridge--session-id id)
        (setq default-directory
              (file-name-as-directory
               (or (plist-get info :workspace) default-directory)))
        (puthash id buf planbridge--buffers)
        (when (and planbridge-global-indicator (not planbridge-indicator-mode))
          (planbridge-indicator-mode 1))
        (planbridge--update-info info)
        (planbridge--reopen))
      buf)))

(defun planbridge--reset-transcript ()
  "Erase the transcript of the current buffer, to render it from the log.
The composer keeps what is typed in it."
  (let ((inhibit-read-only t)
        (buffer-undo-list t))
    (when (timerp planbridge--flush-timer)
      (cancel-timer planbridge--flush-timer))
    (setq planbridge--flush-timer nil
          planbridge--pending-text nil
          planbridge--last-seq 0
          planbridge--last-kind nil
          planbridge--rendered-kind nil)
    (delete-region (point-min) planbridge--transcript-end)))

(defun planbridge--reopen ()
  "Fetch the events this buffer has not seen with `session/open'.
Events notified meanwhile are held and rendered after the replay.
When the backend is a new instance (it restarted) or its log ends
before what this buffer showed, the transcript is rendered again
from the whole log: a restarted backend may have retried a turn
whose events replace the ones shown."
  (let* ((buf (current-buffer))
         (id planbridge--session-id)
         (instance (planbridge--conn-instance (planbridge--connection))))
    (unless (equal instance planbridge--instance)
      (when (> planbridge--last-seq 0)
        (planbridge--reset-transcript))
      (setq planbridge--instance instance))
    (setq planbridge--opening t)
    (force-mode-line-update)
    (planbridge--async
     :session/open (list :session id :since planbridge--last-seq :coalesce_text t)
     :success
     (lambda (result)
       (when (buffer-live-p buf)
         (with-current-buffer buf
           (let ((last (plist-get (plist-get result :session) :last_seq)))
             (if (and (integerp last) (< last planbridge--last-seq))
                 (progn
                   (planbridge--reset-transcript)
                   (planbridge--reopen))
               (planbridge--render-opened result))))))
     :error
     (lambda (err)
       (when (buffer-live-p buf)
         (with-current-buffer buf
           (setq planbridge--opening nil)
           (force-mode-line-update)))
       (funcall (planbridge--error-reporter "session/open") err)))))

(defun planbridge--render-opened (result)
  "Render RESULT of `session/open' and the events held meanwhile.
The replay allocates little but runs over a large parsed answer, which
every garbage collection would mark again: it runs with a higher
`gc-cons-threshold', as a long replay is one operation."
  (let ((held (and (listp planbridge--opening) planbridge--opening))
        (planbridge--replaying t)
        (gc-cons-threshold (max gc-cons-threshold (* 64 1024 1024))))
    (setq planbridge--opening nil)
    (seq-doseq (event (plist-get result :events))
      (planbridge--handle-event event))
    (planbridge--flush-text)
    ;; After the events: a turn that a restart killed left a
    ;; `turn_start' without its end, and the session says it is idle.
    (planbridge--update-info (plist-get result :session))
    (dolist (event (nreverse held))
      (planbridge--handle-event event))
    (planbridge--flush-text))
  (run-hooks 'planbridge--after-open-hook))


;;; Rendering events
;;;

(defmacro planbridge--with-transcript (&rest body)
  "Run BODY with point at the end of the transcript.
The text BODY inserts is made read-only, also at its front: nothing
can be typed before the first character of the transcript."
  (declare (indent 0) (debug t))
  (let ((beg (make-symbol "beg")))
    `(let ((inhibit-read-only t)
           (buffer-undo-list t))
       (save-excursion
         (goto-char planbridge--transcript-end)
         (let ((,beg (point)))
           (prog1 (progn ,@body)
             (add-text-properties ,beg (point)
                                  '(read-only t front-sticky (read-only)
                                              rear-nonsticky t))))))))

(defun planbridge--insert-line (face &rest strings)
  "Insert STRINGS as one transcript line in FACE."
  (planbridge--flush-text)
  (planbridge--with-transcript
    (unless (or (bobp) (eq (char-before) ?\n))
      (insert "\n"))
    (insert (propertize (apply #'concat strings) 'face face) "\n")))

;;;; Streamed text, coalesced

(defconst planbridge--flush-delay 0.05
  "Seconds streamed text waits before it is inserted.
Deltas arriving meanwhile are inserted at once, so the transcript
grows in a few large inserts rather than one per delta.")

(defun planbridge--queue-text (delta)
  "Queue DELTA, streamed text, for the transcript.
It is inserted within `planbridge--flush-delay', together with the
deltas that arrive meanwhile, or before the next event of another kind."
  (push delta planbridge--pending-text)
  (unless (or planbridge--replaying planbridge--flush-timer)
    (setq planbridge--flush-timer
          (run-with-timer planbridge--flush-delay nil
                          #'planbridge--flush-text-in (current-buffer)))))

(defun planbridge--flush-text-in (buffer)
  "Insert the streamed text queued in BUFFER, if it is live."
  (when (buffer-live-p buffer)
    (with-current-buffer buffer
      (planbridge--flush-text))))

(defun planbridge--flush-text ()
  "Render the streamed text queued in the current buffer as one event.
The `text' method of `planbridge-render-event' gets all the deltas
queued since the last flush, joined."
  (when (timerp planbridge--flush-timer)
    (cancel-timer planbridge--flush-timer))
  (setq planbridge--flush-timer nil)
  (when planbridge--pending-text
    ;; A replay of a coalesced log queues one delta per run: it is
    ;; rendered as it is, not copied.
    (let ((delta (if (cdr planbridge--pending-text)
                     (apply #'concat (nreverse planbridge--pending-text))
                   (car planbridge--pending-text))))
      (setq planbridge--pending-text nil)
      (planbridge--render 'text (list :delta delta)))))

;;;; Events

(defun planbridge--handle-event (event)
  "Render EVENT, a plist, unless its seq was already seen.
Streamed text is queued and rendered in large pieces; any other event
renders the queued text first."
  (let ((seq (plist-get event :seq))
        (kind (plist-get event :kind)))
    (unless (and (integerp seq) (<= seq planbridge--last-seq))
      (when (integerp seq)
        (setq planbridge--last-seq seq))
      (if (equal kind "text")
          (planbridge--queue-text (or (plist-get (plist-get event :data) :delta) ""))
        (planbridge--flush-text)
        (planbridge--render (if (stringp kind) (intern kind) (intern (format "%s" kind)))
                            (plist-get event :data)))
      (setq planbridge--last-kind kind))))

(defun planbridge--render (kind data)
  "Call `planbridge-render-event' with KIND and DATA, reporting errors."
  (condition-case err
      (planbridge-render-event kind data)
    (error
     (planbridge--insert-line
      'planbridge-diagnostic
      (format "[could not render %s event: %s]" kind (error-message-string err)))))
  (setq planbridge--rendered-kind kind))

(cl-defgeneric planbridge-render-event (kind data)
  "Render an event of KIND with DATA in the current session buffer.
KIND is the event's kind as a symbol, such as `text' or `proposal',
DATA its data plist (see docs/protocol.md).  Each kind has its own
method, specialized with (eql \\='KIND), so a kind can be advised or
replaced.  `planbridge--replaying' is non-nil while stored events are
replayed.  The default method logs the unknown kind in the events
buffer and shows it as a diagnostic line."
  (when planbridge--connection
    (planbridge--log planbridge--connection "unknown event kind %s" kind))
  (planbridge--insert-line 'planbridge-diagnostic
                           (format "[%s] %s" kind (planbridge--json data))))

(defun planbridge--show-output (name output)
  "Show OUTPUT of tool NAME in a help buffer."
  (with-help-window (get-buffer-create "*planbridge output*")
    (princ (format "%s output:\n\n%s" name output))))

(cl-defmethod planbridge-render-event ((_kind (eql 'user)) data)
  "Render DATA of a `user' event: the prompt that started a turn."
  (when (string-empty-p (or (plist-get planbridge--info :title) ""))
    (planbridge--update-info
     (list :title (planbridge--clip (plist-get data :text) 60))))
  (planbridge--insert-line 'planbridge-user
                           planbridge--user-prefix
                           (or (plist-get data :display)
                               (plist-get data :text) "")))

(cl-defmethod planbridge-render-event ((_kind (eql 'text)) data)
  "Insert DATA's delta of `text' events: streamed assistant text.
The deltas of consecutive events come joined in one call.  A new run
of text starts on a fresh line."
  (let ((delta (or (plist-get data :delta) "")))
    (planbridge--with-transcript
      (unless (or (eq planbridge--rendered-kind 'text)
                  (bobp) (eq (char-before) ?\n))
        (insert "\n"))
      (insert delta))))

(cl-defmethod planbridge-render-event ((_kind (eql 'tool_call)) data)
  "Render DATA of a `tool_call' event."
  (planbridge--insert-line 'planbridge-tool-call
                           "⚙ " (plist-get data :name) " "
                           (planbridge--clip
                            (planbridge--json (plist-get data :arguments)))))

(cl-defmethod planbridge-render-event ((_kind (eql 'tool_result)) data)
  "Render DATA of a `tool_result' event; long output is behind a button.
A tool that wrote files makes their buffers revert."
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
         'help-echo "Show the whole output")))
    (when (and ok (not planbridge--replaying))
      (planbridge--revert-written name))))

(cl-defmethod planbridge-render-event ((_kind (eql 'blocked)) data)
  "Render DATA of a `blocked' event: a call the Plan gate refused."
  (planbridge--insert-line 'planbridge-blocked
                           "  ⛔ blocked " (or (plist-get data :name) "")
                           " (" (or (plist-get data :code) "") "): "
                           (or (plist-get data :reason) "")))

(cl-defmethod planbridge-render-event ((_kind (eql 'proposal)) data)
  "Render DATA of a `proposal' event: the plan, framed."
  (let ((title (or (plist-get data :title) "Proposed plan")))
    (setq planbridge--draft-hash (plist-get data :hash))
    (planbridge--insert-line 'planbridge-proposal-title
                             "┌─ Plan proposal: " title)
    (planbridge--with-transcript
      (dolist (line (split-string (or (plist-get data :text)
                                      (plist-get data :body) "")
                                  "\n"))
        (insert "│ " line "\n"))
      (insert "└─\n"))))

(cl-defmethod planbridge-render-event ((_kind (eql 'diagnostic)) data)
  "Render DATA of a `diagnostic' event."
  (planbridge--insert-line 'planbridge-diagnostic
                           "⚠ " (or (plist-get data :level) "warning") ": "
                           (or (plist-get data :message) "")))

(cl-defmethod planbridge-render-event ((_kind (eql 'status)) data)
  "Apply DATA of a `status' event: the posture changed."
  (planbridge--update-info data))

(cl-defmethod planbridge-render-event ((_kind (eql 'notice)) data)
  "Render DATA of a `notice' event; outside a replay it is also a message."
  (let ((message (or (plist-get data :message) "")))
    (planbridge--insert-line 'planbridge-notice "ℹ " message)
    (unless planbridge--replaying
      (message "planbridge: %s" message))))

(cl-defmethod planbridge-render-event ((_kind (eql 'error)) data)
  "Render DATA of an `error' event."
  (planbridge--insert-line 'planbridge-blocked
                           "✗ error: " (or (plist-get data :message) "")))

(cl-defmethod planbridge-render-event ((_kind (eql 'queued)) data)
  "Render DATA of a `queued' event: a prompt waits behind the turn."
  (planbridge--insert-line 'planbridge-notice
                           "… queued: " (or (plist-get data :text) ""))
  (run-hooks 'planbridge--turn-boundary-hook))

(cl-defmethod planbridge-render-event ((_kind (eql 'turn_start)) data)
  "Apply DATA of a `turn_start' event: the session is busy."
  ;; The backend sends no `status' when a turn starts.
  (planbridge--update-info (list :busy t :turn_plan (plist-get data :plan))))

(cl-defmethod planbridge-render-event ((_kind (eql 'turn_end)) data)
  "Render DATA of a `turn_end' event."
  (run-hooks 'planbridge--turn-boundary-hook)
  (when (plist-get planbridge--info :implementation_done)
    (planbridge--update-info '(:implementation_mode nil :implementation_done nil)))
  (let ((err (plist-get data :error)))
    (planbridge--insert-line 'planbridge-tool-result
                             (format "─ turn %s %s"
                                     (or (plist-get data :turn) "")
                                     (if err (format "ended: %s" err)
                                       "done")))))

(cl-defmethod planbridge-render-event ((_kind (eql 'corrupt)) data)
  "Render DATA of a `corrupt' event: a stored event that cannot be read."
  (planbridge--insert-line 'planbridge-diagnostic
                           "⚠ unreadable stored event ("
                           (or (plist-get data :kind) "?") ")"))

(cl-defmethod planbridge-render-event ((_kind (eql 'compacted)) data)
  "Render DATA of a `compacted' event: the context was summarized."
  (planbridge--insert-line 'planbridge-notice
                           (format "ℹ Conversation compacted (%s): context segment %s%s"
                                   (or (planbridge--nonempty (plist-get data :reason))
                                       "requested")
                                   (or (plist-get data :segment) "?")
                                   (if (integerp (plist-get data :chars))
                                       (format ", %d characters carried"
                                               (plist-get data :chars))
                                     ""))))

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

;;;; Buffers visiting files the agent wrote

(defconst planbridge--writing-tools '("write_file" "edit_file" "apply_patch")
  "Tools whose successful calls may change files in the workspace.")

(defun planbridge--revert-written (tool)
  "Revert unmodified buffers visiting files under the workspace after TOOL.
Like magit after its own operations: only buffers whose file changed
on disk and that hold no unsaved edits are reverted."
  (when (or (member tool planbridge--writing-tools) (equal tool "bash"))
    (let ((root (file-name-as-directory (expand-file-name default-directory))))
      (dolist (buf (buffer-list))
        (let ((file (buffer-file-name buf)))
          (when (and file
                     (string-prefix-p root (expand-file-name file))
                     (not (buffer-modified-p buf))
                     (file-readable-p file)
                     (not (verify-visited-file-modtime buf)))
            (with-current-buffer buf
              (ignore-errors (revert-buffer t t t)))))))))


;;; Commands
;;;

(defun planbridge--session-or-error ()
  "Return the session id of the current buffer or signal a `user-error'."
  (or planbridge--session-id
      (user-error "planbridge: Not in a session buffer")))

(defun planbridge--composer-text ()
  "Return the text typed in the composer."
  (buffer-substring-no-properties planbridge--input-start (point-max)))

(defvar-local planbridge--history nil
  "Prompts sent from this buffer, newest first.")

(defvar-local planbridge--history-index nil
  "Index in `planbridge--history' of the prompt recalled, or nil.")

(defun planbridge--slash-verdict (text)
  "Return how the composer TEXT is handled: `prompt', `help' or `known'.
Signal a `user-error' for an unknown slash command."
  (if (not (string-prefix-p "/" text))
      'prompt
    (let ((cmd (car (split-string text "[ \t\n]" t))))
      (cond
       ((equal cmd "/help") 'help)
       ((member cmd '("/plan" "/compact" "/goal")) 'known)
       (t (user-error "planbridge: Unknown command %s; /help lists the commands (%s sends it as a prompt)"
                      cmd (substitute-command-keys
                           "\\[universal-argument] \\<planbridge-session-mode-map>\\[planbridge-send]")))))))

(defun planbridge--show-help ()
  "Show the slash commands in the transcript; nothing is sent."
  (planbridge--insert-line 'planbridge-notice "ℹ Slash commands:")
  (planbridge--with-transcript
    (insert (propertize (concat (planbridge--slash-help) "\n") 'face 'planbridge-notice))))

(defun planbridge-send (&optional verbatim)
  "Send the composer text to the session.
On a button in the transcript, push the button instead.  Slash
commands are checked first: /help is answered here, an unknown one
is an error unless VERBATIM (the prefix argument) sends the text as
a prompt.  A prompt typed while a plan waits for approval asks
whether it is feedback on the plan or should wait in the queue."
  (interactive "P")
  (let ((id (planbridge--session-or-error)))
    (cond
     ((and (< (point) planbridge--input-start) (button-at (point)))
      (push-button))
     ((< (point) planbridge--input-start)
      (goto-char (point-max)))
     (t
      (let* ((text (string-trim (planbridge--composer-text)))
             (verdict (if verbatim 'prompt (planbridge--slash-verdict text))))
        (when (string-empty-p text)
          (user-error "planbridge: Nothing to send"))
        (planbridge--remember-input text)
        (pcase verdict
          ('help
           (delete-region planbridge--input-start (point-max))
           (planbridge--show-help))
          ('prompt
           (if (planbridge--view-pending-p)
               (planbridge--pending-prompt-choice text)
             (planbridge--submit id text)))
          (_ (planbridge--submit id text))))))))

(defun planbridge--view-pending-p ()
  "Return non-nil if a plan waits for approval in this session."
  (eq (plist-get planbridge--approval :pending) t))

(defun planbridge--submit (id text)
  "Send TEXT to session ID with `session/submit', emptying the composer.
On an error the text comes back to an empty composer."
  (let ((buf (current-buffer)))
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
       (funcall (planbridge--error-reporter "session/submit") err)))))

;;;; Input history and prompt navigation

(defun planbridge--remember-input (text)
  "Add TEXT to the input history."
  (unless (equal text (car planbridge--history))
    (push text planbridge--history))
  (setq planbridge--history-index nil))

(defun planbridge--replace-input (text)
  "Replace the composer's text with TEXT."
  (delete-region planbridge--input-start (point-max))
  (goto-char (point-max))
  (insert text))

(defun planbridge-previous-input (n)
  "Replace the composer's text with the Nth previous prompt sent."
  (interactive "p")
  (unless planbridge--history
    (user-error "planbridge: No earlier prompt"))
  (let ((index (max 0 (min (1- (length planbridge--history))
                           (+ (or planbridge--history-index -1) n)))))
    (setq planbridge--history-index index)
    (planbridge--replace-input (nth index planbridge--history))
    (setq this-command 'planbridge-previous-input)))

(defun planbridge-next-input (n)
  "Replace the composer's text with the Nth next prompt sent.
Past the newest one, the composer is emptied."
  (interactive "p")
  (let ((index (- (or planbridge--history-index 0) n)))
    (if (< index 0)
        (progn (setq planbridge--history-index nil)
               (planbridge--replace-input ""))
      (setq planbridge--history-index index)
      (planbridge--replace-input (nth index planbridge--history)))))

(defun planbridge-search-input (regexp)
  "Put the newest prompt sent that matches REGEXP in the composer."
  (interactive (list (read-regexp "Earlier prompt matching: ")))
  (let ((found (seq-position planbridge--history regexp
                             (lambda (text re) (string-match-p re text)))))
    (unless found
      (user-error "planbridge: No earlier prompt matches %s" regexp))
    (setq planbridge--history-index found)
    (planbridge--replace-input (nth found planbridge--history))))

(defun planbridge--prompt-positions ()
  "Return where the person's prompt lines start in the transcript."
  (let ((positions nil)
        (pos (point-min))
        (end planbridge--transcript-end))
    (while (and pos (< pos end))
      (when (and (eq (get-text-property pos 'face) 'planbridge-user)
                 (or (= pos (point-min)) (eq (char-before pos) ?\n)))
        (push pos positions))
      (setq pos (next-single-property-change pos 'face nil end)))
    (nreverse positions)))

(defun planbridge-previous-prompt (n)
  "Move to the start of the Nth previous prompt in the transcript."
  (interactive "p")
  (let ((before (seq-filter (lambda (p) (< p (line-beginning-position)))
                            (planbridge--prompt-positions))))
    (unless before
      (user-error "planbridge: No earlier prompt"))
    (goto-char (nth (max 0 (- (length before) n)) before))))

(defun planbridge-next-prompt (n)
  "Move to the start of the Nth next prompt in the transcript.
Past the last one, move to the composer."
  (interactive "p")
  (let ((after (seq-filter (lambda (p) (> p (line-end-position)))
                           (planbridge--prompt-positions))))
    (goto-char (or (nth (1- n) after) (point-max)))))

;;;; Completion of slash commands

(defun planbridge-completion-at-point ()
  "Complete a slash command at the start of the composer.
For `completion-at-point-functions'."
  (when (and planbridge--input-start
             (>= (point) planbridge--input-start))
    (let ((start (save-excursion
                   (goto-char planbridge--input-start)
                   (skip-chars-forward " \t")
                   (point))))
      (when (and (eq (char-after start) ?/)
                 (not (string-match-p "\n" (buffer-substring-no-properties start (point)))))
        (list start (point)
              (mapcar #'car planbridge-slash-commands)
              :annotation-function
              (lambda (c) (concat "  " (cdr (assoc c planbridge-slash-commands))))
              :exclusive 'no)))))

(defun planbridge-complete-or-indent ()
  "Complete a slash command in the composer, or move to the next button.
In the transcript, TAB moves to the next button (such as \"[12 lines]\"),
or to the composer past the last one; in the composer, it completes a
slash command or indents."
  (interactive)
  (cond
   ((and planbridge--input-start (< (point) planbridge--input-start))
    (let ((next (next-button (point))))
      (goto-char (if (and next (< (button-start next) planbridge--input-start))
                     (button-start next)
                   (point-max)))))
   ((planbridge-completion-at-point)
    (completion-at-point))
   (t (indent-for-tab-command))))

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
      (planbridge--create-session workspace)))

(defun planbridge--create-session (workspace)
  "Create a new session for WORKSPACE and return its Session object."
  (let ((info (planbridge--request :session/create
                                   (list :workspace workspace))))
    (if (equal (plist-get info :mode) planbridge-default-permission-mode)
        info
      (planbridge--request :session/setPermissionMode
                           (list :session (plist-get info :id)
                                 :mode planbridge-default-permission-mode)))))

;;;###autoload
(defun planbridge (&optional new)
  "Open the planbridge session of the current project.
Start the backend if needed, reuse the most recent session of the
project (or of `default-directory') and show its buffer.  With NEW
\(the prefix argument), start a new session for the project."
  (interactive "P")
  (let* ((workspace (planbridge--workspace))
         (buf (progn
                (planbridge--connection)
                (or (and (not new) (planbridge--live-buffer-for workspace))
                    (planbridge--session-buffer
                     (if new
                         (planbridge--create-session workspace)
                       (planbridge--find-or-create workspace)))))))
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

;;; The global indicator and quitting
;;;

(defvar planbridge--global-indicator ""
  "The text of `planbridge-indicator-mode' in every mode line.")

(defun planbridge--session-states ()
  "Return (BUSY . WAITING): sessions running a turn, plans waiting."
  (let ((busy 0) (waiting 0))
    (maphash (lambda (_id buf)
               (when (buffer-live-p buf)
                 (let ((info (buffer-local-value 'planbridge--info buf)))
                   (when (planbridge--true-p (plist-get info :busy))
                     (setq busy (1+ busy)))
                   (when (member (plist-get info :approval) '("shown" "hidden"))
                     (setq waiting (1+ waiting))))))
             planbridge--buffers)
    (cons busy waiting)))

(defun planbridge--update-global-indicator ()
  "Recompute the text of the global mode-line indicator."
  (pcase-let* ((`(,busy . ,waiting) (planbridge--session-states))
               (text (string-join
                      (delq nil (list (and (> busy 0) "working")
                                      (and (> waiting 0)
                                           (format "%d plan%s to review" waiting
                                                   (if (> waiting 1) "s" "")))))
                      ", ")))
    (setq planbridge--global-indicator
          (if (string-empty-p text)
              ""
            (propertize (format " [planbridge: %s]" text)
                        'face (if (> waiting 0) 'planbridge-counter 'planbridge-mode-indicator)
                        'help-echo "planbridge: C-c C-a in the session shows the plan")))))

;;;###autoload
(define-minor-mode planbridge-indicator-mode
  "Show in every mode line when a planbridge turn runs or a plan waits.
Like eglot's indicator: the text is empty when nothing happens."
  :global t
  :group 'planbridge
  (setq global-mode-string (delete '(:eval planbridge--global-indicator)
                                   (or global-mode-string '(""))))
  (when planbridge-indicator-mode
    (setq global-mode-string
          (append (or global-mode-string '("")) '((:eval planbridge--global-indicator))))))

(defun planbridge--kill-emacs-query ()
  "Ask before quitting Emacs while a planbridge turn is running.
For `kill-emacs-query-functions'; the turn would be cut short."
  (let ((busy (car (planbridge--session-states))))
    (or (zerop busy)
        (not (planbridge--live-p))
        (yes-or-no-p (format "planbridge: %d session%s still working; quit anyway? "
                             busy (if (> busy 1) "s are" " is"))))))

(add-hook 'kill-emacs-query-functions #'planbridge--kill-emacs-query)

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
    ("r" "Recover (handoff, implementation, queue)" planbridge-recover)
    ("s" "Save plan to project" planbridge-save-plan)
    ("P" "Parked plans" planbridge-parked)]
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

;; The features; each requires this file, so they load after `provide'.
(cl-eval-when (load eval)
  (require 'planbridge-card)
  (require 'planbridge-tracking)
  (require 'planbridge-goal)
  (require 'planbridge-share)
  (require 'planbridge-sessions)
  (require 'planbridge-artifacts)
  (require 'planbridge-review))

;;; planbridge.el ends here

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
;; The wire log lives in the `*planbridge events*' buffer (bounded by
;; `planbridge-events-buffer-size'), as eglot does it.

;;; Code:

(require 'cl-lib)
(require 'seq)
(require 'subr-x)
(require 'jsonrpc)
(require 'button)

(declare-function project-root "project" (project))
(declare-function auth-source-search "auth-source" (&rest spec))
(declare-function url-host "url-parse" (url))
(declare-function url-generic-parse-url "url-parse" (url))


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
                                  (expand-file-name planbridge-state-dir)))))

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

(defun planbridge--initialize (conn)
  "Send `initialize' to CONN and wait for the answer.
An API key in the parameters is kept out of the wire log."
  (let* ((engine (planbridge--engine-params))
         (params `(,@(and engine (list :engine engine))
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
            (push event planbridge--opening)
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
  "Remove the current buffer from the session table."
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

(defun planbridge--header-line ()
  "Return the header line of a session buffer."
  (string-join
   (delq nil
         (list (planbridge--posture)
               (and (planbridge--true-p (plist-get planbridge--info :busy))
                    "busy…")
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
           (let ((held (and (listp planbridge--opening) planbridge--opening)))
             (setq planbridge--opening nil)
             (planbridge--update-info (plist-get result :session))
             (seq-doseq (event (plist-get result :events))
               (planbridge--handle-event event))
             (dolist (event (nreverse held))
               (planbridge--handle-event event))))))
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
     (planbridge--insert-line 'planbridge-notice
                              "ℹ " (or (plist-get data :message) "")))
    ("error"
     (planbridge--insert-line 'planbridge-blocked
                              "✗ error: " (or (plist-get data :message) "")))
    ("queued"
     (planbridge--insert-line 'planbridge-notice
                              "… queued: " (or (plist-get data :text) "")))
    ("turn_start"
     ;; The backend sends no `status' when a turn starts.
     (planbridge--update-info '(:busy t)))
    ("turn_end"
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

(provide 'planbridge)
;;; planbridge.el ends here

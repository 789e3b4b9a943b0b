;;; planbridge-card.el --- The approval card and drafts of planbridge  -*- lexical-binding: t; -*-

;; Copyright (C) 2025 The planbridge authors

;; Author: The planbridge authors
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

;; The approval card of a proposed plan, the drafts written from it
;; (instructions, feedback, the edited plan) and the session commands
;; about the approval and the handoff.  Part of planbridge.

;;; Code:

(require 'cl-lib)
(require 'seq)
(require 'subr-x)
(require 'planbridge)
(require 'diff-mode)

(declare-function markdown-mode "markdown-mode" ())

;;; The approval card
;;;

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
Fetching the card makes the backend check its Worktree branch again
\(a branch may have been created meanwhile); a changed card also comes
as an approval event."
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
A card for a new attempt starts without comments.  The card never
takes the focus by itself: it is displayed below the session's
window when the session is visible, and a message says how to review
it.  SELECT non-nil (the person asked for the card), or
`planbridge-select-approval-card', selects it."
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
         (session-win (get-buffer-window (current-buffer) 'visible))
         (dir default-directory))
    (setq planbridge--card-memory nil)
    (with-current-buffer card
      (setq planbridge--card-session id)
      (setq default-directory dir)
      (cond (comments (setq planbridge--card-comments comments))
            ((not (equal attempt shown)) (setq planbridge--card-comments nil)))
      (setq planbridge--card-view view))
    (when (planbridge--draw-card card)
      (let* ((select (or select (and new planbridge-select-approval-card)))
             (win (or (get-buffer-window card t)
                      (cond
                       (select (display-buffer card planbridge-approval-display-action))
                       ;; Next to the session, without selecting anything.
                       (session-win
                        (save-selected-window
                          (with-selected-window session-win
                            (display-buffer card planbridge-approval-display-action))))))))
        (when (window-live-p win)
          ;; The width may differ from the one guessed before display.
          (unless (equal (planbridge--card-target-width card)
                         (buffer-local-value 'planbridge--card-width card))
            (planbridge--draw-card card))
          (planbridge--card-show-settings win)
          (when (and select (not (eq (selected-window) win)))
            (select-window win)))
        (when (and new (not select))
          (message "%s" (substitute-command-keys
                         "planbridge: Plan proposed — \\<planbridge-session-mode-map>\\[planbridge-show-approval] to review")))))))

(defun planbridge--card-show-settings (win)
  "Make the Implementation settings and the footer visible in WIN.
When the card is taller than WIN, the end of the plan is shown above
the settings, with point on them; the plan's start is a scroll away."
  (with-selected-window win
    (let ((end (save-excursion (goto-char (point-max))
                               (skip-chars-backward "\n")
                               (point)))
          (settings (text-property-any (point-min) (point-max)
                                       'planbridge-row 'implementation)))
      (unless (pos-visible-in-window-p end win)
        (goto-char end)
        (recenter -1)
        (when settings
          (goto-char settings))))))

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

(defun planbridge--card-wrapped-rows (width text &rest props)
  "Return TEXT filled into rows at most WIDTH wide, never cut.
PROPS are added to every row.  An empty TEXT is one empty row, so the
card keeps its height."
  (let ((lines (if (string-empty-p text)
                   (list "")
                 (with-temp-buffer
                   (insert text)
                   (let ((fill-column width))
                     (fill-region (point-min) (point-max)))
                   (split-string (buffer-string) "\n")))))
    (mapconcat (lambda (line)
                 (let ((row (concat line "\n")))
                   (add-text-properties 0 (length row) props row)
                   row))
               lines "")))

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
                 (car lines)))))
     (let ((scope (append (plist-get view :scope) nil)))
       (list 'scope "S" "Scope"
             (if scope (string-join scope ", ") "none declared (nothing held)"))))))

(defun planbridge--card-notice (view)
  "Return the notice row text of VIEW, possibly empty."
  (let ((sel (plist-get view :selection))
        (blockers (append (plist-get view :blockers) nil))
        (notice (plist-get view :notice)))
    (string-join
     (delq nil
           (list (and (equal (plist-get sel :location) "worktree") blockers
                      (concat "Worktree blocked by: " (string-join blockers "; ")))
                 (and notice (not (equal notice "")) notice)
                 (planbridge--card-branch-notice view)))
     " · ")))

(defun planbridge--card-branch-notice (view)
  "Return the Worktree branch text of VIEW, or nil when not Worktree."
  (when-let ((branch (and (equal (plist-get (plist-get view :selection) :location) "worktree")
                          (planbridge--nonempty (plist-get view :branch)))))
    (if-let ((blocker (planbridge--nonempty (plist-get view :branch_blocker))))
        (format "Branch %s blocked: %s" branch blocker)
      (format "Branch %s" branch))))

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
     (planbridge--card-wrapped-rows width
                                    (planbridge--card-notice view)
                                    'face 'planbridge-card-notice
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
    (define-key map (kbd "<backtab>") #'planbridge-approval-cycle-mode-backward)
    (define-key map (kbd "S-<tab>") #'planbridge-approval-cycle-mode-backward)
    (define-key map (kbd "C") #'planbridge-approval-cycle-context-backward)
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
    (define-key map (kbd "S") #'planbridge-approval-edit-scope)
    (define-key map (kbd "d") #'planbridge-approval-version-diff)
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

(defconst planbridge--axis-values
  '(("location" "here" "worktree")
    ("context" "current" "fresh" "summary")
    ("execution" "direct" "goal")
    ("mode" "ask" "edits" "full-auto"))
  "The values of each cyclable card setting, in cycling order.")

(defun planbridge--card-cycle (axis backward)
  "Cycle AXIS of the card at point, the other way if BACKWARD is non-nil.
Forward cycling is the backend's; backward picks the previous value."
  (if (not backward)
      (planbridge--card-update (list :axis axis :cycle t))
    (let* ((values (cdr (assoc axis planbridge--axis-values)))
           (current (plist-get (plist-get (cdr (planbridge--card-or-error)) :selection)
                               (intern (concat ":" axis))))
           (pos (or (seq-position values current) 0))
           (prev (nth (mod (1- pos) (length values)) values)))
      (planbridge--card-update (list :axis axis :value prev)))))

(defun planbridge-approval-cycle-location (&optional backward)
  "Cycle the Location of the implementation: Here, Worktree.
With BACKWARD (a prefix argument), cycle the other way."
  (interactive "P")
  (planbridge--card-cycle "location" backward))

(defun planbridge-approval-cycle-context (&optional backward)
  "Cycle the Context of the implementation: Current, Fresh, Summary.
With BACKWARD (a prefix argument), cycle the other way."
  (interactive "P")
  (planbridge--card-cycle "context" backward))

(defun planbridge-approval-cycle-execution (&optional backward)
  "Cycle the Execution of the implementation: Direct, Goal.
With BACKWARD (a prefix argument), cycle the other way."
  (interactive "P")
  (planbridge--card-cycle "execution" backward))

(defun planbridge-approval-cycle-mode (&optional backward)
  "Cycle the permission Mode of the implementation: ask, edits, full-auto.
With BACKWARD (a prefix argument), cycle the other way."
  (interactive "P")
  (planbridge--card-cycle "mode" backward))

(defun planbridge-approval-cycle-mode-backward ()
  "Cycle the permission Mode of the implementation backward."
  (interactive)
  (planbridge--card-cycle "mode" t))

(defun planbridge-approval-cycle-context-backward ()
  "Cycle the Context of the implementation backward."
  (interactive)
  (planbridge--card-cycle "context" t))

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

(defun planbridge--branch-from-title (title)
  "Return a branch name derived from the plan TITLE, or nil.
Lower case words joined by dashes, under plan/, at most 40 characters:
\"Add a --name flag\" gives \"plan/add-a-name-flag\"."
  (let* ((words (split-string (downcase (or title "")) "[^a-z0-9]+" t))
         (slug (string-join words "-")))
    (unless (string-empty-p slug)
      (concat "plan/" (string-trim-right (truncate-string-to-width slug 40) "-")))))

(defun planbridge-approval-accept (&optional branch)
  "Accept the plan with the card's settings.
For a Worktree location, BRANCH names the new branch; it is read in
the minibuffer."
  (interactive
   (let ((view (cdr (planbridge--card-or-error))))
     (when (and (equal (plist-get (plist-get view :selection) :location) "worktree")
                (not (seq-empty-p (plist-get view :blockers))))
       ;; Refused before a branch is asked for, in the backend's words.
       (user-error "planbridge: Worktree is blocked by: %s (press l for Here)"
                   (string-join (append (plist-get view :blockers) nil) "; ")))
     (list (and (equal (plist-get (plist-get view :selection) :location) "worktree")
                (let* ((default (or (planbridge--nonempty (plist-get view :branch))
                                    (planbridge--branch-from-title (plist-get view :title))))
                       (name (string-trim
                              (read-string (format-prompt "Branch for the worktree" default)
                                           nil nil default))))
                  (when (string-empty-p name)
                    (user-error "planbridge: A Worktree implementation needs a branch name"))
                  (when-let ((blocker (and (equal name (plist-get view :branch))
                                           (planbridge--nonempty (plist-get view :branch_blocker)))))
                    ;; The card names it already; refused before a round trip.
                    (user-error "planbridge: Worktree branch blocked: %s" blocker))
                  name)))))
  (pcase-let ((`(,session . ,view) (planbridge--card-or-error)))
    (if (or (null branch) (equal branch (plist-get view :branch)))
        (planbridge--send-accept session (plist-get view :attempt) branch)
      ;; Another name: the card takes it first, so the backend checks it
      ;; (and the card shows it, blocked or not) before anything is accepted.
      (planbridge--approval-action
       session (plist-get view :attempt) :approval/update
       (list :change (list :axis "branch" :value branch))
       :success (lambda (v)
                  (when-let ((buf (planbridge--session-buffer-of session)))
                    (with-current-buffer buf (planbridge--apply-approval v)))
                  (if-let ((blocker (planbridge--nonempty (plist-get v :branch_blocker))))
                      (message "planbridge: Worktree branch blocked: %s" blocker)
                    (planbridge--send-accept session (plist-get v :attempt) branch)))))))

(defun planbridge--send-accept (session attempt branch)
  "Accept ATTEMPT of SESSION, naming BRANCH for a Worktree if non-nil."
  (planbridge--approval-action
   session attempt :approval/accept
   (and branch (list :branch branch))
   :success (lambda (result)
              (message "planbridge: %s"
                       (or (plist-get result :message) "Plan accepted")))))

(defun planbridge-approval-hide ()
  "Hide the card; the plan stays pending.
The header's \"1 plan\" or \\[planbridge-show-approval] shows it again."
  (interactive)
  (pcase-let ((`(,session . ,view) (planbridge--card-or-error)))
    (planbridge--approval-action session (plist-get view :attempt) :approval/hide nil)))

(defun planbridge-approval-cancel ()
  "Cancel the approval, after asking: the plan becomes a draft.
The settings are dropped.  \\<planbridge-session-mode-map>\\[planbridge-restore-draft] in the session brings the
draft back as a card while it is unchanged."
  (interactive)
  (pcase-let ((`(,session . ,view) (planbridge--card-or-error)))
    (unless (y-or-n-p (substitute-command-keys
                       "Cancel this plan?  It becomes a draft (\\<planbridge-session-mode-map>\\[planbridge-restore-draft] brings it back) "))
      (user-error "planbridge: The plan is still waiting for approval"))
    (planbridge--approval-action
     session (plist-get view :attempt) :approval/cancel nil
     :success (lambda (_)
                (message "planbridge: Plan cancelled; it is a draft now")
                (when-let ((buf (planbridge--session-buffer-of session)))
                  (with-current-buffer buf
                    (planbridge--close-approval (plist-get view :attempt))))))))

(defun planbridge-approval-edit-scope (paths)
  "Set the scope the implementation is held to: PATHS, files and directories.
Read as a comma-separated list; empty declares no scope."
  (interactive
   (let ((view (cdr (planbridge--card-or-error))))
     (list (split-string (read-string "Scope (comma-separated paths, empty for none): "
                                      (string-join (append (plist-get view :scope) nil) ", "))
                         "[ \t]*,[ \t]*" t "[ \t]+"))))
  (pcase-let ((`(,session . ,view) (planbridge--card-or-error)))
    (planbridge--approval-action session (plist-get view :attempt)
                                 :approval/update (list :scope (vconcat paths)))))

(defun planbridge-approval-version-diff ()
  "Show the diff of this plan version against the previous one."
  (interactive)
  (pcase-let* ((`(,session . ,_view) (planbridge--card-or-error))
               (result (planbridge--request :approval/diff (list :session session)))
               (buf (get-buffer-create "*planbridge plan diff*")))
    (with-current-buffer buf
      (let ((inhibit-read-only t))
        (erase-buffer)
        (insert (or (plist-get result :diff) "")))
      (diff-mode)
      (setq buffer-read-only t)
      (goto-char (point-min)))
    (display-buffer buf)
    buf))

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
  "Throw away the draft in the current buffer; ask first if it was changed."
  (interactive)
  (when (and (buffer-modified-p)
             (not (y-or-n-p "planbridge: Throw away the changes of this draft? ")))
    (user-error "planbridge: The draft is kept"))
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
         (if (equal (string-trim text) (string-trim (or (plist-get view :body) "")))
             (message "planbridge: The plan is unchanged; nothing was sent")
           (planbridge--approval-action session attempt :approval/edit
                                        (list :body text))))
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
(defun planbridge-recover ()
  "Recover this session after a crash, a failed step or a restart.
The backend's one recovery path (`handoff/recover') takes the right
next step: it resumes an accepted plan's handoff from its last durable
step, continues an interrupted implementation from its transcript,
resumes an implementation or Goal paused by a restart, or runs the
follow-ups still queued.  Nothing is archived, summarised or sent
twice."
  (interactive)
  (let ((id (progn (planbridge--connection) (planbridge--current-session-id))))
    (planbridge--async
     :handoff/recover (list :session id)
     :success (lambda (result)
                (message "planbridge: %s" (planbridge--recover-text result id)))
     :error (lambda (err)
              (if (equal (plist-get (plist-get err :data) :code) "nothing_to_retry")
                  (let ((goal (buffer-local-value 'planbridge--goal
                                                  (or (planbridge--session-buffer-of id)
                                                      (current-buffer)))))
                    (if (and goal (not (member (plist-get goal :status) '("active" "complete"))))
                        (message "planbridge: Nothing to recover; the Goal is %s: resume it with M-x planbridge-goal-resume or /goal resume"
                                 (or (plist-get goal :status) "stopped"))
                      (message "planbridge: Nothing to recover: no accepted plan, interrupted implementation or queued prompt is waiting")))
                (funcall (planbridge--error-reporter "handoff/recover") err))))))

(defun planbridge--recover-text (result id)
  "Say what `handoff/recover' did, from its RESULT, asked for session ID."
  (let ((step (planbridge--nonempty (plist-get result :step)))
        (where (plist-get result :session)))
    (concat
     (pcase (plist-get result :action)
       ("handoff" (format "Resuming the plan's handoff%s"
                          (if step (format " from step %s" step) "")))
       ("implementation" "Resuming the plan implementation")
       ("goal" "Resuming the Goal")
       ("queue" "Running the queued prompts")
       (_ "Recovering"))
     (if (and (planbridge--nonempty where) (not (equal where id)))
         (format " in the Worktree fork %s" where)
       ""))))

;;;###autoload
(defalias 'planbridge-retry-plan-implementation #'planbridge-recover
  "An older name of `planbridge-recover'.")

;;;###autoload
(defalias 'planbridge-resume-implementation #'planbridge-recover
  "An older name of `planbridge-recover'.")

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
;;; Drafts back as cards, prompts while a plan waits
;;;

(defun planbridge-restore-draft ()
  "Bring the session's draft plan back as an approval card.
After a cancel or a demotion, the proposal is a draft; it comes back
while it is unchanged (its hash still matches) and Plan is on."
  (interactive)
  (let* ((buf (or (planbridge--current-session-buffer)
                  (user-error "planbridge: Not in a session buffer")))
         (id (buffer-local-value 'planbridge--session-id buf))
         (hash (or (buffer-local-value 'planbridge--draft-hash buf)
                   (user-error "planbridge: This session has no draft plan"))))
    (planbridge--async
     :approval/restore (list :session id :hash hash)
     :success (lambda (view)
                (when (buffer-live-p buf)
                  (with-current-buffer buf
                    (planbridge--apply-approval view t)))
                (message "planbridge: The draft plan is waiting for approval again"))
     :error (planbridge--error-reporter "approval/restore"))))

(defun planbridge--pending-prompt-choice (text)
  "Ask what TEXT, typed while a plan waits for approval, is.
Feedback on the plan sends it with `approval/feedback' (the agent
revises the plan); queue keeps the plan waiting and runs TEXT after
the implementation starts.  \\[keyboard-quit] leaves TEXT in the composer."
  (let* ((session planbridge--session-id)
         (attempt (plist-get planbridge--approval :attempt))
         (choice (car (read-multiple-choice
                       "A plan waits for approval; this prompt is"
                       '((?f "feedback" "feedback on the plan: the agent revises it")
                         (?q "queue" "wait in the queue: it runs after the implementation starts")
                         (?c "cancel" "keep editing the prompt"))))))
    (pcase choice
      (?f
       (delete-region planbridge--input-start (point-max))
       (planbridge--approval-action
        session attempt :approval/feedback (list :text text)
        :success (lambda (_)
                   (message "planbridge: Feedback sent; the plan is being revised"))))
      (?q
       (delete-region planbridge--input-start (point-max))
       (planbridge--async
        :session/queue (list :session session :text text)
        :success (lambda (_)
                   (message "planbridge: Queued; it runs after the implementation starts"))))
      (_ (message "planbridge: Nothing sent")))))

;;; Events of the approval and the handoff
;;;

(cl-defmethod planbridge-render-event ((_kind (eql 'approval)) data)
  "Apply DATA of an `approval' event, the card's view, outside a replay.
A replay takes the card from `approval/get' afterwards."
  (unless planbridge--replaying
    (planbridge--apply-approval data)))

(cl-defmethod planbridge-render-event ((_kind (eql 'approval_closed)) data)
  "Render DATA of an `approval_closed' event and close the card."
  (let ((reason (plist-get data :reason)))
    (pcase reason
      ("cancelled"
       (planbridge--insert-line
        'planbridge-notice
        (substitute-command-keys
         "ℹ Plan cancelled: the proposal is a draft now (\\[planbridge-restore-draft] brings it back)")))
      ("demoted"
       (planbridge--insert-line
        'planbridge-notice
        (substitute-command-keys
         "ℹ The proposal is a draft now (\\[planbridge-restore-draft] brings it back)")))
      ("interrupted"
       (planbridge--insert-line 'planbridge-notice "ℹ Approval interrupted: nothing runs"))
      ("timed_out"
       (planbridge--insert-line
        'planbridge-notice
        (substitute-command-keys
         "ℹ Approval timed out: nothing runs; the proposal is a draft now (\\[planbridge-restore-draft] brings it back)"))))
    (when (and (equal reason "accepted") (plist-get data :selection))
      (planbridge--note-implementation (plist-get data :selection)))
    (unless planbridge--replaying
      (planbridge--close-approval (plist-get data :attempt)))))

(defun planbridge--note-implementation (selection)
  "Record in the transcript the settings of the accepted SELECTION.
The header shows its mode while the implementation runs."
  (let ((mode (planbridge--nonempty (plist-get selection :mode)))
        (skills (append (plist-get selection :skills) nil)))
    (planbridge--update-info (list :implementation_mode mode :implementation_done nil))
    (planbridge--insert-line
     'planbridge-notice
     (format "ℹ The implementation runs with mode %s · model %s · effort %s · skills %s · %s, %s context%s"
             (or mode "default")
             (or (planbridge--nonempty (plist-get selection :model)) "default")
             (or (planbridge--nonempty (plist-get selection :effort)) "default")
             (if skills
                 (mapconcat (lambda (p)
                              (file-name-nondirectory
                               (directory-file-name (file-name-directory p))))
                            skills ", ")
               "none")
             (planbridge--capitalize-value (plist-get selection :location))
             (downcase (planbridge--capitalize-value (plist-get selection :context)))
             (if (equal (plist-get selection :execution) "goal") " · as a Goal" "")))))

(cl-defmethod planbridge-render-event ((_kind (eql 'handoff)) data)
  "Render DATA of a `handoff' event: the accepted plan's handoff."
  (let ((state (plist-get data :state))
        (step (plist-get data :step))
        (reason (plist-get data :reason)))
    (pcase state
      ("started"
       (planbridge--insert-line 'planbridge-notice
                                "ℹ Implementation handoff started"
                                (if (planbridge--nonempty step)
                                    (format " (step %s)" step)
                                  "")))
      ("done"
       (planbridge--update-info '(:implementation_done t))
       (planbridge--insert-line 'planbridge-notice
                                "ℹ Implementation handoff done"))
      (_
       (let ((text (format "Implementation handoff %s%s%s; recover with M-x planbridge-recover"
                           (or state "failed")
                           (if step (format " at step %s" step) "")
                           (if (planbridge--nonempty reason)
                               (format ": %s" reason)
                             ""))))
         (planbridge--insert-line 'planbridge-blocked "✗ " text)
         (unless planbridge--replaying
           (message "planbridge: %s" text)))))))

(cl-defmethod planbridge-render-event ((_kind (eql 'summary)) data)
  "Render DATA of a `summary' event: the handoff summary is ready."
  (planbridge--insert-line 'planbridge-notice
                           (format "ℹ Handoff summary ready (%s characters)"
                                   (or (plist-get data :chars) "?"))))

(add-hook 'planbridge--turn-boundary-hook #'planbridge--refresh-pending-approval)
(add-hook 'planbridge--after-open-hook #'planbridge--refresh-approval)

(provide 'planbridge-card)
;;; planbridge-card.el ends here

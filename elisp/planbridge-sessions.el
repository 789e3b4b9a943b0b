;;; planbridge-sessions.el --- Sessions list and Worktree forks of planbridge  -*- lexical-binding: t; -*-

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

;; The list of stored sessions and the Worktree fork that continues a
;; session.  Part of planbridge.

;;; Code:

(require 'cl-lib)
(require 'seq)
(require 'subr-x)
(require 'planbridge)

;;; Worktree fork
;;;

(cl-defmethod planbridge-render-event ((_kind (eql 'forked)) data)
  "Apply DATA of a `forked' event: the session continued in a fork."
  (planbridge--forked data))

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
    (define-key map (kbd "d") #'planbridge-sessions-delete)
    (define-key map (kbd "x") #'planbridge-sessions-delete)
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

(defun planbridge-sessions-delete ()
  "Delete the session on the current line, after asking.
Its transcript, events and work:// files go; the workspace and any
worktree stay.  The backend refuses, and says why, while a turn runs
or the session still owns an unfinished implementation, Goal, fork,
queued prompt or share link."
  (interactive)
  (let* ((id (or (tabulated-list-get-id)
                 (user-error "planbridge: No session on this line")))
         (entry (tabulated-list-get-entry))
         (title (planbridge--nonempty (and entry (aref entry 1))))
         (workspace (and entry (aref entry 0))))
    (when (yes-or-no-p
           (format "Delete session %s%s (its transcript and work:// files; the workspace stays)? "
                   (if title (format "\"%s\"" title) id)
                   (if (planbridge--nonempty workspace) (format " in %s" workspace) "")))
      (let ((warning (plist-get (planbridge--request :session/delete (list :session id))
                                :warning)))
        (when-let ((buf (gethash id planbridge--buffers)))
          (remhash id planbridge--buffers)
          (when (buffer-live-p buf)
            (let ((kill-buffer-query-functions nil))
              (kill-buffer buf))))
        ;; Deleted, but some of its files stay aside: say where.
        (when (planbridge--nonempty warning)
          (display-warning 'planbridge warning :warning))
        (message "planbridge: Deleted session %s" (or title id))
        (revert-buffer)))))

;;;###autoload
(defun planbridge-sessions ()
  "List the stored planbridge sessions; RET opens one, d deletes one."
  (interactive)
  (planbridge--connection)
  (let ((buf (get-buffer-create "*planbridge sessions*")))
    (with-current-buffer buf
      (planbridge-sessions-mode)
      (planbridge--sessions-refresh)
      (tabulated-list-print))
    (pop-to-buffer buf)
    buf))

(provide 'planbridge-sessions)
;;; planbridge-sessions.el ends here

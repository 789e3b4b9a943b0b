;;; planbridge-artifacts.el --- Parked plans and the Plan: trailer of planbridge  -*- lexical-binding: t; -*-

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

;; Plans as artifacts: approve-and-park from the card (P), the list of
;; parked plans that starts one later (`planbridge-parked'), and the
;; "Plan:" commit trailer naming the accepted plan
;; (`planbridge-insert-plan-trailer', for a git-commit or magit commit
;; message buffer).  Part of planbridge.

;;; Code:

(require 'cl-lib)
(require 'subr-x)
(require 'tabulated-list)
(require 'planbridge)
(require 'planbridge-card)

;;; Approve and park
;;;

(defun planbridge-approval-park ()
  "Approve the plan with the card's settings and park it, starting nothing.
The plan is archived with all its settings; start it later, Here or
in a Worktree, from \\[planbridge-parked]."
  (interactive)
  (pcase-let ((`(,session . ,view) (planbridge--card-or-error)))
    (planbridge--approval-action
     session (plist-get view :attempt) :approval/park nil
     :success (lambda (parked)
                (message "planbridge: Plan %S parked; nothing runs until you start it (M-x planbridge-parked)"
                         (plist-get parked :title))
                (when-let ((buf (planbridge--session-buffer-of session)))
                  (with-current-buffer buf
                    (planbridge--close-approval (plist-get view :attempt))))))))

(define-key planbridge-approval-mode-map (kbd "P") #'planbridge-approval-park)

(cl-defmethod planbridge-render-event ((_kind (eql 'parked)) data)
  "Show DATA of a `parked' event: a plan was approved and parked."
  (planbridge--insert-line 'planbridge-notice
                           (format "ℹ Plan %S approved and parked: nothing runs until it is started"
                                   (or (plist-get data :title) ""))))

(cl-defmethod planbridge-render-event ((_kind (eql 'parked_started)) data)
  "Show DATA of a `parked_started' event: a parked plan was started."
  (planbridge--insert-line 'planbridge-notice
                           (format "ℹ Parked plan started (%s)%s"
                                   (or (plist-get data :location) "")
                                   (if (planbridge--true-p (plist-get data :stale_base))
                                       ": HEAD moved since it was approved"
                                     ""))))

;;; Parked plans list
;;;

(defvar-local planbridge--parked-session nil
  "The session whose parked plans the list shows, or nil for all.")

(defun planbridge--parked-entry (plan)
  "Return the `tabulated-list-entries' element for PLAN, a plist."
  (let ((sel (plist-get plan :selection))
        (hash (or (plist-get plan :hash) "")))
    (list (plist-get plan :id)
          (vector (or (plist-get plan :title) "")
                  (or (plist-get sel :location) "")
                  (or (plist-get sel :mode) "")
                  (substring hash 0 (min 12 (length hash)))
                  (planbridge--format-time (plist-get plan :created_at))))))

(defun planbridge--parked-refresh ()
  "Fill the parked plans list from the backend."
  (setq tabulated-list-entries
        (mapcar #'planbridge--parked-entry
                (planbridge--request :plan/parked
                                     (if planbridge--parked-session
                                         (list :session planbridge--parked-session)
                                       (list :all :json-false))))))

(defvar planbridge-parked-mode-map
  (let ((map (make-sparse-keymap)))
    (set-keymap-parent map tabulated-list-mode-map)
    (define-key map (kbd "RET") #'planbridge-parked-start)
    (define-key map (kbd "h") #'planbridge-parked-start-here)
    (define-key map (kbd "w") #'planbridge-parked-start-worktree)
    map)
  "Keymap of `planbridge-parked-mode'.")

(define-derived-mode planbridge-parked-mode tabulated-list-mode "planbridge-parked"
  "Major mode listing plans approved and parked, not started yet.
\\{planbridge-parked-mode-map}"
  (setq tabulated-list-format
        [("Plan" 36 t) ("Location" 9 t) ("Mode" 9 t) ("sha256" 13 nil) ("Parked" 16 t)])
  (setq tabulated-list-sort-key '("Parked" . nil))
  (add-hook 'tabulated-list-revert-hook #'planbridge--parked-refresh nil t)
  (tabulated-list-init-header))

(defun planbridge--parked-start (location &optional branch)
  "Start the parked plan on the current line at LOCATION with BRANCH.
LOCATION nil keeps the parked selection's."
  (let ((id (tabulated-list-get-id)))
    (unless id
      (user-error "planbridge: No parked plan on this line"))
    (let ((result (planbridge--request
                   :plan/startParked
                   `(:id ,id ,@(and location (list :location location))
                         ,@(and branch (list :branch branch))))))
      (message "planbridge: %s%s" (or (plist-get result :message) "Started")
               (if-let ((notice (planbridge--nonempty (plist-get result :notice))))
                   (concat " " notice)
                 ""))
      (revert-buffer)
      result)))

(defun planbridge-parked-start ()
  "Start the parked plan on this line with the settings it was parked with.
A Worktree start asks for the new branch."
  (interactive)
  (let* ((entry (tabulated-list-get-entry))
         (location (and entry (aref entry 1))))
    (if (equal location "worktree")
        (planbridge-parked-start-worktree (read-string "planbridge: New branch: "))
      (planbridge--parked-start nil))))

(defun planbridge-parked-start-here ()
  "Start the parked plan on this line Here, in the session's checkout."
  (interactive)
  (planbridge--parked-start "here"))

(defun planbridge-parked-start-worktree (branch)
  "Start the parked plan on this line in a Worktree on new BRANCH."
  (interactive (list (read-string "planbridge: New branch: ")))
  (planbridge--parked-start "worktree" branch))

;;;###autoload
(defun planbridge-parked (&optional all)
  "List the parked plans of the current session (with prefix ALL, of all).
RET starts one with its parked settings, h starts it Here, w in a
Worktree."
  (interactive "P")
  (let ((session (and (not all) (bound-and-true-p planbridge--session-id))))
    (planbridge--connection)
    (let ((buf (get-buffer-create "*planbridge parked*")))
      (with-current-buffer buf
        (planbridge-parked-mode)
        (setq planbridge--parked-session session)
        (planbridge--parked-refresh)
        (tabulated-list-print))
      (pop-to-buffer buf)
      buf)))

;;; The Plan: trailer
;;;

(defun planbridge-plan-trailer (&optional directory)
  "Return the \"Plan:\" trailer of the accepted plan for DIRECTORY, or nil.
It names the plan of the latest session whose workspace holds
DIRECTORY (default `default-directory'), as `planbridge plan-trailer'
prints it."
  (let ((dir (expand-file-name (or directory default-directory))))
    (with-temp-buffer
      (let ((status (apply #'call-process planbridge-program nil (list t nil) nil
                           "plan-trailer" "-C" dir
                           (when planbridge-state-dir
                             (list "--state-dir" (expand-file-name planbridge-state-dir))))))
        (when (eql status 0)
          (let ((line (string-trim (buffer-string))))
            (and (string-prefix-p "Plan: " line)
                 (not (string-match-p "\n" line))
                 line)))))))

;;;###autoload
(defun planbridge-insert-plan-trailer ()
  "Insert the \"Plan:\" trailer of the accepted plan in this commit message.
The trailer goes after the message, before git's comment lines,
separated by a blank line; a message that already names it is left
alone."
  (interactive)
  (let ((trailer (planbridge-plan-trailer)))
    (unless trailer
      (user-error "planbridge: No accepted plan for %s" (abbreviate-file-name default-directory)))
    (save-excursion
      (goto-char (point-min))
      (if (search-forward trailer nil t)
          (message "planbridge: The message already names the plan")
        (goto-char (point-min))
        ;; The message ends where git's comments (or a diff) begin.
        (let ((end (if (re-search-forward "^#" nil t) (match-beginning 0) (point-max))))
          (goto-char end)
          (skip-chars-backward " \t\n")
          (delete-region (point) end)
          (let ((last-line (buffer-substring-no-properties (line-beginning-position) (point))))
            (unless (bobp)
              ;; Trailers form the last paragraph: join one, or start it.
              (insert (if (string-match-p "\\`[A-Za-z-]+: " last-line) "\n" "\n\n"))))
          (insert trailer "\n")
          (unless (eobp) (insert "\n")))))
    trailer))

(provide 'planbridge-artifacts)
;;; planbridge-artifacts.el ends here

;;; planbridge-goal.el --- Goals of planbridge sessions  -*- lexical-binding: t; -*-

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

;; A Goal keeps the agent working turn after turn until it is
;; complete, blocked, paused or out of budget.  Part of planbridge.

;;; Code:

(require 'cl-lib)
(require 'seq)
(require 'subr-x)
(require 'planbridge)

;;; Goal
;;;

(cl-defmethod planbridge-render-event ((_kind (eql 'goal)) data)
  "Apply DATA of a `goal' event: the Goal and its summary."
  (planbridge--apply-goal data))

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

(add-hook 'planbridge--after-open-hook #'planbridge--refresh-goal)

(provide 'planbridge-goal)
;;; planbridge-goal.el ends here

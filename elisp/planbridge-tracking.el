;;; planbridge-tracking.el --- Todo list and plan steps of planbridge sessions  -*- lexical-binding: t; -*-

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

;; The tracking section above the prompt: the todo list the agent
;; keeps and the steps of an accepted plan being implemented.  Part of
;; planbridge.

;;; Code:

(require 'cl-lib)
(require 'seq)
(require 'subr-x)
(require 'planbridge)

;;; Tracking: the todo list and the accepted plan's steps
;;;

(cl-defmethod planbridge-render-event ((_kind (eql 'todo)) data)
  "Apply DATA of a `todo' event: the agent's todo list."
  (setq planbridge--todos (append (plist-get data :items) nil))
  (planbridge--draw-tracking))

(cl-defmethod planbridge-render-event ((_kind (eql 'steps)) data)
  "Apply DATA, the progress of the accepted plan being implemented."
  (planbridge--apply-tracked-plan data))

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
                     ("paused" (format ", paused%s (M-x planbridge-recover)"
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
            (format "⏸ Plan implementation paused%s; recover with M-x planbridge-recover"
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

(add-hook 'planbridge--after-open-hook #'planbridge--refresh-tracking)

(provide 'planbridge-tracking)
;;; planbridge-tracking.el ends here

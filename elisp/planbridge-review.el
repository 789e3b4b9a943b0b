;;; planbridge-review.el --- Implementation reports of planbridge sessions  -*- lexical-binding: t; -*-

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

;; The implementation report holds an implementation to its accepted
;; plan: per step the files it touched, the files changed outside the
;; plan, and the plan's Validation commands with whether they ran.
;; Part of planbridge.

;;; Code:

(require 'cl-lib)
(require 'outline)
(require 'diff-mode)
(require 'planbridge)

(defun planbridge--report-summary-line (report)
  "Return the one-line summary of REPORT, a plist."
  (or (plist-get report :summary) ""))

(cl-defmethod planbridge-render-event ((_kind (eql 'report)) data)
  "Render DATA of a `report' event: its one-line summary."
  (planbridge--insert-line 'planbridge-notice
                           "ℹ Implementation report: "
                           (planbridge--report-summary-line data)
                           " (M-x planbridge-review)"))

(defun planbridge--restoration-text (rs)
  "Return restoration RS, a plist, as one line of text."
  (format "after `%s` (%s): %s" (plist-get rs :command) (plist-get rs :by)
          (string-join (append (plist-get rs :paths) nil) ", ")))

(cl-defmethod planbridge-render-event ((_kind (eql 'scope)) data)
  "Render DATA of a `scope' event: the scope changed.
It was extended, or writes outside it were restored (the latest
restoration is named)."
  (let ((ext (append (plist-get data :extensions) nil))
        (last (car (last (append (plist-get data :restored) nil)))))
    (planbridge--insert-line 'planbridge-notice
                             "ℹ Scope"
                             (if ext (concat " extended to " (string-join ext ", ")) "")
                             (if last
                                 (concat (if ext ";" "") " restored outside it "
                                         (planbridge--restoration-text last))
                               ""))))

(defun planbridge--report-insert (report)
  "Insert REPORT, a plist, as outline sections in the current buffer."
  (insert (format "Implementation report: %s\n" (or (plist-get report :title) "")))
  (insert (format "Plan %s%s\n%s\n\n"
                  (truncate-string-to-width (or (plist-get report :hash) "") 12)
                  (let ((base (plist-get report :base)))
                    (if (planbridge--nonempty base)
                        (format " · base %s" (truncate-string-to-width base 12))
                      ""))
                  (planbridge--report-summary-line report)))
  (insert "* Steps\n")
  (seq-doseq (st (plist-get report :steps))
    (insert (format "** [%s] %s %s%s\n" (plist-get st :status) (plist-get st :id)
                    (plist-get st :text)
                    (if (planbridge--true-p (plist-get st :no_change)) " (done, no change)" "")))
    (seq-doseq (f (plist-get st :files))
      (insert (propertize (format "   %s\n" f) 'planbridge-report-file f))))
  (insert "* Files\n")
  (seq-doseq (f (plist-get report :files))
    (let ((outside (planbridge--true-p (plist-get f :outside_plan))))
      (insert (propertize (format "   %-8s %s +%d -%d%s\n" (plist-get f :status) (plist-get f :path)
                                  (plist-get f :added) (plist-get f :removed)
                                  (if outside "  OUTSIDE THE PLAN" ""))
                          'planbridge-report-file (plist-get f :path)
                          'face (and outside 'planbridge-blocked)))))
  (insert "* Validation\n")
  (seq-doseq (v (plist-get report :validation))
    (insert (format "   %s  %s\n"
                    (cond ((not (planbridge--true-p (plist-get v :ran))) "not run")
                          ((plist-get v :exit) (format "ran (exit %s)" (plist-get v :exit)))
                          (t "ran (no exit status)"))
                    (plist-get v :command))))
  (let ((ext (append (plist-get report :scope_extensions) nil)))
    (when ext
      (insert "* Scope extended to\n   " (string-join ext ", ") "\n")))
  (let ((unsettled (append (plist-get report :scope_unsettled) nil)))
    (when unsettled
      (insert "* Not held to the scope (stopped before its effects were compared)\n")
      (dolist (c unsettled)
        (insert (propertize (format "   `%s`\n" c) 'face 'planbridge-blocked)))))
  (let ((restored (append (plist-get report :scope_restored) nil)))
    (when restored
      (insert "* Restored outside the scope\n")
      (dolist (rs restored)
        (insert "   " (planbridge--restoration-text rs) "\n")
        (when (planbridge--nonempty (plist-get rs :kept))
          (insert (format "   what it left is kept in %s\n" (plist-get rs :kept))))
        (seq-doseq (f (plist-get rs :failed))
          (insert (propertize (format "   not restored: %s\n" f) 'face 'planbridge-blocked)))))))

(defvar planbridge-report-mode-map
  (let ((map (make-sparse-keymap)))
    (define-key map (kbd "TAB") #'outline-toggle-children)
    (define-key map (kbd "RET") #'planbridge-report-file-diff)
    (define-key map (kbd "g") #'planbridge-review)
    (define-key map (kbd "q") #'quit-window)
    map)
  "Keymap of `planbridge-report-mode'.")

(define-derived-mode planbridge-report-mode outline-mode "planbridge-report"
  "Major mode of an implementation report: one collapsible section per part.
\\{planbridge-report-mode-map}"
  (setq buffer-read-only t))

(defvar-local planbridge--report-session nil
  "The session whose report the buffer shows.")

(defun planbridge-report-file-diff (path)
  "Show the diff of PATH, a file of the report, against the implementation's base."
  (interactive
   (list (or (get-text-property (point) 'planbridge-report-file)
             (user-error "planbridge: No file on this line"))))
  (let* ((result (planbridge--request :report/fileDiff
                                      (list :session planbridge--report-session :path path)))
         (buf (get-buffer-create (format "*planbridge diff: %s*" path))))
    (with-current-buffer buf
      (let ((inhibit-read-only t))
        (erase-buffer)
        (insert (or (plist-get result :diff) "")))
      (diff-mode)
      (setq buffer-read-only t)
      (goto-char (point-min)))
    (pop-to-buffer buf)
    buf))

;;;###autoload
(defun planbridge-review ()
  "Build the implementation report of the current session and show it."
  (interactive)
  (let* ((session (or planbridge--report-session (planbridge--current-session-id)))
         (report (planbridge--request :report/get (list :session session)))
         (buf (get-buffer-create (format "*planbridge report: %s*" session))))
    (with-current-buffer buf
      (let ((inhibit-read-only t))
        (erase-buffer)
        (planbridge--report-insert report))
      (planbridge-report-mode)
      (setq planbridge--report-session session)
      (goto-char (point-min)))
    (pop-to-buffer buf)
    (message "planbridge: %s" (planbridge--report-summary-line report))
    buf))

(provide 'planbridge-review)
;;; planbridge-review.el ends here

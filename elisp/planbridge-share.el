;;; planbridge-share.el --- Browser share links of planbridge sessions  -*- lexical-binding: t; -*-

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

;; Share links let browsers follow a session.  Part of planbridge.

;;; Code:

(require 'cl-lib)
(require 'seq)
(require 'subr-x)
(require 'planbridge)

;;; Share links
;;;

(defcustom planbridge-share-relay nil
  "URL of a planbridge relay that share links go through, or nil.
With a URL such as \"https://relay.example.org\" (a `planbridge relay'
you run or trust), `planbridge-share' makes links on that relay: the
backend connects out to it and seals every frame end to end, so the
relay sees neither the session nor the link secrets, and nothing
listens on this machine.  nil serves links from the backend itself,
on loopback unless `planbridge-share-listen' says otherwise."
  :type '(choice (const :tag "No relay: the backend serves links" nil)
                 (string :tag "Relay URL"))
  :group 'planbridge)

(defun planbridge--scrub-log (secrets)
  "Replace each string of SECRETS in the events buffer by a placeholder.
Share links are secrets that the backend's answer carries; the wire
log keeps the rest of the exchange."
  (when-let ((conn planbridge--connection)
             (buf (ignore-errors (jsonrpc-events-buffer conn))))
    (with-current-buffer buf
      (let ((inhibit-read-only t))
        (save-excursion
          (dolist (secret secrets)
            (when (planbridge--nonempty secret)
              (goto-char (point-min))
              (while (search-forward secret nil t)
                (replace-match "[share link, not logged]" t t)))))))))

(defun planbridge--request-unlogged (method params)
  "Send METHOD with PARAMS, wait, and keep the links out of the wire log.
For answers that carry share links: their URLs are scrubbed from the
events buffer as soon as the answer arrives."
  (let ((result (planbridge--request method params)))
    (planbridge--scrub-log
     (mapcar (lambda (link) (plist-get link :url))
             (append (plist-get result :links) nil)))
    result))

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
                (if (seq-some (lambda (link) (equal (plist-get link :transport) "relay")) links)
                    "Transport: relay — sealed end to end; the relay sees no content.\n"
                  "Transport: direct — served by planbridge on this machine.\n")
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
written to *Messages*.  With `planbridge-share-relay' the links go
through that relay."
  (interactive)
  (let ((id (progn (planbridge--connection) (planbridge--current-session-id))))
    (unless (yes-or-no-p "Share this session (links show its transcript and plan, which may contain secrets)? ")
      (user-error "planbridge: Not shared"))
    (let* ((result (planbridge--request-unlogged
                    :share/start (append (list :session id)
                                         (when planbridge-share-relay
                                           (list :relay planbridge-share-relay)))))
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

(provide 'planbridge-share)
;;; planbridge-share.el ends here

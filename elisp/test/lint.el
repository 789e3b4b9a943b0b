;;; lint.el --- Run checkdoc and package-lint on planbridge  -*- lexical-binding: t; -*-

;;; Commentary:

;; Usage: emacs -Q --batch -L elisp -l elisp/test/lint.el elisp/planbridge*.el
;;
;; Runs checkdoc and package-lint (from the Debian `elpa-package-lint'
;; package) on every file left on the command line and exits non-zero
;; on any warning or error, or when package-lint cannot be found.

;;; Code:

(require 'cl-lib)
(require 'checkdoc)
(require 'package)

(declare-function package-lint-buffer "package-lint" (&optional buffer))

(defconst planbridge-lint--package-lint-dirs
  (append (file-expand-wildcards "/usr/share/emacs/site-lisp/elpa/package-lint-*")
          (file-expand-wildcards "/usr/share/emacs/site-lisp/elpa-src/package-lint-*"))
  "Directories where Debian installs package-lint.")

(defconst planbridge-lint--ignored
  '(;; package-lint 0.16 (Debian) predates the release of Emacs 28, so it
    ;; believes that no released Emacs satisfies (emacs "28.1").
    "This makes the package uninstallable in all released Emacs versions.")
  "Package-lint messages that are known to be stale, not problems.")

(defun planbridge-lint--load-package-lint ()
  "Load package-lint from the Debian package path or exit with failure."
  (dolist (dir planbridge-lint--package-lint-dirs)
    (add-to-list 'load-path dir))
  (unless (require 'package-lint nil t)
    (message "lint: package-lint not found (install elpa-package-lint); looked in %S"
             planbridge-lint--package-lint-dirs)
    (kill-emacs 2)))

(defun planbridge-lint--known-archive ()
  "Make jsonrpc known to package.el, offline.
jsonrpc is a :core package on GNU ELPA; the version Emacs 28.2 bundles,
1.0.14, is what the file requires.  package-lint only checks that the
dependency is installable, which needs the archive contents."
  (package-initialize)
  (unless (assq 'jsonrpc package-archive-contents)
    (push (list 'jsonrpc
                (package-desc-create :name 'jsonrpc :version '(1 0 14)
                                     :kind 'tar :archive "gnu"))
          package-archive-contents)))

(defun planbridge-lint--checkdoc (file)
  "Return checkdoc's complaints about FILE as a list of strings."
  (let ((problems '()))
    (with-current-buffer (find-file-noselect file)
      (cl-letf* ((source (current-buffer))
                 ((symbol-function 'checkdoc-error)
                  (lambda (point msg)
                    (push (format "%s:%d: checkdoc: %s"
                                  (file-name-nondirectory file)
                                  (with-current-buffer source
                                    (line-number-at-pos (or point (point-min))))
                                  msg)
                         problems))))
        (let ((checkdoc-autofix-flag 'never)
              (checkdoc-spellcheck-documentation-flag nil))
          (checkdoc-current-buffer t))))
    (nreverse problems)))

(defvar package-lint-main-file)

(defun planbridge-lint--package-lint (file)
  "Return package-lint's complaints about FILE as a list of strings.
The files other than planbridge.el are checked as parts of its
package, whose headers are in planbridge.el."
  (with-temp-buffer
    (insert-file-contents file t)
    (emacs-lisp-mode)
    (setq-local package-lint-main-file
                (expand-file-name "planbridge.el" (file-name-directory file)))
    (cl-loop for (line col type message) in (package-lint-buffer)
             unless (member message planbridge-lint--ignored)
             collect (format "%s:%d:%d: package-lint %s: %s"
                             (file-name-nondirectory file)
                             line col type message))))

(defun planbridge-lint-batch ()
  "Lint the files on the command line; exit non-zero on any complaint."
  (planbridge-lint--load-package-lint)
  (planbridge-lint--known-archive)
  (let ((problems '())
        (files (mapcar #'expand-file-name command-line-args-left)))
    (setq command-line-args-left nil)
    (unless files
      (message "lint: no files given")
      (kill-emacs 2))
    (dolist (file files)
      (setq problems (append problems
                             (planbridge-lint--checkdoc file)
                             (planbridge-lint--package-lint file))))
    (dolist (p problems) (message "%s" p))
    (message "lint: %d problem(s) in %s" (length problems)
             (mapconcat #'file-name-nondirectory files " "))
    (kill-emacs (if problems 1 0))))

(when noninteractive
  (planbridge-lint-batch))

;;; lint.el ends here

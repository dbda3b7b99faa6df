;;; eglot_test.el --- Emacs's eglot against `runnel lsp'  -*- lexical-binding: t; -*-

;; Run: RUNNEL=build/runnel emacs --batch -Q -l tests/lsp/eglot_test.el
;;
;; Opens examples/fashion_mlp.rnl in runnel-mode (editors/emacs), connects
;; eglot (Debian's elpa-eglot) to `runnel lsp', waits for the diagnostics
;; (none), hovers the tensor `h1' and prints the hover text, types a shape
;; error and waits for its diagnostic.  Exits with status 1 on any failure.

;;; Code:

(require 'cl-lib)
;; Debian's elpa-eglot and the newer project/xref it needs (-Q skips
;; site-lisp's package activation).
(dolist (dir (file-expand-wildcards "/usr/share/emacs/site-lisp/elpa/*"))
  (when (file-directory-p dir) (add-to-list 'load-path dir)))
(require 'eglot)

(defvar runnel-lsp-root
  (file-name-directory
   (directory-file-name
    (file-name-directory (or load-file-name buffer-file-name))))
  "The repository's tests/ directory; its parent is the root.")
(setq runnel-lsp-root (file-name-directory (directory-file-name runnel-lsp-root)))

(defvar runnel-lsp-failures nil)
(defun runnel-lsp-check (ok what)
  (unless ok (push what runnel-lsp-failures)))

(defvar runnel-lsp-published nil "The diagnostics of each publish, newest first.")
(advice-add 'eglot-handle-notification :after
            (lambda (_server method &rest args)
              (when (eq method 'textDocument/publishDiagnostics)
                (push (plist-get args :diagnostics) runnel-lsp-published))))

(defun runnel-lsp-wait (pred seconds)
  "Wait until PRED holds or SECONDS pass; return PRED's value."
  (let ((deadline (+ (float-time) seconds)) value)
    (while (and (not (setq value (funcall pred))) (< (float-time) deadline))
      (accept-process-output nil 0.05))
    value))

;; The example is edited in its buffer, never saved: no lock file
;; (`.#fashion_mlp.rnl', which other tests would find in examples/), no
;; auto-save or backup beside it.
(setq create-lockfiles nil
      auto-save-default nil
      make-backup-files nil)

(load (expand-file-name "editors/emacs/runnel-mode.el" runnel-lsp-root) nil t)
(setq eglot-server-programs
      `((runnel-mode . (,(or (getenv "RUNNEL") "runnel") "lsp"))))

(find-file (expand-file-name "examples/fashion_mlp.rnl" runnel-lsp-root))
(runnel-lsp-check (eq major-mode 'runnel-mode) "the example opens in runnel-mode")
(apply #'eglot (eglot--guess-contact))
(runnel-lsp-check (eglot-current-server) "eglot connected")

(runnel-lsp-check (runnel-lsp-wait (lambda () runnel-lsp-published) 60)
                  "diagnostics arrived")
(runnel-lsp-check (= 0 (length (car runnel-lsp-published)))
                  "the example has no diagnostics")

;; Hover on `h1' where it is bound.
(goto-char (point-min))
(search-forward "let h1")
(backward-char 1)
(let* ((reply (jsonrpc-request (eglot--current-server-or-lose) :textDocument/hover
                               (eglot--TextDocumentPositionParams)))
       (text (plist-get (plist-get reply :contents) :value)))
  (princ (format "hover on h1: %s\n" (replace-regexp-in-string "\n" " | " (or text ""))))
  (runnel-lsp-check (and text (string-match-p (regexp-quote "let h1: f32[?, 256]") text))
                    (format "hover shows h1's shape: %S" text)))

;; Type a shape error at the end; eglot sends the change incrementally.
(let ((before (length runnel-lsp-published))
      (line (progn (goto-char (point-max)) (line-number-at-pos))))
  (insert "let bad = h1 + x\n")
  (runnel-lsp-check
   (not (file-symlink-p (expand-file-name "examples/.#fashion_mlp.rnl"
                                          runnel-lsp-root)))
   "no lock file beside the example")
  (eglot--signal-textDocument/didChange)
  (runnel-lsp-check
   (runnel-lsp-wait (lambda () (and (> (length runnel-lsp-published) before)
                                    (> (length (car runnel-lsp-published)) 0)))
                    60)
   "the error typed is reported")
  (let* ((diag (and (car runnel-lsp-published) (aref (car runnel-lsp-published) 0)))
         (message (plist-get diag :message))
         (at (plist-get (plist-get (plist-get diag :range) :start) :line)))
    (princ (format "diagnostic: line %s: %s\n" (and at (1+ at)) message))
    (runnel-lsp-check (and message (string-match-p "cannot be broadcast" message) (eql at (1- line)))
                      (format "the diagnostic is at the line typed: %S" diag))))

(set-buffer-modified-p nil)
(eglot-shutdown (eglot--current-server-or-lose))
(if runnel-lsp-failures
    (progn
      (dolist (f (reverse runnel-lsp-failures)) (princ (format "FAIL: %s\n" f)))
      (kill-emacs 1))
  (princ "eglot lsp test: ok\n")
  (kill-emacs 0))

;;; eglot_test.el ends here

;;; emacs_test.el --- Test of runnel-mode  -*- lexical-binding: t; -*-

;; Run: emacs --batch -Q -l editors/test/emacs_test.el
;;
;; Checks that runnel-mode.el byte-compiles without a warning and loads,
;; that *.rnl files open in runnel-mode, the face at every character of
;; every token of fixture.rnl against fixture.expected, and that indenting
;; the fixture reproduces it.  Exits with status 1 on any failure.

;;; Code:

(require 'cl-lib)
(require 'bytecomp)

(defvar runnel-test-root
  (file-name-directory
   (directory-file-name
    (file-name-directory
     (directory-file-name (file-name-directory (or load-file-name buffer-file-name)))))))

(defvar runnel-test-failures nil)

(defun runnel-test-fail (format-string &rest args)
  (push (apply #'format format-string args) runnel-test-failures))

(defconst runnel-test-faces
  '(("comment" font-lock-comment-face font-lock-comment-delimiter-face)
    ("string" font-lock-string-face)
    ("escape" runnel-escape-face)
    ("device" runnel-device-spec-face)
    ("number" runnel-number-face)
    ("constant" font-lock-constant-face)
    ("dtype" font-lock-type-face)
    ("builtin" font-lock-builtin-face)
    ("function" font-lock-function-name-face)
    ("declaration" font-lock-keyword-face)
    ("conditional" font-lock-keyword-face)
    ("repeat" font-lock-keyword-face)
    ("flow" font-lock-keyword-face)
    ("run" font-lock-keyword-face)
    ("import" font-lock-keyword-face)
    ("block" font-lock-keyword-face)
    ("logical" font-lock-keyword-face)
    ("operator" runnel-operator-face)
    ("plain" nil))
  "The faces each class of fixture.expected may show.")

(defun runnel-test-file (name)
  (expand-file-name name runnel-test-root))

;; Byte-compiling: no warning, no error.
(let* ((out (make-temp-file "runnel-mode" t))
       (copy (expand-file-name "runnel-mode.el" out))
       (byte-compile-error-on-warn t))
  (copy-file (runnel-test-file "editors/emacs/runnel-mode.el") copy)
  (unless (byte-compile-file copy)
    (runnel-test-fail "runnel-mode.el does not byte-compile cleanly:\n%s"
                      (with-current-buffer (get-buffer-create byte-compile-log-buffer)
                        (buffer-string))))
  (delete-directory out t))

(add-to-list 'load-path (runnel-test-file "editors/emacs"))
(require 'runnel-mode)

(defun runnel-test-face-at (pos)
  (let ((face (get-text-property pos 'face)))
    (if (listp face) (car face) face)))

(defun runnel-test-expected ()
  "The entries of fixture.expected: (LINE COL LENGTH CLASS TEXT)."
  (with-temp-buffer
    (insert-file-contents (runnel-test-file "editors/test/fixture.expected"))
    (cl-loop for line in (split-string (buffer-string) "\n" t)
             collect (pcase-let ((`(,pos ,length ,class . ,text) (split-string line "\t")))
                       (pcase-let ((`(,l ,c) (split-string pos ":")))
                         (list (string-to-number l) (string-to-number c)
                               (string-to-number length) class
                               (mapconcat #'identity text "\t")))))))

(let ((checked 0)
      (lines 0))
  (with-current-buffer (find-file-noselect (runnel-test-file "editors/test/fixture.rnl"))
    (unless (eq major-mode 'runnel-mode)
      (runnel-test-fail "fixture.rnl opens in %s, not runnel-mode" major-mode))
    (font-lock-ensure)
    (dolist (entry (runnel-test-expected))
      (pcase-let ((`(,line ,col ,length ,class ,text) entry))
        (goto-char (point-min))
        (forward-line (1- line))
        (forward-char (1- col))
        (let ((start (point))
              (accepted (cdr (assoc class runnel-test-faces))))
          (if (not (equal (buffer-substring-no-properties start (min (point-max) (+ start length)))
                          text))
              (runnel-test-fail "fixture.rnl:%d:%d: fixture.expected is out of date: %s"
                                line col text)
            (cl-loop for pos from start below (+ start length)
                     do (cl-incf checked)
                     unless (memq (runnel-test-face-at pos) accepted)
                     do (runnel-test-fail
                         "fixture.rnl:%d:%d: %S should be %s %S, column %d is %S"
                         line col text class accepted (1+ (- pos (line-beginning-position)))
                         (runnel-test-face-at pos))
                     and return nil)))))
    ;; Indenting the fixture must reproduce it.
    (let ((original (buffer-string)))
      (with-temp-buffer
        (insert original)
        (runnel-mode)
        (setq lines (count-lines (point-min) (point-max)))
        (indent-region (point-min) (point-max))
        (let ((want (split-string original "\n"))
              (got (split-string (buffer-string) "\n")))
          (cl-loop for w in want for g in got for n from 1
                   unless (equal w g)
                   do (runnel-test-fail "indent: line %d becomes %S" n g))))))
  (dolist (f (reverse runnel-test-failures))
    (princ (format "FAIL %s\n" f)))
  (princ (format "emacs %s: %d fixture characters, %d lines indented: %s\n"
                 emacs-version checked lines
                 (if runnel-test-failures
                     (format "%d failures" (length runnel-test-failures))
                   "ok")))
  (kill-emacs (if runnel-test-failures 1 0)))

;;; emacs_test.el ends here

;;; runnel-mode.el --- Major mode for the Runnel language  -*- lexical-binding: t; -*-

;; Version: 0.1.0
;; Keywords: languages
;; Package-Requires: ((emacs "26.1"))

;;; Commentary:

;; Highlighting and indentation for Runnel scripts (*.rnl), the language of
;; docs/language.md.  Install: see docs/editors.md; in short
;;
;;   (add-to-list 'load-path "/path/to/runnel/editors/emacs")
;;   (require 'runnel-mode)
;;
;; The lists between BEGIN GENERATED and END GENERATED are written by
;; editors/test/sync_vocabulary.js from grammar/Runnel.g4,
;; the builtin table (`runnel ops --json`) and framework/dtype.h; edit the
;; rest by hand.

;;; Code:

(defgroup runnel nil
  "Editing Runnel scripts."
  :group 'languages
  :prefix "runnel-")

(defcustom runnel-indent-offset 4
  "Columns of indentation for each open bracket in Runnel code."
  :type 'integer
  :safe #'integerp)

(defface runnel-number-face
  '((t :inherit font-lock-constant-face))
  "Face for Runnel numbers: 42, 1_000, .5, 1e-3.")

(defface runnel-escape-face
  `((t :inherit ,(if (facep 'font-lock-escape-face)
                     'font-lock-escape-face
                   'font-lock-regexp-grouping-backslash)))
  "Face for escapes in Runnel strings: \\n \\t \\\\ \\\".")

(defface runnel-device-spec-face
  '((t :inherit font-lock-string-face :weight bold))
  "Face for the device specification string of a `device' block.")

(defface runnel-operator-face
  `((t :inherit ,(if (facep 'font-lock-operator-face)
                     'font-lock-operator-face
                   'font-lock-keyword-face)))
  "Face for Runnel operators: + - * / // % ** @ == := => .. and the rest.")

;; BEGIN GENERATED
(defconst runnel-keywords
  '("let" "var" "state" "input" "def" "fn" "if" "else" "loop" "while" "for"
    "in" "return" "break" "continue" "run" "with" "import" "as" "device"
    "scope" "after" "and" "or" "not")
  "Runnel keywords (grammar/Runnel.g4), less the constants.")
(defconst runnel-constants
  '("true" "false" "none")
  "Runnel constant keywords.")
(defconst runnel-dtypes
  '("f16" "bf16" "f32" "f64" "i8" "u8" "i32" "i64" "bool")
  "Runnel dtype names (framework/dtype_table.h).")
(defconst runnel-builtins
  '("abs" "acos" "acosh" "all" "all_reduce" "allclose" "any" "apply_adam"
    "apply_momentum" "apply_sgd" "arange" "arg" "argmax" "argmin" "asin"
    "asinh" "assert" "assign" "assign_add" "assign_sub" "atan" "atanh"
    "avg_pool" "avg_pool3d" "batch_normalize" "batches" "bias_add"
    "broadcast_to" "cast" "ceil" "check_numerics" "clip" "close" "concat"
    "conv2d" "conv2d_transpose" "conv3d" "conv3d_transpose" "cos" "cumsum"
    "dataset" "debug_print" "dequeue" "dequeue_many" "dropout"
    "dynamic_partition" "dynamic_stitch" "einsum" "elu" "embedding_lookup"
    "encode" "enqueue" "enqueue_many" "erf" "exit" "exp" "expand_dims" "eye"
    "fill" "float" "floor" "fmt" "gather" "gather_elements" "gather_nd"
    "gelu_exact" "global_step" "glorot_uniform" "grad" "group" "gru_cell"
    "he_normal" "identity" "int" "isfinite" "isnan" "l2_loss"
    "layer_normalize" "leaves" "len" "load_csv" "load_idx" "load_npy"
    "load_records" "load_text" "log" "log1p" "log_softmax" "logsumexp"
    "lstm_cell" "lstm_sequence" "map" "masked_softmax" "matmul" "matmul_add"
    "max" "max_pool" "max_pool3d" "max_pool_with_argmax" "maximum" "mean"
    "memory_budget" "min" "minimum" "neg" "non_max_suppression" "nonzero"
    "noop" "one_hot" "ones" "ones_like" "pack_as" "pad" "pow" "print" "prod"
    "progress" "queue" "random_normal" "random_uniform" "rank" "read_idx"
    "relu" "report" "reshape" "resize" "restore" "round" "rsqrt" "runner"
    "save" "save_npy" "scaled_dot_product_attention" "scan" "scatter_add"
    "scatter_elements" "scatter_nd" "scatter_sub" "scatter_update" "shape_of"
    "sigmoid" "sigmoid_cross_entropy" "sign" "sin" "size" "sleep" "slice"
    "slot" "softmax" "softmax_cross_entropy" "softplus" "sparse_apply_adam"
    "sparse_apply_momentum" "sparse_softmax_cross_entropy" "split" "sqrt"
    "square" "squeeze" "stack" "stop_gradient" "sum" "summary"
    "sync_accumulate" "sync_advance" "sync_barrier" "sync_take" "tanh" "task"
    "tile" "top_k" "trainable_vars" "transpose" "truncated_normal" "unique"
    "unique_all" "unsorted_segment_sum" "unstack" "vocabulary" "where"
    "with_values" "words" "zeros" "zeros_like")
  "Runnel builtins (the builtin table, via `runnel ops --json`).")
;; END GENERATED

(defvar runnel-mode-syntax-table
  (let ((table (make-syntax-table)))
    (modify-syntax-entry ?# "<" table)
    (modify-syntax-entry ?\n ">" table)
    (modify-syntax-entry ?\" "\"" table)
    (modify-syntax-entry ?\\ "\\" table)
    (modify-syntax-entry ?_ "_" table)
    (dolist (c '(?' ?+ ?- ?* ?/ ?% ?@ ?= ?< ?> ?! ?: ?? ?. ?, ?\;))
      (modify-syntax-entry c "." table))
    table)
  "Syntax table of `runnel-mode'.")

(defun runnel--in-code-p (pos)
  "Return non-nil if POS is outside strings and comments."
  (save-excursion (save-match-data (not (nth 8 (syntax-ppss pos))))))

(defun runnel--code-matcher (regexp &optional group)
  "Return a font-lock matcher for REGEXP that skips strings and comments.
GROUP (default 0) is the group whose start must be in code."
  (lambda (limit)
    (let (found)
      (while (and (not found) (re-search-forward regexp limit t))
        (setq found (runnel--in-code-p (match-beginning (or group 0)))))
      found)))

(defun runnel--word-matcher (words &optional not-a-name)
  "Return a font-lock matcher for WORDS, as whole symbols, in code.
A word after `.' (not `..') names a member (t.rank) and is skipped.  With
NOT-A-NAME a word followed by `=' (not `==' or `=>') names an
argument (trainable_vars(scope = \"\")) and is skipped too."
  (let ((regexp (concat "\\_<" (regexp-opt words t) "\\_>")))
    (lambda (limit)
      (let (found)
        (while (and (not found) (re-search-forward regexp limit t))
          (setq found
                (and (not (and (eq (char-before (match-beginning 1)) ?.)
                                (not (eq (char-before (1- (match-beginning 1))) ?.))))
                     (not (and not-a-name
                               (save-excursion
                                 (goto-char (match-end 1))
                                 (looking-at-p "[ \t]*=\\(?:[^=>]\\|$\\)"))))
                     (runnel--in-code-p (match-beginning 1)))))
        found))))

(defun runnel--escape-matcher (limit)
  "Font-lock matcher for string escapes before LIMIT."
  (let (found)
    (while (and (not found) (re-search-forward "\\\\[nt\\\\\"]" limit t))
      (setq found (save-excursion
                    (save-match-data (nth 3 (syntax-ppss (match-beginning 0)))))))
    found))

(defconst runnel--digits "[0-9]\\(?:_?[0-9]\\)*"
  "Regexp of the digits of a Runnel number, with `_' separators.")

(defconst runnel--exponent (concat "[eE][-+]?" runnel--digits)
  "Regexp of the exponent of a Runnel float.")

(defvar runnel-font-lock-keywords
  `(;; The name after `def'.
    (,(runnel--code-matcher "\\_<def[ \t]+\\(\\_<[A-Za-z_][A-Za-z0-9_]*\\_>\\)")
     1 font-lock-function-name-face)
    ;; The device specification string of a `device' block.
    (,(runnel--code-matcher "\\_<device[ \t]+\\(\"\\(?:[^\"\\\\\n]\\|\\\\.\\)*\"\\)")
     1 'runnel-device-spec-face t)
    (runnel--escape-matcher 0 'runnel-escape-face t)
    (,(runnel--word-matcher runnel-keywords t) 1 font-lock-keyword-face)
    (,(runnel--word-matcher runnel-constants) 1 font-lock-constant-face)
    (,(runnel--word-matcher runnel-dtypes) 1 font-lock-type-face)
    (,(runnel--word-matcher runnel-builtins t) 1 font-lock-builtin-face)
    ;; Floats (1.0 1e-3 2.5E+4, then .5), then integers (42 1_000). `1.'
    ;; is not a float, so that `0..n' is a range.
    (,(concat "\\_<" runnel--digits "\\(?:\\." runnel--digits "\\(?:" runnel--exponent
              "\\)?\\|" runnel--exponent "\\)\\_>")
     0 'runnel-number-face)
    (,(concat "\\(?:^\\|[^[:alnum:]_.]\\)\\(\\." runnel--digits "\\(?:" runnel--exponent
              "\\)?\\)\\_>")
     1 'runnel-number-face)
    (,(concat "\\_<" runnel--digits "\\_>") 0 'runnel-number-face)
    ;; Operators, longest first; a single `.' (member access) is not one.
    ("\\*\\*\\|//\\|:=\\|[-+*/]=\\|==\\|!=\\|<=\\|>=\\|=>\\|\\.\\.\\|[-+*/%@<>=?]"
     0 'runnel-operator-face))
  "Font-lock keywords of `runnel-mode'.")

;;; Indentation

(defconst runnel--continuation-regexp
  "\\(?:[-+*/%@=<>]\\|\\.\\.\\|\\_<and\\|\\_<or\\)"
  "Regexp of the tokens after which a line goes on on the next one.
`{', `(', `[' and `,' continue lines too, but inside brackets.")

(defun runnel--previous-code-line ()
  "Move to the previous line that holds code; nil if there is none."
  (let (found)
    (while (and (not found) (zerop (forward-line -1)))
      (back-to-indentation)
      (unless (or (eolp) (eq (char-after) ?#))
        (setq found t)))
    found))

(defun runnel--end-of-code ()
  "Move to the end of the code on this line, before a comment and spaces."
  (end-of-line)
  (let ((ppss (syntax-ppss)))
    (when (nth 4 ppss)
      (goto-char (nth 8 ppss))))
  (skip-chars-backward " \t"))

(defun runnel-indent-level ()
  "Return the column the current line of Runnel code should start at.
A line inside brackets goes one level deeper than the line of the
innermost open bracket; a line that starts with a closing bracket
lines up with the line of its opening bracket.  A line that goes on
a statement (the previous line ended with a binary operator, `,', `='
or `=>', outside ( ) and [ ]) goes one level deeper still."
  (save-excursion
    (back-to-indentation)
    (let* ((start (point))
           (open (nth 1 (syntax-ppss start)))
           (closing (looking-at-p "[])}]"))
           (base (if open
                     (save-excursion (goto-char open) (current-indentation))
                   0))
           (level (if (and open (not closing)) (+ base runnel-indent-offset) base)))
      (if (and (not closing)
               (or (null open) (eq (char-after open) ?{))
               (save-excursion
                 (and (runnel--previous-code-line)
                      (progn (runnel--end-of-code) t)
                      (equal (nth 1 (syntax-ppss)) open)
                      (looking-back runnel--continuation-regexp (line-beginning-position)))))
          (+ level runnel-indent-offset)
        level))))

(defun runnel-indent-line ()
  "Indent the current line of Runnel code."
  (interactive)
  (let ((level (runnel-indent-level))
        (offset (- (current-column) (current-indentation))))
    (indent-line-to level)
    (when (> offset 0)
      (forward-char offset))))

;;;###autoload
(define-derived-mode runnel-mode prog-mode "Runnel"
  "Major mode for editing Runnel scripts (.rnl).

\\{runnel-mode-map}"
  :syntax-table runnel-mode-syntax-table
  (setq-local comment-start "# ")
  (setq-local comment-start-skip "#+[ \t]*")
  (setq-local comment-end "")
  (setq-local font-lock-defaults '(runnel-font-lock-keywords))
  (setq-local indent-line-function #'runnel-indent-line)
  (setq-local indent-tabs-mode nil)
  (setq-local tab-width 8)
  (setq-local electric-indent-chars (append "})]" electric-indent-chars)))

;;;###autoload
(add-to-list 'auto-mode-alist '("\\.rnl\\'" . runnel-mode))

(provide 'runnel-mode)

;;; runnel-mode.el ends here

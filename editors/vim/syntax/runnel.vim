" Vim syntax file
" Language:    Runnel (.rnl), see docs/language.md
" Maintainer:  the Runnel project (editors/vim)
"
" The lists between BEGIN GENERATED and END GENERATED are written by
" editors/test/sync_vocabulary.js from grammar/Runnel.g4,
" the builtin table (`runnel ops --json`) and framework/dtype.h; edit the rest
" by hand.

if exists('b:current_syntax')
  finish
endif
let s:cpo_save = &cpo
set cpo&vim

" Nothing spans lines: strings and comments end with theirs.
syn sync minlines=1 maxlines=1

" Keywords, constants, dtypes and builtins are matches, not `syn keyword`s,
" so that they can skip names after `.` (t.rank) and before `=`
" (trainable_vars(scope = "")). A name followed by `=` is an argument name.
" BEGIN GENERATED
syn match runnelDeclaration "\%(\%(\.\.\)\@<=\|\.\@<!\)\<\%(let\|var\|state
      \\|input\|def\|fn\)\>\%(\s*=[=>]\@!\)\@!"
syn match runnelConditional "\%(\%(\.\.\)\@<=\|\.\@<!\)\<\%(if\|else\)\>\%(\s*=[=>]\@!\)\@!"
syn match runnelRepeat "\%(\%(\.\.\)\@<=\|\.\@<!\)\<\%(loop\|while\|for\|in\)\>\%(\s*=[=>]\@!\)\@!"
syn match runnelFlow "\%(\%(\.\.\)\@<=\|\.\@<!\)\<\%(return\|break\|continue\)\>\%(\s*=[=>]\@!\)\@!"
syn match runnelRun "\%(\%(\.\.\)\@<=\|\.\@<!\)\<\%(run\|with\)\>\%(\s*=[=>]\@!\)\@!"
syn match runnelInclude "\%(\%(\.\.\)\@<=\|\.\@<!\)\<\%(import\|as\)\>\%(\s*=[=>]\@!\)\@!"
syn match runnelBlock "\%(\%(\.\.\)\@<=\|\.\@<!\)\<\%(device\|scope\|after\)\>\%(\s*=[=>]\@!\)\@!"
syn match runnelLogical "\%(\%(\.\.\)\@<=\|\.\@<!\)\<\%(and\|or\|not\)\>\%(\s*=[=>]\@!\)\@!"
syn match runnelConstant "\%(\%(\.\.\)\@<=\|\.\@<!\)\<\%(true\|false\|none\)\>"
syn match runnelDType "\%(\%(\.\.\)\@<=\|\.\@<!\)\<\%(f16\|bf16\|f32\|f64\|i8
      \\|u8\|i32\|i64\|bool\)\>"
syn match runnelBuiltin "\%(\%(\.\.\)\@<=\|\.\@<!\)\<\%(abs\|acos\|acosh\|all
      \\|all_reduce\|allclose\|any\|apply_adam\|apply_momentum\|apply_sgd
      \\|arange\|arg\|argmax\|argmin\|asin\|asinh\|assert\|assign\|assign_add
      \\|assign_sub\|atan\|atanh\|avg_pool\|avg_pool3d\|batch_normalize
      \\|batches\|bias_add\|broadcast_to\|cast\|ceil\|check_numerics\|clip
      \\|close\|concat\|conv2d\|conv2d_transpose\|conv3d\|conv3d_transpose
      \\|cos\|cumsum\|dataset\|debug_print\|dequeue\|dequeue_many\|dropout
      \\|dynamic_partition\|dynamic_stitch\|einsum\|elu\|embedding_lookup
      \\|encode\|enqueue\|enqueue_many\|erf\|exit\|exp\|expand_dims\|eye\|fill
      \\|float\|floor\|fmt\|gather\|gather_elements\|gather_nd\|gelu_exact
      \\|global_step\|glorot_uniform\|grad\|group\|gru_cell\|he_normal
      \\|identity\|int\|isfinite\|isnan\|l2_loss\|layer_normalize\|leaves\|len
      \\|load_csv\|load_idx\|load_npy\|load_records\|load_text\|log\|log1p
      \\|log_softmax\|logsumexp\|lstm_cell\|lstm_sequence\|map\|masked_softmax
      \\|matmul\|matmul_add\|max\|max_pool\|max_pool3d\|max_pool_with_argmax
      \\|maximum\|mean\|memory_budget\|min\|minimum\|neg\|non_max_suppression
      \\|nonzero\|noop\|one_hot\|ones\|ones_like\|pack_as\|pad\|pow\|print
      \\|prod\|progress\|queue\|random_normal\|random_uniform\|rank\|read_idx
      \\|relu\|report\|reshape\|resize\|restore\|round\|rsqrt\|runner\|save
      \\|save_npy\|scaled_dot_product_attention\|scan\|scatter_add
      \\|scatter_elements\|scatter_nd\|scatter_sub\|scatter_update\|shape_of
      \\|sigmoid\|sigmoid_cross_entropy\|sign\|sin\|size\|sleep\|slice\|slot
      \\|softmax\|softmax_cross_entropy\|softplus\|sparse_apply_adam
      \\|sparse_apply_momentum\|sparse_softmax_cross_entropy\|split\|sqrt
      \\|square\|squeeze\|stack\|stop_gradient\|sum\|summary\|sync_accumulate
      \\|sync_advance\|sync_barrier\|sync_take\|tanh\|task\|tile\|top_k
      \\|trainable_vars\|transpose\|truncated_normal\|unique\|unique_all
      \\|unsorted_segment_sum\|unstack\|vocabulary\|where\|with_values\|words
      \\|zeros\|zeros_like\)\>\%(\s*=[=>]\@!\)\@!"
" END GENERATED

" The name after `def` (defined after the builtins: it wins over them).
syn match runnelFunction "\%(\<def\s\+\)\@<=\h\w*"

" Numbers: 42 1_000, 1.0 .5 1e-3 2.5E+4. Floats are defined after integers
" so that they win where both start.
syn match runnelNumber "\<\d\%(_\=\d\)*\>"
syn match runnelFloat "\<\d\%(_\=\d\)*\.\d\%(_\=\d\)*\%([eE][-+]\=\d\%(_\=\d\)*\)\=\>"
syn match runnelFloat "\%(\w\|\.\)\@<!\.\d\%(_\=\d\)*\%([eE][-+]\=\d\%(_\=\d\)*\)\=\>"
syn match runnelFloat "\<\d\%(_\=\d\)*[eE][-+]\=\d\%(_\=\d\)*\>"

" Operators, longest first. A single `.` (member access) is not one.
syn match runnelOperator "\*\*\|//\|:=\|[-+*/]=\|==\|!=\|<=\|>=\|=>\|\.\.\|[-+*/%@<>=?]"

" Strings end at the closing quote or, unterminated, at the end of the line.
syn match runnelEscape +\\[nt\\"]+ contained
syn match runnelEscapeError +\\[^nt\\"]+ contained
syn region runnelString start=+"+ skip=+\\\\\|\\"+ end=+"+ end=+$+
      \ contains=runnelEscape,runnelEscapeError,@Spell
" A string right after `device` is a device specification.
syn region runnelDeviceSpec start=+\%(\<device\s\+\)\@<="+ skip=+\\\\\|\\"+ end=+"+ end=+$+
      \ contains=runnelEscape,runnelEscapeError

syn keyword runnelTodo TODO FIXME XXX NOTE contained
syn match runnelComment "#.*$" contains=runnelTodo,@Spell

hi def link runnelComment      Comment
hi def link runnelTodo         Todo
hi def link runnelString       String
hi def link runnelEscape       SpecialChar
hi def link runnelEscapeError  Error
hi def link runnelDeviceSpec   Special
hi def link runnelNumber       Number
hi def link runnelFloat        Float
hi def link runnelConstant     Constant
hi def link runnelDType        Type
hi def link runnelBuiltin      Function
hi def link runnelFunction     Function
hi def link runnelDeclaration  StorageClass
hi def link runnelConditional  Conditional
hi def link runnelRepeat       Repeat
hi def link runnelFlow         Statement
hi def link runnelRun          Statement
hi def link runnelInclude      Include
hi def link runnelBlock        Keyword
hi def link runnelLogical      Operator
hi def link runnelOperator     Operator

let b:current_syntax = 'runnel'
let &cpo = s:cpo_save
unlet s:cpo_save

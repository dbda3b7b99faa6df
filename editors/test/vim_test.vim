" The Vim mode test, run headless by run_test.sh vim:
"   RUNNEL_VIM_TEST_OUT=FILE vim -Nu NONE -i NONE -es -S editors/test/vim_test.vim
" checks that *.rnl files get filetype runnel, the syntax group at every
" character of every token of fixture.rnl against fixture.expected, that the
" groups link to Vim's conventional ones, and that gg=G leaves the fixture
" as it is. Writes failures and a summary to FILE (Vim in -es mode has no
" good stdout); exits with :cquit when there are any.

let s:root = fnamemodify(expand('<sfile>:p'), ':h:h:h')
let s:failures = []

" The Vim syntax groups each class of fixture.expected may show.
let s:groups = {
      \ 'comment': ['runnelComment', 'runnelTodo'],
      \ 'string': ['runnelString'],
      \ 'escape': ['runnelEscape'],
      \ 'device': ['runnelDeviceSpec'],
      \ 'number': ['runnelNumber', 'runnelFloat'],
      \ 'constant': ['runnelConstant'],
      \ 'dtype': ['runnelDType'],
      \ 'builtin': ['runnelBuiltin'],
      \ 'function': ['runnelFunction'],
      \ 'declaration': ['runnelDeclaration'],
      \ 'conditional': ['runnelConditional'],
      \ 'repeat': ['runnelRepeat'],
      \ 'flow': ['runnelFlow'],
      \ 'run': ['runnelRun'],
      \ 'import': ['runnelInclude'],
      \ 'block': ['runnelBlock'],
      \ 'logical': ['runnelLogical'],
      \ 'operator': ['runnelOperator'],
      \ 'plain': [''],
      \ }

" The conventional group each Runnel group links to.
let s:links = {
      \ 'runnelComment': 'Comment', 'runnelTodo': 'Todo', 'runnelString': 'String',
      \ 'runnelEscape': 'SpecialChar', 'runnelDeviceSpec': 'Special',
      \ 'runnelNumber': 'Number', 'runnelFloat': 'Float', 'runnelConstant': 'Constant',
      \ 'runnelDType': 'Type', 'runnelBuiltin': 'Function', 'runnelFunction': 'Function',
      \ 'runnelDeclaration': 'StorageClass', 'runnelConditional': 'Conditional',
      \ 'runnelRepeat': 'Repeat', 'runnelFlow': 'Statement', 'runnelRun': 'Statement',
      \ 'runnelInclude': 'Include', 'runnelBlock': 'Keyword', 'runnelLogical': 'Operator',
      \ 'runnelOperator': 'Operator',
      \ }

function! s:Fail(message) abort
  call add(s:failures, a:message)
endfunction

execute 'set runtimepath^=' . fnameescape(s:root . '/editors/vim')
set noswapfile
filetype plugin indent on
syntax on
execute 'edit ' . fnameescape(s:root . '/editors/test/fixture.rnl')

if &filetype !=# 'runnel'
  call s:Fail('fixture.rnl has filetype "' . &filetype . '", not runnel')
endif
if &shiftwidth != 4 || !&expandtab
  call s:Fail('ftplugin: shiftwidth ' . &shiftwidth . ', expandtab ' . &expandtab)
endif

let s:checked = 0
for s:entry in readfile(s:root . '/editors/test/fixture.expected')
  let [s:pos, s:length, s:class; s:rest] = split(s:entry, "\t", 1)
  let s:text = join(s:rest, "\t")
  let [s:lnum, s:col] = map(split(s:pos, ':'), 'str2nr(v:val)')
  let s:at = 'fixture.rnl:' . s:pos . ': '
  if strpart(getline(s:lnum), s:col - 1, str2nr(s:length)) !=# s:text
    call s:Fail(s:at . 'fixture.expected is out of date: ' . s:text)
    continue
  endif
  for s:c in range(s:col, s:col + str2nr(s:length) - 1)
    let s:checked += 1
    let s:name = synIDattr(synID(s:lnum, s:c, 1), 'name')
    if index(s:groups[s:class], s:name) < 0
      call s:Fail(s:at . '"' . s:text . '" should be ' . s:class . ' (' . join(s:groups[s:class], ' ')
            \ . '), column ' . s:c . ' is "' . s:name . '"')
      break
    endif
  endfor
endfor

for [s:group, s:target] in items(s:links)
  let s:hi = execute('highlight ' . s:group)
  if s:hi !~# 'links to ' . s:target . '\>'
    call s:Fail(s:group . ' does not link to ' . s:target . ':' . substitute(s:hi, '\n', ' ', 'g'))
  endif
endfor

" Indenting the fixture must reproduce it.
let s:before = getline(1, '$')
normal! gg=G
let s:after = getline(1, '$')
for s:i in range(len(s:before))
  if s:before[s:i] !=# s:after[s:i]
    call s:Fail('indent: line ' . (s:i + 1) . ' becomes "' . s:after[s:i] . '"')
  endif
endfor

let s:summary = 'vim: ' . s:checked . ' fixture characters, ' . len(s:before) . ' lines indented: '
      \ . (empty(s:failures) ? 'ok' : len(s:failures) . ' failures')
call writefile(map(copy(s:failures), '"FAIL " . v:val') + [s:summary],
      \ empty($RUNNEL_VIM_TEST_OUT) ? '/dev/stdout' : $RUNNEL_VIM_TEST_OUT)
if empty(s:failures)
  qall!
endif
cquit!

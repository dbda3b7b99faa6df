" Vim indent file
" Language: Runnel (.rnl)
"
" The rules of editors/emacs/runnel-mode.el: a line inside brackets goes one
" level deeper than the line of the innermost open bracket; a line starting
" with a closing bracket lines up with the line of its opening bracket; a
" line that goes on a statement (the previous line ended with a binary
" operator, `=` or `=>`, outside ( ) and [ ]) goes one level deeper still.

if exists('b:did_indent')
  finish
endif
let b:did_indent = 1

setlocal indentexpr=GetRunnelIndent(v:lnum)
setlocal indentkeys=0},0),0],!^F,o,O,e
setlocal autoindent
let b:undo_indent = 'setlocal indentexpr< indentkeys< autoindent<'

if exists('*GetRunnelIndent')
  finish
endif
let s:cpo_save = &cpo
set cpo&vim

" True where the character at (lnum, col) is in a string or a comment.
function! s:InStringOrComment(lnum, col) abort
  return synIDattr(synID(a:lnum, a:col, 0), 'name') =~# '\%(String\|Comment\|Todo\|Escape\|DeviceSpec\)'
endfunction

" A bracket that is code, not in a string or a comment. Only lines with a
" quote or a `#` can hold other brackets; asking the syntax is slow.
function! s:IsQuoted() abort
  return getline('.') =~# '["#]' && s:InStringOrComment(line('.'), col('.'))
endfunction

" The last line of code before lnum that starts in column 1. In a file
" indented by these rules no bracket is open before it, so searches for
" open brackets can stop there.
function! s:TopLevelLine(lnum) abort
  let lnum = a:lnum - 1
  while lnum > 1 && (indent(lnum) > 0 || getline(lnum) =~# '^\s*\%(#\|$\)')
    let lnum -= 1
  endwhile
  return max([lnum, 1])
endfunction

" The innermost bracket open before (lnum, col), as [lnum, col]; [0, 0]
" when there is none.
function! s:OpenBracket(lnum, col) abort
  let save = getcurpos()
  call cursor(a:lnum, a:col)
  let pos = searchpairpos('[[({]', '', '[])}]', 'bW', function('s:IsQuoted'),
        \ s:TopLevelLine(a:lnum), 500)
  call setpos('.', save)
  return pos
endfunction

" The column of the last code character of lnum (before a comment).
function! s:EndOfCode(lnum) abort
  let line = getline(a:lnum)
  let col = strlen(line)
  while col > 0 && (line[col - 1] =~# '\s'
        \ || synIDattr(synID(a:lnum, col, 0), 'name') =~# '\%(Comment\|Todo\)')
    let col -= 1
  endwhile
  return col
endfunction

function! GetRunnelIndent(lnum) abort
  let text = getline(a:lnum)
  let open = s:OpenBracket(a:lnum, 1)
  let closing = text =~# '^\s*[])}]'
  if open == [0, 0]
    let level = 0
  else
    let level = indent(open[0]) + (closing ? 0 : shiftwidth())
  endif
  if closing || (open != [0, 0] && getline(open[0])[open[1] - 1] !=# '{')
    return level
  endif
  " The previous line of code, skipping blank and comment-only ones.
  let prev = prevnonblank(a:lnum - 1)
  while prev > 0 && getline(prev) =~# '^\s*#'
    let prev = prevnonblank(prev - 1)
  endwhile
  if prev == 0
    return level
  endif
  let end = s:EndOfCode(prev)
  let code = strpart(getline(prev), 0, end)
  if end > 0 && code =~# '\%([-+*/%@=<>]\|\.\.\|\<and\|\<or\)$'
        \ && s:OpenBracket(prev, end) == open
    return level + shiftwidth()
  endif
  return level
endfunction

let &cpo = s:cpo_save
unlet s:cpo_save

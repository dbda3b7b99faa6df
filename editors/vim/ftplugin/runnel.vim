" Vim filetype plugin for Runnel (.rnl): comments and the project's layout
" (4-space indents). Set g:runnel_recommended_style = 0 to keep your own.
if exists('b:did_ftplugin')
  finish
endif
let b:did_ftplugin = 1

setlocal comments=:# commentstring=#\ %s
setlocal formatoptions-=t formatoptions+=croql
let b:undo_ftplugin = 'setlocal comments< commentstring< formatoptions<'

if get(g:, 'runnel_recommended_style', 1)
  setlocal expandtab shiftwidth=4 softtabstop=4 tabstop=8
  let b:undo_ftplugin .= ' expandtab< shiftwidth< softtabstop< tabstop<'
endif

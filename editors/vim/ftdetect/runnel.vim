" Runnel scripts: *.rnl
autocmd BufRead,BufNewFile *.rnl setfiletype runnel

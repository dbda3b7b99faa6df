#!/usr/bin/env bash
# Runs one editor test; editors/CMakeLists.txt registers each with CTest.
#   run_test.sh venv-setup   the editors Python environment (scripts/venv.sh editors)
#   run_test.sh vocabulary   editor keyword/builtin/dtype lists match their sources
#   run_test.sh textmate     the VS Code grammar (textmate_test.py)
#   run_test.sh vim          the Vim mode (vim_test.vim)
#   run_test.sh emacs        the Emacs mode (emacs_test.el)
# A missing tool fails the test with a message; `make setup` installs them.
set -euo pipefail
here="$(cd "$(dirname "$0")" && pwd)"

need() {
  command -v "$1" >/dev/null || {
    echo "editors test: '$1' not found; run \`make setup\` (scripts/setup.sh installs it)" >&2
    exit 1
  }
}

case "${1:-}" in
  venv-setup)
    bash "$here/../../scripts/venv.sh" editors
    ;;
  vocabulary)
    need node
    node "$here/sync_vocabulary.js" --check
    ;;
  textmate)
    python="$(bash "$here/../../scripts/venv.sh" editors)"
    "$python" "$here/textmate_test.py"
    ;;
  vim)
    need vim
    out="$(mktemp)"
    trap 'rm -f "$out"' EXIT
    # -es reads commands from stdin: give it none, so a failing script cannot hang.
    status=0
    RUNNEL_VIM_TEST_OUT="$out" timeout 120 vim -Nu NONE -i NONE -es -S "$here/vim_test.vim" \
      </dev/null || status=$?
    cat "$out"
    if [[ $status -ne 0 || $(tail -n 1 "$out") != *": ok" ]]; then
      echo "vim test failed (exit status $status)"
      exit 1
    fi
    ;;
  emacs)
    need emacs
    timeout 120 emacs --batch -Q -l "$here/emacs_test.el" 2>&1 | grep -v '^Indenting region'
    exit "${PIPESTATUS[0]}"
    ;;
  *)
    echo "usage: $0 venv-setup|vocabulary|textmate|vim|emacs" >&2
    exit 2
    ;;
esac

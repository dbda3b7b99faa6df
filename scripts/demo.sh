#!/usr/bin/env bash
# The `make run` demo: examples/fashion_mlp.rnl, a 784-256-128-10 network
# trained with Adam on Fashion-MNIST, with a progress bar and the test
# accuracy at the end. Extra arguments go to `runnel run`.
set -euo pipefail
build=${1:-build-release}
cd "$(dirname "$0")/.."
exec "$build/runnel" run examples/fashion_mlp.rnl "${@:2}"

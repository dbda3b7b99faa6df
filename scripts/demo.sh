#!/usr/bin/env bash
# The `make run` demo: the best end-to-end program Runnel has today.
set -euo pipefail
build=${1:-build-release}
exec "$build/fashion_softmax" "${@:2}"

#!/usr/bin/env bash
# Installs the Debian packages Runnel needs to build, test and run its demo.
# Idempotent: when everything is present it only checks, in well under a second.
set -euo pipefail

packages=(
  # toolchain; clang for the fuzz targets (libFuzzer is in libclang-rt)
  g++ cmake ninja-build ccache make clang-format clang libclang-rt-14-dev
  # build dependencies
  antlr4 libantlr4-runtime-dev libeigen3-dev libfmt-dev libabsl-dev
  libprotobuf-dev protobuf-compiler libgrpc++-dev protobuf-compiler-grpc
  libgtest-dev libgmock-dev zlib1g-dev libedit-dev libgoogle-perftools-dev
  nlohmann-json3-dev libpng-dev libdnnl-dev
  # data (Fashion-MNIST; the fortunes text for examples/charlm.rnl), reference
  # values in tests (python3-torch), graph and curve rendering, editor tests
  dataset-fashion-mnist fortunes python3 python3-numpy python3-torch libopenblas0-pthread
  graphviz gnuplot-nox vim emacs-nox neovim elpa-eglot
  # the network fault tests' packet loss and delay (tests/cluster/netns_test.py)
  iptables
  # the grammar test drives ANTLR's Java target
  default-jdk-headless
  # Python environments from PyPI (scripts/venv.sh: editor tests, benchmark peers)
  python3-venv
)
# The editor tests' vocabulary scripts run on Node.js (no npm packages); it
# may come from elsewhere, so install Debian's only when absent.
command -v node >/dev/null || packages+=(nodejs)

missing=()
for p in "${packages[@]}"; do
  dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "ok installed" || missing+=("$p")
done
((${#missing[@]} == 0)) && exit 0

echo "setup: installing ${missing[*]}"
sudo=()
if [[ $(id -u) -ne 0 ]]; then
  command -v sudo >/dev/null || { echo "setup: need root or sudo to install: ${missing[*]}" >&2; exit 1; }
  sudo=(sudo)
fi
export DEBIAN_FRONTEND=noninteractive
"${sudo[@]}" apt-get update -qq
"${sudo[@]}" apt-get install -y -qq --no-install-recommends "${missing[@]}"

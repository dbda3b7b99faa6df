#!/usr/bin/env bash
# Regenerates the pictures docs/pictures.md shows (docs/pictures/*.svg) with
# `runnel graph` and `runnel plot`. The curves come from two short trainings
# of the Fashion-MNIST MLP (3 epochs each, seconds on a laptop) that differ
# only in the learning rate. Needs graphviz, gnuplot and the dataset (all
# installed by scripts/setup.sh).
#
#   bash scripts/pictures.sh [BUILD_DIR]     (default: build)
set -euo pipefail
root="$(cd "$(dirname "$0")/.." && pwd)"
runnel="$root/${1:-build}/runnel"
out="$root/docs/pictures"
work="$(mktemp -d)"
trap 'rm -rf "$work"' EXIT
mkdir -p "$out"
cd "$root"

"$runnel" graph examples/fashion_mlp.rnl -o "$out/mlp_graph.svg"
"$runnel" graph examples/fashion_mlp.rnl --expand dense \
  --expand gradients/dense -o "$out/mlp_graph_expanded.svg"
"$runnel" graph examples/fashion_cnn.rnl -o "$out/cnn_graph.svg"
"$runnel" graph examples/model_parallel_lstm.rnl --devices cpu=2 --placed \
  -o "$out/model_parallel_placed.svg"

for lr in 0.001 0.0001; do
  "$runnel" run examples/fashion_mlp.rnl --arg epochs=3 --arg lr=$lr \
    --metrics "$work/lr=$lr.jsonl" >/dev/null 2>&1
done
# From the logs' directory, so that the legend shows their file names.
(cd "$work" && "$runnel" plot lr=0.001.jsonl lr=0.0001.jsonl \
  -o "$out/mlp_curves.svg")
ls -l "$out"

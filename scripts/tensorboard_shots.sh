#!/usr/bin/env bash
# Screenshots of a real TensorBoard showing what `runnel run --logdir`
# wrote: the scalars, the graph and the histograms dashboards, taken with
# headless Chromium (Debian's `chromium`, not installed by setup.sh: only
# this script needs it). Trains the Fashion-MNIST MLP for one epoch with
# --logdir, starts TensorBoard 2.21 (build/venv/tensorboard) on loopback
# over the log directory, and writes OUT/{scalars,graphs,histograms}.png.
#
#   bash scripts/tensorboard_shots.sh [BUILD_DIR] [OUT]
#       (defaults: build, build/tensorboard_shots)
set -euo pipefail
root="$(cd "$(dirname "$0")/.." && pwd)"
runnel="$root/${1:-build}/runnel"
out="${2:-$root/build/tensorboard_shots}"
command -v chromium >/dev/null || {
  echo "tensorboard_shots: needs Debian's chromium (apt-get install chromium)" >&2
  exit 1
}
python="$(bash "$root/scripts/venv.sh" tensorboard)"
work="$(mktemp -d)"
tb=""
trap '[ -n "$tb" ] && kill "$tb" 2>/dev/null; rm -rf "$work"' EXIT
mkdir -p "$out"
cd "$root"
"$runnel" run examples/fashion_mlp.rnl --arg epochs=1 \
  --logdir "$work/logs/fashion_mlp" --histograms-every 50 >/dev/null
"$(dirname "$python")/tensorboard" --logdir "$work/logs" --host 127.0.0.1 \
  --port 0 >"$work/tb.log" 2>&1 &
tb=$!
port=""
for _ in $(seq 120); do
  port="$(grep -o 'http://127.0.0.1:[0-9]*' "$work/tb.log" | head -1 |
    sed 's/.*://')" || true
  [ -n "$port" ] && break
  sleep 1
done
[ -n "$port" ] || { cat "$work/tb.log" >&2; exit 1; }
for dash in scalars graphs histograms; do
  chromium --headless --no-sandbox --disable-gpu --hide-scrollbars \
    --window-size=1400,1000 --virtual-time-budget=20000 \
    --screenshot="$out/$dash.png" "http://127.0.0.1:$port/#$dash" \
    >/dev/null 2>&1
  echo "$out/$dash.png"
done

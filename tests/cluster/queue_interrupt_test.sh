#!/usr/bin/env bash
# Ctrl-C to a worker whose run waits on a queue on a ps task ends the run at
# once (docs/queues.md): the worker's aborted partition tells the ps to
# abort the step (Executor::RunArgs::on_abort), and neither waits for the
# other.
#
#   queue_interrupt_test.sh RUNNEL
set -uo pipefail
runnel="$1"
here="$(cd "$(dirname "$0")" && pwd)"
work="$(mktemp -d)"
read -r p1 p2 < <(/usr/bin/python3 -c '
import socket
s = [socket.socket() for _ in range(2)]
for x in s: x.bind(("127.0.0.1", 0))
print(*[x.getsockname()[1] for x in s])')
echo "{\"ps\": [\"127.0.0.1:$p1\"], \"worker\": [\"127.0.0.1:$p2\"]}" > "$work/c.json"
"$runnel" server --cluster "$work/c.json" --job ps --task 0 --verbose \
  >"$work/ps.log" 2>&1 &
ps_pid=$!
trap 'kill -9 $ps_pid 2>/dev/null; rm -rf "$work"' EXIT
"$runnel" run "$here/queue_interrupt.rnl" --cluster "$work/c.json" --job worker \
  --task 0 >"$work/out.log" 2>"$work/err.log" &
worker=$!
# The run is under way and waiting once the ps runs a partition that has
# not ended (the dequeue's), which --verbose says: "step N: H runs", and
# "step N: H ended" when it ends.
waiting() {
  awk '/ runs$/ { open[$2 " " $3] = 1 }
       / ended/ { delete open[$2 " " $3] }
       END { n = 0; for (k in open) n++; exit n == 0 }' "$work/ps.log"
}
for _ in $(seq 1 300); do
  waiting && break
  sleep 0.1
done
if ! waiting; then
  echo "FAIL: no partition waits on the ps after 30 s; its log:"
  cat "$work/ps.log"
  exit 1
fi
kill -INT "$worker"
for _ in $(seq 1 50); do
  kill -0 "$worker" 2>/dev/null || break
  sleep 0.1
done
if kill -0 "$worker" 2>/dev/null; then
  echo "FAIL: the worker still runs 5 s after Ctrl-C"
  kill -9 "$worker"
  exit 1
fi
wait "$worker"
status=$?
if [[ $status -eq 0 ]] || ! grep -q "interrupted" "$work/err.log"; then
  echo "FAIL: status $status, stderr:"
  cat "$work/err.log"
  exit 1
fi
echo "ok: Ctrl-C ended the worker's wait on the ps queue (status $status)"

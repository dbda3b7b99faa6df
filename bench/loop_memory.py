#!/usr/bin/env python3
"""Issue 37: peak memory and step time of examples/charlm.rnl (an LSTM
trained with truncated back-propagation through `bptt` characters) with
and without recomputation through its time loop (`checkpoint = k`,
docs/training.md, Long sequences).

    python3 bench/loop_memory.py build/runnel [--bptt 64,512,4096] [--steps 2]

Each configuration runs twice, with 1 and with 1 + steps training steps
(one validation window each): the step time is the difference over
`steps`, so start-up and data loading drop out. Peak memory is the
process's maximum resident set (wait4's rusage), of the longer run.
"""
import argparse
import math
import os
import subprocess
import sys
import time

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))


def run(runnel, bptt, k, steps, units):
    cmd = [runnel, "run", os.path.join(ROOT, "examples", "charlm.rnl"),
           "--arg", f"bptt={bptt}", "--arg", f"steps={steps}",
           "--arg", "valid_windows=1", "--arg", f"checkpoint={k}",
           "--arg", f"units={units}"]
    start = time.monotonic()
    p = subprocess.Popen(cmd, stdout=subprocess.DEVNULL,
                         stderr=subprocess.PIPE, text=True)
    _, status, usage = os.wait4(p.pid, 0)
    seconds = time.monotonic() - start
    err = p.stderr.read()
    if status != 0:
        sys.exit(f"{' '.join(cmd)} failed:\n{err}")
    return seconds, usage.ru_maxrss * 1024


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("runnel")
    ap.add_argument("--bptt", default="64,512,4096")
    ap.add_argument("--steps", type=int, default=2)
    ap.add_argument("--units", type=int, default=256)
    a = ap.parse_args()
    print(f"| bptt | checkpoint | peak RSS (MB) | s / step | us / char |")
    print(f"|---:|---:|---:|---:|---:|")
    for bptt in [int(b) for b in a.bptt.split(",")]:
        for k in (0, max(1, round(math.sqrt(bptt)))):
            t1, _ = run(a.runnel, bptt, k, 1, a.units)
            t2, peak = run(a.runnel, bptt, k, 1 + a.steps, a.units)
            step = (t2 - t1) / a.steps
            chars = 32 * bptt
            print(f"| {bptt} | {k or 'none'} | {peak / 2**20:.0f} | "
                  f"{step:.3f} | {step / chars * 1e6:.2f} |", flush=True)


if __name__ == "__main__":
    main()

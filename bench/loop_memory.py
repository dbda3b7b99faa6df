#!/usr/bin/env python3
"""Issue 37: peak memory and step time of examples/charlm.rnl, an LSTM
language model trained with truncated back-propagation through `bptt`
characters, without a budget (the window's steps as one lstm_sequence
op), with recomputation through a loop over its characters (`checkpoint =
k`, the whole step of a character in the loop's body), and under a memory
budget (a loop over segments of 32 characters, each one lstm_sequence op
with its output layer and loss, which the budget's plan keeps or computes
again: docs/training.md, Long sequences), and of PyTorch 2.15's
equivalent in the same invocation: nn.LSTM over the same window (batch 32,
256 units, one-hot over 256 bytes, a dense layer, cross-entropy, Adam),
whole, or in segments of k steps each under torch.utils.checkpoint.

    /usr/bin/python3 bench/loop_memory.py BUILD_DIR [--bptt 64,512,4096]
        [--steps 3] [--threads 2] [--store-up-to 4096] [--budget 1G]
        [--rows none,k,budget] [--rounds 1]

A row per window size and way: `none` (every step's values kept), `k`
(checkpoint = the integer nearest sqrt(bptt), and PyTorch's
torch.utils.checkpoint over segments of as many steps) and `budget`
(Runnel with --memory-budget, the interval its planner picks; PyTorch has
no such option, so its columns are empty). `--rows ...,swap` adds Runnel
with `--arg swap_memory=1` (the loop's saved values kept in host memory,
swapped out of a GPU; on a machine without one it changes nothing), for a
session with a GPU; its PyTorch columns are empty too.

Runnel without recomputation is not run above --store-up-to characters
(what it keeps grows by about 0.25 MB per character of the window).

With `--rounds R` a window's rows run R times, alternating, and the table
gives medians; its last column is Runnel's median of per-round ratios of
the row's step time to the `none` row's (the issue's aim at 512
characters: the budget row within 1.4).
Every configuration runs in a process of its own: its peak memory is that
process's maximum resident set (wait4's rusage); its step time the mean
over the steps after the first (Runnel's from its --metrics lines, so
start-up, data loading and validation do not count). k is the integer
nearest sqrt(bptt). PyTorch gets, for every row, the faster of OpenMP's
passive and active wait policies (each set in the environment before torch
is imported), and the row names the one it kept.
"""
import json
import math
import os
import statistics
import subprocess
import sys
import tempfile
import time

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))

HERE = os.path.dirname(os.path.abspath(__file__))
EXAMPLE = os.path.join(os.path.dirname(HERE), "examples", "charlm.rnl")
BATCH, UNITS, VOCAB = 32, 256, 256


def arg(argv, name, fallback, kind=int):
    return kind(argv[argv.index(name) + 1]) if name in argv else fallback


def measured(cmd, env=None):
    """Runs cmd; returns (stdout, peak resident bytes)."""
    p = subprocess.Popen(cmd, stdout=subprocess.PIPE,
                         stderr=subprocess.DEVNULL, env=env, text=True)
    out = p.stdout.read()
    _, status, usage = os.wait4(p.pid, 0)
    if status != 0:
        sys.exit(f"failed ({status}): {' '.join(cmd)}")
    return out, usage.ru_maxrss * 1024


def runnel(build, bptt, k, steps, threads, budget=None, swap=False):
    with tempfile.TemporaryDirectory() as tmp:
        metrics = os.path.join(tmp, "m.jsonl")
        _, peak = measured(
            [os.path.join(build, "runnel"), "run", EXAMPLE, "--threads",
             str(threads), "--arg", f"bptt={bptt}", "--arg",
             f"steps={steps}", "--arg", "valid_windows=1", "--arg",
             f"checkpoint={k}", "--metrics", metrics] +
            (["--memory-budget", budget] if budget else []) +
            (["--arg", "swap_memory=1"] if swap else []))
        with open(metrics, encoding="utf-8") as fh:
            t = [json.loads(line)["time"] for line in fh]
    return (t[-1] - t[0]) / (len(t) - 1), peak


def torch_side(argv):
    """In the benchmark environment: train for --steps steps; print the
    mean seconds per step after the first."""
    import torch  # pylint: disable=import-outside-toplevel
    from torch.utils.checkpoint import checkpoint  # pylint: disable=import-outside-toplevel
    torch.set_num_threads(arg(argv, "--threads", 2))
    bptt, k, steps = arg(argv, "--bptt", 64), arg(argv, "--k", 0), arg(
        argv, "--steps", 3)
    torch.manual_seed(0)
    lstm = torch.nn.LSTM(VOCAB, UNITS, batch_first=True)
    dense = torch.nn.Linear(UNITS, VOCAB)
    opt = torch.optim.Adam(list(lstm.parameters()) + list(dense.parameters()),
                           lr=0.002)
    h = torch.zeros(1, BATCH, UNITS)
    c = torch.zeros(1, BATCH, UNITS)
    stamps = []
    for _ in range(steps):
        x = torch.randint(0, VOCAB, (BATCH, bptt))
        y = torch.randint(0, VOCAB, (BATCH, bptt))
        onehot = torch.nn.functional.one_hot(x, VOCAB).float()
        state = (h, c)
        if k > 0:
            outs = []
            for s in range(0, bptt, k):
                out, state = checkpoint(lstm, onehot[:, s:s + k], state,
                                        use_reentrant=False)
                outs.append(out)
            out = torch.cat(outs, 1)
        else:
            out, state = lstm(onehot, state)
        logits = dense(out.reshape(-1, UNITS))
        loss = torch.nn.functional.cross_entropy(logits, y.reshape(-1))
        opt.zero_grad()
        loss.backward()
        opt.step()
        h, c = state[0].detach(), state[1].detach()
        stamps.append(time.perf_counter())
    print(f"STEP {(stamps[-1] - stamps[0]) / (len(stamps) - 1)}")


def torch_run(peer, env, bptt, k, steps, threads):
    out, peak = measured(
        [peer.PYTHON, __file__, "--peer", "--bptt", str(bptt), "--k", str(k),
         "--steps", str(steps), "--threads", str(threads)], env=env)
    step = float(next(line.split()[1] for line in out.splitlines()
                      if line.startswith("STEP ")))
    return step, peak


def torch_best(peer, configs, bptt, k, steps, threads):
    """PyTorch at each configuration (OpenMP's wait policy passive or
    active, which on few cores decides whether its spinning threads fight
    OpenBLAS's): the fastest step, its peak and the policy."""
    best = None
    for config in configs:
        step, peak = torch_run(peer, config.environ(), bptt, k, steps,
                               threads)
        if best is None or step < best[0]:
            best = (step, peak, config.env.get("OMP_WAIT_POLICY", "unset"))
    return best


def main(argv):
    import peer  # pylint: disable=import-outside-toplevel
    build = argv[1]
    windows = [int(b) for b in arg(argv, "--bptt", "64,512,4096", str).split(",")]
    steps, threads = arg(argv, "--steps", 3), arg(argv, "--threads", 2)
    rounds = arg(argv, "--rounds", 1)
    configs = peer.torch_configs(threads)
    print(f"PyTorch: each row the fastest of {len(configs)} configurations "
          f"({'; '.join(c.describe(threads) for c in configs)}), its OpenMP "
          f"wait policy in the last column; batch {BATCH}, {UNITS} units; "
          f"{steps} steps, the first not timed; {rounds} round(s), the rows "
          f"of a window alternating, medians (the last column: Runnel's "
          f"median of per-round ratios to its `none` row)")
    print("| bptt | recomputation | Runnel peak (MB) | Runnel s/step | Runnel us/char "
          "| PyTorch peak (MB) | PyTorch s/step | PyTorch us/char | PyTorch OMP_WAIT_POLICY "
          "| Runnel / none |")
    print("|---:|---:|---:|---:|---:|---:|---:|---:|---|---:|")
    store_up_to = arg(argv, "--store-up-to", 4096)
    budget = arg(argv, "--budget", "1G", str)
    rows = arg(argv, "--rows", "none,k,budget", str).split(",")
    def interval(row, bptt):
        return max(1, round(math.sqrt(bptt))) if row == "k" else 0

    for bptt in windows:
        chars = BATCH * bptt
        ours = {row: [] for row in rows}    # (s/step, peak) per round
        theirs = {row: [] for row in rows}  # (s/step, peak, policy)
        for _ in range(rounds):
            for row in rows:
                k = interval(row, bptt)
                if row != "none" or bptt <= store_up_to:
                    ours[row].append(runnel(
                        build, bptt, k, steps, threads,
                        budget if row == "budget" else None, swap=row == "swap"))
                if row not in ("budget", "swap"):
                    theirs[row].append(torch_best(peer, configs, bptt, k,
                                                  steps, threads))
        for row in rows:
            k = interval(row, bptt)
            cells = "| not run | | "
            ratio = ""
            if ours[row]:
                rs = statistics.median(r[0] for r in ours[row])
                rp = statistics.median(r[1] for r in ours[row])
                cells = f"| {rp / 2**20:.0f} | {rs:.3f} | {rs / chars * 1e6:.2f} "
                if ours.get("none"):
                    ratio = f"{statistics.median(o[0] / n[0] for o, n in zip(ours[row], ours['none'])):.2f}"
            peer_cells = "| | | | "
            if theirs[row]:
                ts = statistics.median(t[0] for t in theirs[row])
                tp = statistics.median(t[1] for t in theirs[row])
                peer_cells = (f"| {tp / 2**20:.0f} | {ts:.3f} | "
                              f"{ts / chars * 1e6:.2f} | {theirs[row][-1][2]} ")
            label = {"none": "none", "k": str(k), "budget": f"--memory-budget {budget}",
                     "swap": "swap_memory"}[row]
            print(f"| {bptt} | {label} {cells}{peer_cells}| {ratio} |", flush=True)


if __name__ == "__main__":
    if "--peer" in sys.argv:
        torch_side(sys.argv)
    else:
        main(sys.argv)

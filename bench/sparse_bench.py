"""Sparse embedding steps against table size (docs/sparse.md): a batch of
128 ids looks up 64-dim rows of a table of 10^5 or 10^7 rows (25.6 MB or
2.56 GB) and SGD updates the rows looked up (bench/sparse_step.rnl).

Runnel runs it locally, and under `runnel cluster` with the table sharded
over 1 and 2 parameter-server tasks on loopback (one worker). Beside it:
the same step with the gradient densified and the whole table updated, as
without sparse updates; and PyTorch's nn.Embedding(sparse=True) and
(sparse=False) in the same run (bench/sparse_peer.py), at its faster
OpenMP wait policy. Alternating rounds; medians and the median of
per-round ratios. The aim (the TensorFlow paper's): a sparse step costs
the same within 20% for both table sizes, while the dense update grows
with the table.

    /usr/bin/python3 bench/sparse_bench.py BUILD_DIR [--threads 2] [--rounds 3]
"""
import json
import os
import statistics
import subprocess
import sys
import tempfile

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import peer  # noqa: E402  pylint: disable=wrong-import-position

HERE = os.path.dirname(os.path.abspath(__file__))
STEP = os.path.join(HERE, "sparse_step.rnl")
PEER = os.path.join(HERE, "sparse_peer.py")
DIM, BATCH = 64, 128
SIZES = (10**5, 10**7)


def steps_for(dense, vocab):
    if not dense:
        return 200
    return 40 if vocab <= 10**5 else 4


def runnel_step(runnel, threads, vocab, dense=False, ps=0):
    """Seconds per step, from the metrics log's two reports."""
    steps = steps_for(dense, vocab)
    args = ["--arg", f"vocab={vocab}", "--arg", f"dim={DIM}", "--arg",
            f"batch={BATCH}", "--arg", f"steps={steps}", "--arg",
            f"dense={'true' if dense else 'false'}", "--arg",
            f"shards={max(ps, 1)}"]
    with tempfile.TemporaryDirectory() as tmp:
        metrics = os.path.join(tmp, "m.jsonl")
        if ps == 0:
            cmd = [runnel, "run", STEP, "--threads", str(threads)]
        else:
            cmd = [runnel, "cluster", STEP, "--ps", str(ps), "--workers", "1",
                   "--threads", str(threads)]
        subprocess.run(cmd + ["--metrics", metrics] + args, check=True,
                       stdout=subprocess.DEVNULL, timeout=900)
        times = {}
        with open(metrics, encoding="utf-8") as f:
            for line in f:
                r = json.loads(line)
                if "phase" in r:
                    times[r["phase"]] = r["time"]
        return (times[1] - times[0]) / steps


def peer_step(threads, vocab, dense, config):
    p = subprocess.run([peer.PYTHON, PEER, str(vocab), str(DIM), str(BATCH),
                        str(steps_for(dense, vocab)), str(threads),
                        "dense" if dense else "sparse"],
                       env=config.environ(), check=True, capture_output=True,
                       text=True, timeout=900)
    return peer.parse_results(p.stdout)["step"]


def line(name, values):
    return (f"  {name}: {statistics.median(values) * 1e3:.3f} ms "
            f"(median; {min(values) * 1e3:.3f}-{max(values) * 1e3:.3f})")


def main():
    runnel = os.path.join(sys.argv[1], "runnel")
    threads = peer.threads_arg(sys.argv, 2)
    rounds = peer.int_arg(sys.argv, "--rounds", 3)
    configs = peer.peer_configs(threads)
    trial = {c.describe(threads): min(peer_step(threads, 10**5, False, c)
                                      for _ in range(2)) for c in configs}
    best = min(configs, key=lambda c: trial[c.describe(threads)])
    print(f"sparse embedding step (batch {BATCH}, dim {DIM}, sgd; "
          f"{threads} thread(s) per process, {rounds} alternating rounds)")
    for label, s in trial.items():
        print(f"  peer trial: {label}: {s * 1e3:.3f} ms")
    kinds = ("local", "1 ps", "2 ps", "dense", "torch sparse", "torch dense")
    t = {(k, v): [] for k in kinds for v in SIZES}
    for rnd in range(rounds):
        order = (0, 1) if rnd % 2 == 0 else (1, 0)
        for vocab in SIZES:
            for side in order:
                if side == 0:
                    t["local", vocab].append(runnel_step(runnel, threads, vocab))
                    t["dense", vocab].append(
                        runnel_step(runnel, threads, vocab, dense=True))
                    for ps in (1, 2):
                        t[f"{ps} ps", vocab].append(
                            runnel_step(runnel, threads, vocab, ps=ps))
                else:
                    t["torch sparse", vocab].append(
                        peer_step(threads, vocab, False, best))
                    t["torch dense", vocab].append(
                        peer_step(threads, vocab, True, best))
        print(f"  round {rnd + 1}: " + ", ".join(
            f"{k} {v:.0e} {t[k, v][-1] * 1e3:.3f} ms" for k in kinds
            for v in SIZES), flush=True)

    print(f"PyTorch configuration: {best.describe(threads)}")
    for k in kinds:
        for v in SIZES:
            print(line(f"{k}, {v:.0e} rows", t[k, v]))
    print("growth from 10^5 to 10^7 rows (median of per-round ratios; aim "
          "for sparse: within 20%):")
    for k in kinds:
        g = [b / a for a, b in zip(t[k, SIZES[0]], t[k, SIZES[1]])]
        print(f"  {k}: x{statistics.median(g):.2f}")
    for v in SIZES:
        r = [a / b for a, b in zip(t["local", v], t["torch sparse", v])]
        print(f"Runnel local sparse vs PyTorch sparse, {v:.0e} rows: ratio "
              f"{statistics.median(r):.2f} (median of per-round ratios, "
              f"{min(r):.2f}-{max(r):.2f}; below 1 Runnel is faster)")
    flops = 4.0 * BATCH * DIM
    print(f"floor: {flops:.0f} FLOP and {2 * BATCH * DIM * 4 / 1e3:.0f} kB "
          "of rows a step: microseconds; the step is overhead, not work")


if __name__ == "__main__":
    main()

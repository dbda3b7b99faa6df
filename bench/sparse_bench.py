"""Sparse embedding steps against table size (docs/sparse.md): a batch of
128 ids looks up 64-dim rows of a table of 10^5 or 10^7 rows (25.6 MB or
2.56 GB) and SGD updates the rows looked up (bench/sparse_step.rnl).

Runnel runs it locally, and under `runnel cluster` with the table sharded
over 1 and 2 parameter-server tasks on loopback (one worker). Beside it:
the same step with the gradient densified and the whole table updated, as
without sparse updates. The peers (bench/sparse_peer.py) run both steps:
PyTorch with nn.Embedding(sparse=True) and (sparse=False), TensorFlow with
a tf.Variable table, tf.gather under a GradientTape in a tf.function (with
and without XLA) and the IndexedSlices gradient applied with scatter_sub,
or densified. bench/peer.py tunes each peer on the sparse step (the dense
one is memory-bound and slow: first configurations), alternates rounds and
reports medians and the median of per-round ratios against the best peer;
the growth from 10^5 to 10^7 rows follows. The aim (the TensorFlow paper's): a
sparse step costs the same within 20% for both table sizes, while the
dense update grows with the table.

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
DIM, BATCH, LR = 64, 128, 0.1
SIZES = (10**5, 10**7)


def steps_for(dense, vocab):
    if not dense:
        return 200
    return 40 if vocab <= 10**5 else 4


def workload(dense, vocab):
    """The RESULT name of a step: sparse_1e5, dense_1e7, ..."""
    return f"{'dense' if dense else 'sparse'}_{vocab:.0e}".replace("+0", "")


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


def main():
    runnel = os.path.join(sys.argv[1], "runnel")
    threads = peer.threads_arg(sys.argv, 2)
    rounds = peer.int_arg(sys.argv, "--rounds", 3)
    sharded = {(ps, v): [] for ps in (1, 2) for v in SIZES}

    def runnel_side(_):
        """Local sparse steps, for the comparison; the sharded ones,
        Runnel's alone, are kept for the growth lines."""
        out = {}
        for vocab in SIZES:
            out[workload(False, vocab)] = runnel_step(runnel, threads, vocab)
            for ps in (1, 2):
                sharded[ps, vocab].append(
                    runnel_step(runnel, threads, vocab, ps=ps))
        return out

    def dense_side(_):
        return {workload(True, v): runnel_step(runnel, threads, v, dense=True)
                for v in SIZES}

    script = [PEER, "--threads", str(threads)]
    sparse_peers = [peer.torch_peer(script + ["--peer"], threads),
                    peer.tf_peer(script + ["--peer-tf"], threads,
                                 [("tf.function", ()), ("XLA", ("--xla",))])]
    # The dense steps are memory-bound and take seconds at 10^7 rows:
    # each peer runs at its first configuration, untuned.
    dense_peers = [peer.Peer(p.name, p.side + ["--dense"], p.configs[:1])
                   for p in sparse_peers]

    def workloads(dense):
        kind = "dense" if dense else "sparse"
        return {workload(dense, v): f"{kind} step, {v:.0e} rows"
                for v in SIZES}
    title = f"sparse embedding step (batch {BATCH}, dim {DIM}, sgd)"
    ours, theirs = peer.compare(title, threads, runnel_side, sparse_peers,
                                rounds, workloads(False),
                                trial_args=["--trial"])
    ours_d, theirs_d = peer.compare(title + ", dense update", threads,
                                    dense_side, dense_peers, rounds,
                                    workloads(True))
    ours.update(ours_d)
    for name, t in theirs_d.items():
        theirs[name].update(t)

    def growth(label, small, large):
        g = [b / a for a, b in zip(small, large)]
        print(f"  {label}: x{statistics.median(g):.2f}")
    print("growth from 10^5 to 10^7 rows (median of per-round ratios; aim "
          "for sparse: within 20%):")
    for dense in (False, True):
        small, large = (workload(dense, v) for v in SIZES)
        kind = "dense" if dense else "sparse"
        growth(f"Runnel local {kind}", ours[small], ours[large])
        for name, t in theirs.items():
            growth(f"{name} {kind}", t[small], t[large])
    for ps in (1, 2):
        growth(f"Runnel sparse, table on {ps} ps", *(sharded[ps, v]
                                                     for v in SIZES))
        for v in SIZES:
            print(f"    {v:.0e} rows: "
                  f"{peer.fmt_time(statistics.median(sharded[ps, v]))}"
                  " (median)")
    flops = 4.0 * BATCH * DIM
    print(f"floor: {flops:.0f} FLOP and {2 * BATCH * DIM * 4 / 1e3:.0f} kB "
          "of rows a sparse step: microseconds; the step is overhead, not "
          "work")


if __name__ == "__main__":
    main()

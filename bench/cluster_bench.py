"""Cluster benchmarks (docs/cluster.md), loopback only, with PyTorch's
distributed packages as the peer in the same invocation, alternating
rounds; medians and the median of per-round ratios:

  1. null step: the latency of a trivial step (add 1 to a scalar on the
     parameter server) with 1, 2, 4 and 8 worker processes on one ps.
     Peer: torch.distributed.rpc's rpc_sync to a ps process doing the same.
     The TensorFlow paper reports 1.8 ms with one worker.
  2. data-parallel MLP: steps per second of the Fashion MLP's Adam step
     (batch 128 per worker), all workers together, with 1 and 2 workers:
     Runnel asynchronous and synchronous (replicas = workers), against
     DistributedDataParallel over gloo (synchronous). The floor is the
     step's FLOPs at the machine's GEMM peak.
  3. backup workers: 4 synchronous workers where, each step, one of them
     (by the global step) sleeps twice a step's time first (3x slower);
     global steps per second with replicas = 4 (no backup) against
     replicas = 3 (one backup). Aim: 15% more.

Every process gets --threads (default 1: the tasks share this machine's
cores); PyTorch's processes get the same torch.set_num_threads and its
faster OpenMP wait policy of a trial.

    /usr/bin/python3 bench/cluster_bench.py BUILD_DIR [--threads 1] [--rounds 3]
        [--only null,mlp,backup]   (the sections to run; default all)
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
STEP = os.path.join(HERE, "cluster_step.rnl")
PEER = os.path.join(HERE, "cluster_peer.py")
MLP_FLOPS = 6.0 * 128 * (784 * 256 + 256 * 128 + 128 * 10)


def runnel_cluster(runnel, workers, threads, args, ps=1):
    """{worker: (t0, t1, g0, g1)} from the workers' metrics lines."""
    with tempfile.TemporaryDirectory() as tmp:
        metrics = os.path.join(tmp, "m.jsonl")
        subprocess.run([runnel, "cluster", STEP, "--ps", str(ps), "--workers",
                        str(workers), "--threads", str(threads), "--metrics",
                        metrics] + args, check=True, stdout=subprocess.DEVNULL,
                       stderr=subprocess.DEVNULL, timeout=600)
        out = {}
        with open(metrics, encoding="utf-8") as f:
            for line in f:
                r = json.loads(line)
                t = out.setdefault(r["worker"], [0, 0, 0, 0])
                t[r["phase"]] = r["time"]
                t[2 + r["phase"]] = r["global"]
        return out


def peer_run(what, workers, steps, threads, config):
    p = subprocess.run([peer.PYTHON, PEER, what, str(workers), str(steps),
                        str(threads)], env=config.environ(), check=True,
                       capture_output=True, text=True, timeout=600)
    return [float(l.split()[2]) for l in p.stdout.splitlines()
            if l.startswith("RESULT ")]


def ratio_line(name, ours, theirs, unit, lower_better=True):
    r = [a / b if lower_better else b / a for a, b in zip(ours, theirs)]
    return (f"{name}: Runnel {statistics.median(ours):.4g} {unit}, PyTorch "
            f"{statistics.median(theirs):.4g} {unit} (medians); ratio "
            f"{statistics.median(r):.3g} (median of per-round ratios, "
            f"{min(r):.3g}-{max(r):.3g}; below 1 Runnel is faster)")


def main():
    runnel = os.path.join(sys.argv[1], "runnel")
    threads = peer.threads_arg(sys.argv, 1)
    rounds = peer.int_arg(sys.argv, "--rounds", 3)
    only = "null,mlp,backup"
    if "--only" in sys.argv[:-1]:
        only = sys.argv[sys.argv.index("--only") + 1]
    only = set(only.split(","))
    configs = peer.peer_configs(threads)
    # The peer's faster wait policy, on a short DDP trial.
    trial = {c.describe(threads): statistics.median(
        peer_run("ddp", 2, 40, threads, c)) for c in configs}
    best = max(configs, key=lambda c: trial[c.describe(threads)])
    print(f"cluster benchmarks ({threads} thread(s) per process, {rounds} "
          "alternating rounds, loopback)")
    for label, rate in trial.items():
        print(f"  peer trial: {label}: DDP {rate:.1f} steps/s per worker")
    peak = peer.GemmPeak(os.cpu_count() or 2, sys.argv[1])

    null = {w: ([], []) for w in ((1, 2, 4, 8) if "null" in only else ())}
    mlp = {w: ([], [], []) for w in ((1, 2) if "mlp" in only else ())}
    # (async, sync, ddp)
    backup = ([], [])
    for rnd in range(rounds):
        peak.measure()
        order = (0, 1) if rnd % 2 == 0 else (1, 0)
        for w in null:
            for side in order:
                if side == 0:
                    r = runnel_cluster(runnel, w, threads,
                                       ["--arg", "work=null", "--arg",
                                        "steps=500"])
                    null[w][0].append(statistics.median(
                        (t1 - t0) / 500 for t0, t1, _, _ in r.values()))
                else:
                    null[w][1].append(statistics.median(
                        peer_run("null", w, 500, threads, best)))
        for w in mlp:
            for side in order:
                if side == 0:
                    for k, extra in ((0, []), (1, ["--arg", f"replicas={w}"])):
                        r = runnel_cluster(runnel, w, threads,
                                           ["--arg", "work=mlp", "--arg",
                                            "steps=150"] + extra)
                        mlp[w][k].append(sum(150 / (t1 - t0)
                                             for t0, t1, _, _ in r.values()))
                else:
                    mlp[w][2].append(sum(peer_run("ddp", w, 150, threads,
                                                  best)))
        if "backup" not in only:
            print(f"  round {rnd + 1} done", flush=True)
            continue
        # Backups: a step's time from the plain synchronous run.
        base = runnel_cluster(runnel, 4, threads, ["--arg", "work=mlp",
                                                   "--arg", "steps=60",
                                                   "--arg", "replicas=4"])
        t0, t1, g0, g1 = base[0]
        straggle = 2 * (t1 - t0) / max(g1 - g0, 1)
        for k, m in enumerate((4, 3)):
            r = runnel_cluster(runnel, 4, threads,
                               ["--arg", "work=mlp", "--arg", "steps=60",
                                "--arg", f"replicas={m}", "--arg",
                                f"straggle={straggle:.4f}"])
            t0, t1, g0, g1 = r[0]
            backup[k].append((g1 - g0) / (t1 - t0))
        print(f"  round {rnd + 1}: null 1 worker Runnel "
              f"{null[1][0][-1] * 1e3:.3f} ms, PyTorch {null[1][1][-1] * 1e3:.3f}"
              f" ms; MLP 2 workers async {mlp[2][0][-1]:.0f}, sync "
              f"{mlp[2][1][-1]:.0f}, DDP {mlp[2][2][-1]:.0f} steps/s; backup "
              f"{backup[0][-1]:.1f} -> {backup[1][-1]:.1f} global steps/s "
              f"(straggler sleeps {straggle * 1e3:.1f} ms)", flush=True)

    print(f"PyTorch configuration: {best.describe(threads)}")
    print(peak.describe(rounds))
    for w, (ours, theirs) in null.items():
        print(ratio_line(f"null step, {w} worker(s) on 1 ps",
                         [x * 1e3 for x in ours], [x * 1e3 for x in theirs],
                         "ms"))
    floor = peak.gflops() * 1e9 / MLP_FLOPS
    for w, (asy, syn, ddp) in mlp.items():
        print(ratio_line(f"MLP, {w} worker(s), asynchronous vs DDP", asy, ddp,
                         "steps/s", lower_better=False))
        print(ratio_line(f"MLP, {w} worker(s), synchronous vs DDP", syn, ddp,
                         "steps/s", lower_better=False))
    print(f"  floor: {floor:.0f} steps/s ({MLP_FLOPS / 1e6:.0f} MFLOP a step "
          f"at {peak.gflops():.0f} GFLOP/s, the whole machine)")
    if "backup" not in only:
        return
    gains = [b / a for a, b in zip(*backup)]
    print(f"backup workers (4 workers, one 3x straggler a step): replicas=4 "
          f"{statistics.median(backup[0]):.1f}, replicas=3 "
          f"{statistics.median(backup[1]):.1f} global steps/s (medians); "
          f"gain {100 * (statistics.median(gains) - 1):+.0f}% (median of "
          f"per-round gains; aim +15%)")


if __name__ == "__main__":
    main()

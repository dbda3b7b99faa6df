"""Cluster benchmarks (docs/cluster.md), loopback only, against TensorFlow
2.21 and PyTorch 2.15 in the same invocation through peer.compare:
alternating rounds, each side's median and the median of the per-round
ratios against the best peer, every row recorded for docs/performance.md.
Times are seconds per step (lower is better).

  1. null step: a trivial step (add 1 to a scalar on the parameter server)
     with 1, 2, 4 and 8 worker processes on one ps; seconds per step, the
     median of the workers. PyTorch: torch.distributed.rpc's rpc_sync to a
     ps process (cluster_peer.py). TensorFlow: a tf.function whose
     assign_add runs on a variable on /job:ps/task:0 of a
     tf.distribute.Server, from clients connected with
     connect_to_cluster (tf_cluster_peer.py). The TensorFlow paper
     reports 1.8 ms with one worker.
  2. data-parallel MLP: the Fashion MLP's Adam step (784-256-128-10, batch
     128 per worker) with 1 and 2 workers; seconds per worker step, all
     workers together. Asynchronous: Runnel (replicas 0) against
     TensorFlow's ParameterServerStrategy with a ClusterCoordinator and
     against PyTorch's DistributedDataParallel (gloo; PyTorch has no
     asynchronous parameter server). Synchronous: Runnel (replicas =
     workers) against MultiWorkerMirroredStrategy and DDP, twice: through
     the parameter server (reduce = "ps") and by all-reduce between the
     workers without one (reduce = "all", --ps 0). The floor is
     the step's FLOPs at the one-thread GEMM peak, one core per worker.
  3. replicated parameter servers: the asynchronous MLP with 2 workers on
     2 ps tasks, each ps with a backup (--ps-replicas 2, docs/cluster.md),
     against TensorFlow's ParameterServerStrategy on 2 ps (which has no
     replicas: a lost ps is a reload from a checkpoint); Runnel's
     unreplicated run on 2 ps alternates with it, and the cost of
     replication is the median of the per-round ratios.
  4. backup workers, Runnel only (neither peer has them): 4 synchronous
     workers where, each step, one of them (by the global step) sleeps
     twice a step's time first (3x slower); seconds per global step with
     replicas = 4 (no backup) against replicas = 3 (one backup). Aim: 15%
     faster.

Every process gets --threads (default 1: the tasks share this machine's
cores). Each peer is tuned on short trials: PyTorch's OpenMP wait policy;
TensorFlow's inter-op threads, steps per scheduled function (1 or 10) for
ParameterServerStrategy, and the collective (RING, AUTO) and steps per
tf.function call for MultiWorkerMirroredStrategy.

    /usr/bin/python3 bench/cluster_bench.py BUILD_DIR [--threads 1] [--rounds 3]
        [--only null,mlp,allreduce,replicas,backup]   (the sections; default all;
         mlp is async and sync, each of which may be named alone)
"""
import json
import os
import statistics
import subprocess
import sys
import tempfile

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import cluster_peer  # noqa: E402  pylint: disable=wrong-import-position
import peer  # noqa: E402  pylint: disable=wrong-import-position

HERE = os.path.dirname(os.path.abspath(__file__))
STEP = os.path.join(HERE, "cluster_step.rnl")
MLP_FLOPS = 6.0 * 128 * (784 * 256 + 256 * 128 + 128 * 10)
TITLE = "cluster"


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


def runnel_workload(runnel, threads, name, ps=1, ps_replicas=1, reduce="ps"):
    """Runnel's seconds per step (null) or per worker step (async, sync);
    reduce="all": synchronous by all-reduce, without parameter servers."""
    kind, workers = cluster_peer.split_workload(name)
    steps = cluster_peer.STEPS[kind]
    args = ["--arg", f"steps={steps}", "--arg",
            "work=null" if kind == "null" else "work=mlp"]
    if kind == "sync":
        args += ["--arg", f"replicas={workers}"]
    if reduce == "all":
        args += ["--arg", "reduce=all"]
        ps = 0
    if ps_replicas > 1:
        args += ["--ps-replicas", str(ps_replicas)]
    r = runnel_cluster(runnel, workers, threads, args, ps=ps)
    if kind == "null":
        return statistics.median((t1 - t0) / steps
                                 for t0, t1, _, _ in r.values())
    return cluster_peer.per_worker_step([steps / (t1 - t0)
                                         for t0, t1, _, _ in r.values()])


def section(build, threads, rounds, title, workloads, tf_variants,
            reduce="ps"):
    """compare() of Runnel against both peers on `workloads` ({name:
    description}, names as cluster_peer.py takes them); `reduce` as
    runnel_workload takes it."""
    runnel = os.path.join(build, "runnel")
    only = ["--only", ",".join(workloads), "--threads", str(threads)]
    peers = [peer.torch_peer([os.path.join(HERE, "cluster_peer.py")] + only,
                             threads),
             peer.tf_peer([os.path.join(HERE, "tf_cluster_peer.py")] + only,
                          threads, tf_variants)]
    flops = None
    if "null1" not in workloads:
        flops = {w: MLP_FLOPS / cluster_peer.split_workload(w)[1]
                 for w in workloads}
    peer.compare(f"{TITLE}: {title}", threads,
                 lambda _: {w: runnel_workload(runnel, threads, w,
                                               reduce=reduce)
                            for w in workloads},
                 peers, rounds, workloads, trial_args=["--trial"],
                 flops=flops, build_dir=build)


def replicated(build, threads, rounds):
    """The asynchronous MLP on 2 ps with a backup each, against
    ParameterServerStrategy on 2 ps; Runnel unreplicated beside it."""
    runnel = os.path.join(build, "runnel")
    plain = []

    def ours(_):
        plain.append(runnel_workload(runnel, threads, "async2", ps=2))
        return {"async2": runnel_workload(runnel, threads, "async2", ps=2,
                                          ps_replicas=2)}
    only = ["--only", "async2", "--threads", str(threads), "--ps", "2"]
    tf = peer.tf_peer([os.path.join(HERE, "tf_cluster_peer.py")] + only,
                      threads, (("", ()), ("10 steps per scheduled function",
                                           ("--inner", "10"))))
    replicated_s, _ = peer.compare(
        f"{TITLE}: replicated parameter servers", threads, ours, [tf], rounds,
        {"async2": "MLP, 2 workers, asynchronous, 2 ps each with a backup "
                   "(TensorFlow: ParameterServerStrategy, 2 ps, no backups)"},
        trial_args=["--trial"], flops={"async2": MLP_FLOPS / 2},
        build_dir=build)
    cost = statistics.median(
        r / p for r, p in zip(replicated_s["async2"], plain))
    note = (f"unreplicated on 2 ps {peer.fmt_time(statistics.median(plain))}"
            f" a worker step; replication costs {100 * (cost - 1):+.0f}% "
            "(median of per-round ratios)")
    print(f"replicated parameter servers: {note}")
    peer.record(TITLE, "MLP, 2 workers, asynchronous, 2 ps, unreplicated "
                "(beside the replicated row)", statistics.median(plain), {},
                None, threads=threads, unit="worker step", note=note)


def backup(runnel, threads, rounds):
    """Seconds per global step, 4 synchronous workers with a 3x straggler
    each step, replicas = 4 against 3; printed and recorded."""
    times = ([], [])
    for rnd in range(rounds):
        # A step's time from the plain synchronous run.
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
            times[k].append((t1 - t0) / (g1 - g0))
        print(f"  round {rnd + 1}: replicas=4 {peer.fmt_time(times[0][-1])}, "
              f"replicas=3 {peer.fmt_time(times[1][-1])} a global step "
              f"(straggler sleeps {peer.fmt_time(straggle)})", flush=True)
    plain, backed = (statistics.median(t) for t in times)
    gain = statistics.median(a / b for a, b in zip(*times)) - 1
    note = (f"Runnel only; replicas=4 (no backup) {peer.fmt_time(plain)}, "
            f"gain {100 * gain:+.0f}% (median of per-round gains; aim +15%)")
    print(f"backup workers (4 workers, one 3x straggler a step): replicas=3 "
          f"{peer.fmt_time(backed)} a global step; {note}")
    peer.record(TITLE, "backup workers, 4 workers, replicas 3 of 4, one 3x "
                "straggler a step", backed, {}, None, threads=threads,
                unit="global step", note=note)


def main(argv):
    build = argv[0]
    threads = peer.threads_arg(argv, 1)
    rounds = peer.int_arg(argv, "--rounds", 3)
    only = set(argv[argv.index("--only") + 1].split(",")
               if "--only" in argv[:-1] else
               ("null", "mlp", "allreduce", "replicas", "backup"))
    print(f"cluster benchmarks ({threads} thread(s) per process, {rounds} "
          "alternating rounds, loopback)")
    if "null" in only:
        section(build, threads, rounds, "null step", {
            f"null{w}": f"null step, {w} worker(s) on 1 ps"
            for w in (1, 2, 4, 8)}, (("", ()),))
    if only & {"mlp", "async"}:
        section(build, threads, rounds, "asynchronous MLP", {
            f"async{w}": f"MLP, {w} worker(s), asynchronous (TensorFlow: "
            "ParameterServerStrategy; PyTorch: DDP, synchronous)"
            for w in (1, 2)},
            (("", ()), ("10 steps per scheduled function", ("--inner", "10"))))
    if only & {"mlp", "sync"}:
        section(build, threads, rounds, "synchronous MLP", {
            f"sync{w}": f"MLP, {w} worker(s), synchronous (TensorFlow: "
            "MultiWorkerMirroredStrategy; PyTorch: DDP)" for w in (1, 2)},
            (("collective RING", ("--collective", "RING")),
             ("collective AUTO", ("--collective", "AUTO")),
             ("collective RING, 10 steps per call",
              ("--collective", "RING", "--inner", "10"))))
    if "allreduce" in only:
        section(build, threads, rounds, "synchronous MLP, all-reduce", {
            f"sync{w}": f"MLP, {w} worker(s), synchronous, Runnel by "
            "all-reduce without a ps (reduce = \"all\"; TensorFlow: "
            "MultiWorkerMirroredStrategy; PyTorch: DDP)" for w in (1, 2)},
            (("collective RING", ("--collective", "RING")),
             ("collective AUTO", ("--collective", "AUTO")),
             ("collective RING, 10 steps per call",
              ("--collective", "RING", "--inner", "10"))), reduce="all")
    if "replicas" in only:
        replicated(build, threads, rounds)
    if "backup" in only:
        backup(os.path.join(build, "runnel"), threads, rounds)


if __name__ == "__main__":
    main(sys.argv[1:])

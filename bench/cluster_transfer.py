"""Tensor transfer between tasks (docs/cluster.md), loopback: a worker
fetches an MB-megabyte f32 variable from a parameter server and sums it,
STEPS times; the time of a sum of a local variable of that size is taken
off, leaving the transfer. Peer: torch.distributed.rpc (TensorPipe)
fetching a tensor of that size with rpc_sync, in the same invocation,
alternating rounds; medians and the median of per-round ratios.

    /usr/bin/python3 bench/cluster_transfer.py BUILD_DIR [--mb 64]
        [--steps 20] [--threads 1] [--rounds 3]
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
PEER = os.path.join(HERE, "cluster_peer.py")
SCRIPT = """
let me = task()
let n = arg("mb", 64) * 262144
let steps = arg("steps", 20)
device arg("where", "/job:ps/task:0") { var big = zeros([n]) }
let s = sum(big)
for i in 0..3 { run s }
report(worker = me.index, phase = 0)
for i in 0..steps { run s }
report(worker = me.index, phase = 1)
"""


def runnel_seconds(runnel, mb, steps, threads, where):
    """Seconds per fetch-and-sum (or sum, where the variable is local)."""
    with tempfile.TemporaryDirectory() as tmp:
        script = os.path.join(tmp, "transfer.rnl")
        with open(script, "w", encoding="utf-8") as f:
            f.write(SCRIPT)
        metrics = os.path.join(tmp, "m.jsonl")
        subprocess.run([runnel, "cluster", script, "--ps", "1", "--workers",
                        "1", "--threads", str(threads), "--metrics", metrics,
                        "--arg", f"mb={mb}", "--arg", f"steps={steps}",
                        "--arg", f"where={where}"], check=True,
                       stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL,
                       timeout=600)
        times = {}
        with open(metrics, encoding="utf-8") as f:
            for line in f:
                r = json.loads(line)
                times[r["phase"]] = r["time"]
        return (times[1] - times[0]) / steps


def main():
    runnel = os.path.join(sys.argv[1], "runnel")
    threads = peer.threads_arg(sys.argv, 1)
    rounds = peer.int_arg(sys.argv, "--rounds", 3)
    mb = peer.int_arg(sys.argv, "--mb", 64)
    steps = peer.int_arg(sys.argv, "--steps", 20)
    config = peer.peer_configs(threads)[0]
    ours, theirs = [], []
    for rnd in range(rounds):
        for side in ((0, 1) if rnd % 2 == 0 else (1, 0)):
            if side == 0:
                remote = runnel_seconds(runnel, mb, steps, threads,
                                        "/job:ps/task:0")
                local = runnel_seconds(runnel, mb, steps, threads,
                                       "/job:worker/task:0")
                ours.append(remote - local)
            else:
                p = subprocess.run(
                    [peer.PYTHON, PEER, "fetch", str(mb), str(steps),
                     str(threads)], env=config.environ(), check=True,
                    capture_output=True, text=True, timeout=600)
                r = {l.split()[1]: float(l.split()[2])
                     for l in p.stdout.splitlines() if l.startswith("RESULT ")}
                theirs.append(r["fetch"] - r["sum"])
        print(f"  round {rnd + 1}: {mb} MB worker<-ps: Runnel "
              f"{ours[-1] * 1e3:.1f} ms, PyTorch {theirs[-1] * 1e3:.1f} ms",
              flush=True)
    gbps = [mb * 2**20 / s / 1e9 for s in ours]
    peer_gbps = [mb * 2**20 / s / 1e9 for s in theirs]
    ratios = [a / b for a, b in zip(ours, theirs)]
    print(f"transfer of {mb} MB worker<-ps ({threads} thread(s) per process, "
          f"{rounds} rounds): Runnel {statistics.median(ours) * 1e3:.1f} ms "
          f"({statistics.median(gbps):.2f} GB/s), PyTorch "
          f"{statistics.median(theirs) * 1e3:.1f} ms "
          f"({statistics.median(peer_gbps):.2f} GB/s) (medians); ratio "
          f"{statistics.median(ratios):.3g} (median of per-round ratios, "
          f"{min(ratios):.3g}-{max(ratios):.3g}; below 1 Runnel is faster)")


if __name__ == "__main__":
    main()

"""Tensor transfer between tasks (docs/cluster.md), loopback: a worker
fetches an MB-megabyte f32 variable from a parameter server and sums it,
STEPS times; the time of a sum of a local variable of that size is taken
off, leaving the transfer. Peers, the same fetch and sum less their own
local sum: PyTorch's torch.distributed.rpc (TensorPipe) fetching a tensor
of that size with rpc_sync (bench/cluster_peer.py fetch), and TensorFlow's
tf.distribute.Server on a ps and a worker process, the worker's
tf.function summing a variable placed on /job:ps/task:0
(bench/tf_transfer_peer.py). bench/peer.py tunes them, alternates rounds
and reports medians and the median of per-round ratios against the best
peer.

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
TF_PEER = os.path.join(HERE, "tf_transfer_peer.py")
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

    def runnel_side(_):
        remote = runnel_seconds(runnel, mb, steps, threads, "/job:ps/task:0")
        local = runnel_seconds(runnel, mb, steps, threads,
                               "/job:worker/task:0")
        return {"transfer": remote - local}

    def fetch_less_sum(cmd):
        """A peer's side: its fetch-and-sum time less its local sum's."""
        def side(config):
            p = subprocess.run(cmd + config.args, env=config.environ(),
                               check=True, stdout=subprocess.PIPE, text=True,
                               timeout=600)
            r = peer.parse_results(p.stdout)
            return {"transfer": r["fetch"] - r["sum"]}
        return side

    peers = [peer.Peer("PyTorch", fetch_less_sum(
                 [peer.PYTHON, PEER, "fetch", str(mb), str(steps),
                  str(threads)]), peer.torch_configs(threads)),
             peer.Peer("TensorFlow", fetch_less_sum(
                 [peer.PYTHON, TF_PEER, str(mb), str(steps)]),
                 peer.tf_configs(threads))]
    ours, theirs = peer.compare(
        "tensor transfer between tasks, loopback", threads, runnel_side,
        peers, rounds, {"transfer": f"{mb} MB f32 variable, worker <- ps"})
    print("  throughput (medians): " + ", ".join(
        f"{name} {mb * 2**20 / statistics.median(t['transfer']) / 1e9:.2f}"
        " GB/s" for name, t in [("Runnel", ours)] + list(theirs.items())))


if __name__ == "__main__":
    main()

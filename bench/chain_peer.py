"""chain_bench's peers and driver: 1000 scalar adds, a chain each depending
on the last, in PyTorch eager mode and in TensorFlow, eager and as one
tf.function graph (the analogue of Runnel's graph: one call runs all 1000
ops). No XLA or torch.compile: they fuse the chain into one kernel, and
what is measured here is the per-op dispatch.

    /usr/bin/python3 bench/chain_peer.py --compare build-release/chain_bench
        [--threads 2] [--rounds 6]

compares (build-release/chain_bench does this itself); `--peer` runs the
PyTorch side alone and `--peer-tf` the TensorFlow side (`--graph`: the
tf.function); each prints `RESULT chain <seconds per add>`, the median of
15 reps of 20 chains (5 reps with --trial, the tuning's short trials).
"""
import os
import statistics
import sys
import time

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import peer  # noqa: E402  pylint: disable=wrong-import-position

OPS = 1000


def torch_main(argv):
    # Before torch loads OpenMP: spin-waiting fights OpenBLAS on 2 cores.
    os.environ.setdefault("OMP_WAIT_POLICY", "PASSIVE")
    import torch  # pylint: disable=import-outside-toplevel
    torch.set_num_threads(peer.threads_arg(argv))
    one = torch.tensor(1.0)

    def chain():
        x = one
        for _ in range(OPS):
            x = x + one
        assert float(x) == OPS + 1.0
    time_chains(argv, chain)


def time_chains(argv, chain):
    """Prints the median seconds per add of `chain` (one call: OPS adds):
    15 reps of 20 calls, 5 with --trial (TensorFlow's eager chain takes
    tens of seconds)."""
    for _ in range(20):
        chain()
    times = []
    for _ in range(5 if "--trial" in argv else 15):
        t0 = time.perf_counter()
        for _ in range(20):
            chain()
        times.append((time.perf_counter() - t0) / (20 * OPS))
    print(f"RESULT chain {statistics.median(times):.9f}")


def tf_main(argv):
    tf = peer.import_tf(argv)
    one = tf.constant(1.0)

    def adds(x):
        for _ in range(OPS):
            x = x + one
        return x
    if "--graph" in argv:
        adds = tf.function(adds)

    def chain():
        assert float(adds(one)) == OPS + 1.0
    time_chains(argv, chain)


def main(argv):
    peer.drive_binary("executor overhead", argv, __file__,
                      {"chain": f"chain of {OPS} scalar adds, per add"},
                      tf_variants=[("eager", ()),
                                   ("tf.function graph", ("--graph",))],
                      trial_args=["--trial"])
    print("  floor: 1 FLOP per add, nothing: the time is all dispatch")


if __name__ == "__main__":
    peer.dispatch(main, torch_main, tf_main)

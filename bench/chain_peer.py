"""chain_bench's peer and driver: 1000 scalar adds in PyTorch eager mode.

    /usr/bin/python3 bench/chain_peer.py --compare build-release/chain_bench
        [--threads 2] [--rounds 6]

compares (build-release/chain_bench does this itself); `--peer` runs the
PyTorch side alone and prints `RESULT chain <seconds per add>`, the median
of 15 reps of 20 chains.
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

    for _ in range(20):
        chain()
    times = []
    for _ in range(15):
        t0 = time.perf_counter()
        for _ in range(20):
            chain()
        times.append((time.perf_counter() - t0) / (20 * OPS))
    print(f"RESULT chain {statistics.median(times):.9f}")


def main(argv):
    peer.drive_binary("executor overhead", argv, __file__,
                      {"chain": f"chain of {OPS} scalar adds, per add"})
    print("  floor: 1 FLOP per add, nothing: the time is all dispatch")


if __name__ == "__main__":
    if "--peer" in sys.argv:
        torch_main(sys.argv[1:])
    else:
        main(sys.argv[1:])

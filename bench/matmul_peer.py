"""matmul_bench's peer and driver: the same f32 products in PyTorch.

    /usr/bin/python3 bench/matmul_peer.py --compare build-release/matmul_bench
        [--threads 2] [--rounds 6]

compares (build-release/matmul_bench does this itself); `--peer` runs the
PyTorch side alone and prints `RESULT <workload> <seconds per product>`,
the median of 10 reps.
"""
import os
import statistics
import sys
import time

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import peer  # noqa: E402  pylint: disable=wrong-import-position

# name: (m, k, n, products per rep), as in matmul_bench.cc.
WORKLOADS = {"1024^3": (1024, 1024, 1024, 5),
             "128x784x256": (128, 784, 256, 50)}


def torch_main(argv):
    # Before torch loads OpenMP: spin-waiting fights OpenBLAS on 2 cores.
    os.environ.setdefault("OMP_WAIT_POLICY", "PASSIVE")
    import torch  # pylint: disable=import-outside-toplevel
    torch.set_num_threads(peer.threads_arg(argv))
    g = torch.Generator().manual_seed(0)
    for name, (m, k, n, iters) in WORKLOADS.items():
        a = torch.rand(m, k, generator=g)
        b = torch.rand(k, n, generator=g)
        # Like Runnel's eager call, each product allocates its output.
        for _ in range(3):
            torch.matmul(a, b)
        times = []
        for _ in range(10):
            start = time.perf_counter()
            for _ in range(iters):
                torch.matmul(a, b)
            times.append((time.perf_counter() - start) / iters)
        print(f"RESULT {name} {statistics.median(times):.9f}")


def main(argv):
    peer.drive_binary("f32 matmul, eager", argv, __file__,
                      {w: f"matmul {w}" for w in WORKLOADS},
                      flops={w: 2.0 * m * k * n
                             for w, (m, k, n, _) in WORKLOADS.items()})


if __name__ == "__main__":
    if "--peer" in sys.argv:
        torch_main(sys.argv[1:])
    else:
        main(sys.argv[1:])

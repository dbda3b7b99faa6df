#!/usr/bin/python3
"""PyTorch peer of bench/matmul_bench.cc: the same f32 matmul, same threads.

Prints one number, the median GFLOP/s, for the C++ benchmark to read. Run
it with Debian's /usr/bin/python3 (python3-torch); a pyenv python3 has no
torch.
"""
import argparse
import os
import statistics
import sys
import time


def main():
    p = argparse.ArgumentParser()
    p.add_argument("--threads", type=int, default=2)
    p.add_argument("--m", type=int, default=1024)
    p.add_argument("--k", type=int, default=1024)
    p.add_argument("--n", type=int, default=1024)
    p.add_argument("--reps", type=int, default=10)
    p.add_argument("--iters", type=int, default=5, help="matmuls per rep")
    args = p.parse_args()
    # OpenBLAS (libopenblas0-pthread) sizes its own pool from the
    # environment, not from torch.set_num_threads: pin both before import
    # (bench/peer.h does too; this keeps the script right when run alone).
    os.environ["OPENBLAS_NUM_THREADS"] = str(args.threads)
    os.environ["OMP_NUM_THREADS"] = str(args.threads)
    import torch  # pylint: disable=import-outside-toplevel

    torch.set_num_threads(args.threads)
    g = torch.Generator().manual_seed(0)
    a = torch.rand(args.m, args.k, generator=g, dtype=torch.float32)
    b = torch.rand(args.k, args.n, generator=g, dtype=torch.float32)
    # Like runnel's eager call, each product allocates its output.
    for _ in range(3):
        torch.matmul(a, b)
    times = []
    for _ in range(args.reps):
        start = time.perf_counter()
        for _ in range(args.iters):
            torch.matmul(a, b)
        times.append((time.perf_counter() - start) / args.iters)
    flops = 2.0 * args.m * args.k * args.n
    print(f"{flops / statistics.median(times) / 1e9:.2f}")
    return 0


if __name__ == "__main__":
    sys.exit(main())

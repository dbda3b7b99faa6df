"""PyTorch side of chain_bench: 1000 scalar adds in eager mode.

Prints one number: median microseconds per add.
"""
import argparse
import statistics
import time

import torch

p = argparse.ArgumentParser()
p.add_argument("--threads", type=int, default=2)
args = p.parse_args()
torch.set_num_threads(args.threads)

one = torch.tensor(1.0)


def chain():
    x = one
    for _ in range(1000):
        x = x + one
    assert float(x) == 1001.0


for _ in range(20):
    chain()
times = []
for _ in range(15):
    t0 = time.perf_counter()
    for _ in range(20):
        chain()
    times.append((time.perf_counter() - t0) / (20 * 1000) * 1e6)
print(f"{statistics.median(times):.4f}")

"""matmul_bench's peers and driver: the same f32 products in PyTorch
(torch.matmul) and TensorFlow (tf.linalg.matmul eager, and in a tf.function
with and without XLA).

    /usr/bin/python3 bench/matmul_peer.py --compare build-release/matmul_bench
        [--threads 2] [--rounds 6]

compares (build-release/matmul_bench does this itself); `--peer` runs the
PyTorch side alone and `--peer-tf` the TensorFlow side; each prints
`RESULT <workload> <seconds per product>`, the median of 10 reps.
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


def time_products(name, iters, product, wait=lambda r: r):
    """Prints the median seconds per product over 10 reps of `iters` calls
    of `product` (after 3 warm-up calls); `wait` is applied to the last
    result of a rep, so a rep ends when its work is done."""
    for _ in range(3):
        wait(product())
    times = []
    for _ in range(10):
        start = time.perf_counter()
        for _ in range(iters):
            r = product()
        wait(r)
        times.append((time.perf_counter() - start) / iters)
    print(f"RESULT {name} {statistics.median(times):.9f}")


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
        time_products(name, iters, lambda: torch.matmul(a, b))


def tf_main(argv):
    tf = peer.import_tf(argv)
    matmul = tf.linalg.matmul
    if "--function" in argv or "--xla" in argv:
        matmul = tf.function(matmul, jit_compile="--xla" in argv)
    g = tf.random.Generator.from_seed(0)
    for name, (m, k, n, iters) in WORKLOADS.items():
        a, b = g.uniform((m, k)), g.uniform((k, n))
        time_products(name, iters, lambda: matmul(a, b),
                      lambda r: r.numpy())


def main(argv):
    peer.drive_binary("f32 matmul, eager", argv, __file__,
                      {w: f"matmul {w}" for w in WORKLOADS},
                      tf_variants=[("eager", ()),
                                   ("tf.function", ("--function",)),
                                   ("XLA", ("--xla",))],
                      flops={w: 2.0 * m * k * n
                             for w, (m, k, n, _) in WORKLOADS.items()})


if __name__ == "__main__":
    peer.dispatch(main, torch_main, tf_main)

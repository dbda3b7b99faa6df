"""Control-flow benchmarks: the overhead of an in-graph loop (a 100,000-
iteration counter loop, against a Python loop of PyTorch ops doing the same
work) and a row-LSTM training step (28 steps of 28 pixels, 128 units, a
dense layer to 10 classes, Adam, batch 64, against torch.nn.LSTM), in the
same invocation with the same thread count, the peer at its best
configuration (bench/peer.py). Prints time per iteration or step, the
median of the per-round ratios Runnel / PyTorch, and for the LSTM the floor
(its matmul FLOPs at the measured GEMM peak).

    /usr/bin/python3 bench/rnn_bench.py BUILD_DIR [--threads 2] [--rounds 5]

Runnel's time is the difference between a long and a short run of the same
script divided by the difference in iterations or steps, so start-up and
graph building cancel out."""
import os
import subprocess
import sys
import time

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import peer  # noqa: E402  pylint: disable=wrong-import-position

HERE = os.path.dirname(os.path.abspath(__file__))
# Runnel's short and long runs; PyTorch's timed count.
COUNTS = {"loop": (10000, 110000, 100000), "lstm": (3, 23, 20)}
SCRIPTS = {"loop": "loop_counter.rnl", "lstm": "train_rows.rnl"}
DESCRIPTION = {"loop": "counter loop, per iteration",
               "lstm": "row-LSTM h128, batch 64, Adam, per step"}
B, T, F, U = 64, 28, 28, 128


def lstm_flops():
    """Input and recurrent matmuls, forward and both gradients, + dense."""
    per_step = 2 * B * F * 4 * U + 2 * B * U * 4 * U
    return 3 * T * per_step + 3 * 2 * B * U * 10


FLOPS = {"loop": 0, "lstm": lstm_flops()}


def torch_main(argv):
    os.environ.setdefault("OMP_WAIT_POLICY", "PASSIVE")
    import torch  # pylint: disable=import-outside-toplevel
    torch.set_num_threads(peer.threads_arg(argv))
    trial = "--trial" in argv
    # The loop: the same work, one op per iteration on a scalar tensor.
    n = COUNTS["loop"][2] // (10 if trial else 1)
    c = torch.zeros((), dtype=torch.int32)
    t = time.perf_counter()
    for _ in range(n):
        c = c + 1
    print(f"RESULT loop {(time.perf_counter() - t) / n:.9f}")
    assert int(c) == n
    lstm = torch.nn.LSTM(F, U, batch_first=True)
    dense = torch.nn.Linear(U, 10)
    opt = torch.optim.Adam(list(lstm.parameters()) + list(dense.parameters()),
                           lr=0.001)
    x, y = torch.rand(B, T, F), torch.randint(0, 10, (B,))
    loss_fn = torch.nn.CrossEntropyLoss()

    def step():
        opt.zero_grad()
        _, (h, _) = lstm(x)
        loss_fn(dense(h[0]), y).backward()
        opt.step()
    steps = COUNTS["lstm"][2] // (4 if trial else 1)
    for _ in range(3):
        step()
    t = time.perf_counter()
    for _ in range(steps):
        step()
    print(f"RESULT lstm {(time.perf_counter() - t) / steps:.9f}")


def main(argv):
    build = argv[0] if argv and not argv[0].startswith("-") else \
        "build-release"
    threads = peer.threads_arg(argv)
    rounds = peer.int_arg(argv, "--rounds", 5)
    runnel = os.path.join(build, "runnel")

    def runnel_side(_):
        out = {}
        for name, (short, long, _) in COUNTS.items():
            def wall(count):
                t = time.perf_counter()
                subprocess.run([runnel, "run", os.path.join(HERE, SCRIPTS[name]),
                                "--threads", str(threads), "--arg",
                                f"steps={count}"], check=True)
                return time.perf_counter() - t
            out[name] = (wall(long) - wall(short)) / (long - short)
        return out

    peer_cmd = [peer.PYTHON, os.path.abspath(__file__), "--peer",
                "--threads", str(threads)]
    peer.compare("in-graph loops", threads, runnel_side, peer_cmd, rounds,
                 DESCRIPTION, trial_args=["--trial"], flops=FLOPS,
                 build_dir=build)


if __name__ == "__main__":
    if "--peer" in sys.argv:
        torch_main(sys.argv[1:])
    else:
        main(sys.argv[1:])

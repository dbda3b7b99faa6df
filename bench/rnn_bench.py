"""Control-flow benchmarks: the overhead of an in-graph loop (a 100,000-
iteration counter loop) and a row-LSTM training step (28 steps of 28
pixels, 128 units, a dense layer to 10 classes, Adam, batch 64), in Runnel
(bench/loop_counter.rnl, bench/train_rows.rnl) and in both peers, in the
same invocation with the same thread count, each peer at its best
configuration (bench/peer.py):

  - TensorFlow: the loop as tf.while_loop in a tf.function; the LSTM as
    tf.keras.layers.LSTM in a tf.function training step, with and without
    XLA (jit_compile), or unrolled over the 28 steps. Not the loop with
    XLA: XLA compiles the counter loop away (10^8 iterations in 5 ms, 0.05
    ns each), which measures no loop.
  - PyTorch: the loop as a Python loop of tensor ops, or with torch.compile
    as torch's while_loop operator (the in-graph loop; a compiled Python
    loop would be unrolled 100,000 times); the LSTM as nn.LSTM, with and
    without torch.compile.

Prints time per iteration or step, the median of the per-round ratios
Runnel / best peer, and for the LSTM the floor (its matmul FLOPs at the
measured GEMM peak).

    /usr/bin/python3 bench/rnn_bench.py BUILD_DIR [--threads 2] [--rounds 5]

Runnel's time is the difference between a long and a short run of the same
script divided by the difference in iterations or steps, so start-up and
graph building cancel out; the peers' loop time is likewise the difference
between a long and a short call of the loop, divided by the difference in
iterations. devices_bench.py runs this script's LSTM side with --layers 2
for its two-layer LSTM."""
import os
import subprocess
import sys
import time

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import peer  # noqa: E402  pylint: disable=wrong-import-position

HERE = os.path.dirname(os.path.abspath(__file__))
# Runnel's short and long runs; the peers' timed count. 100 LSTM steps
# (about 0.35 s): over 20 (70 ms), a process start's jitter moved
# Runnel's per-round step time by up to 40%.
COUNTS = {"loop": (10000, 110000, 100000), "lstm": (3, 103, 100)}
SCRIPTS = {"loop": "loop_counter.rnl", "lstm": "train_rows.rnl"}
DESCRIPTION = {"loop": "counter loop, per iteration",
               "lstm": "row-LSTM h128, batch 64, Adam, per step"}
B, T, F, U = 64, 28, 28, 128


def lstm_flops():
    """Input and recurrent matmuls, forward and both gradients, + dense."""
    per_step = 2 * B * F * 4 * U + 2 * B * U * 4 * U
    return 3 * T * per_step + 3 * 2 * B * U * 10


FLOPS = {"loop": 0, "lstm": lstm_flops()}
# The peers' variants (devices_bench.py uses them too).
TORCH_VARIANTS = [("", ()), ("torch.compile", ("--compile",))]
TF_VARIANTS = [("", ()), ("XLA", ("--xla",)), ("unrolled", ("--unroll",))]


def only(argv):
    return [argv[argv.index("--only") + 1]] if "--only" in argv else \
        list(COUNTS)


def per_iteration(count, n):
    """Seconds per iteration of count(n), a loop of n iterations returning
    its counter: the difference between n and n / 10 iterations, so the
    call's own cost cancels."""
    assert int(count(10)) == 10  # traces or compiles it
    t = []
    for k in (n // 10, n):
        t0 = time.perf_counter()
        assert int(count(k)) == k
        t.append(time.perf_counter() - t0)
    return (t[1] - t[0]) / (n - n // 10)


def per_step(step, steps, warm=3):
    """Seconds per call of `step` after `warm` untimed calls; the last
    call's result, where it has one, is read back (TensorFlow may still be
    computing it)."""
    for _ in range(warm):
        step()
    t = time.perf_counter()
    for _ in range(steps):
        r = step()
    if r is not None:
        r.numpy()
    return (time.perf_counter() - t) / steps


def counts(argv):
    """The peers' loop iterations and LSTM steps (fewer with --trial)."""
    trial = "--trial" in argv
    return (COUNTS["loop"][2] // (10 if trial else 1),
            COUNTS["lstm"][2] // (4 if trial else 1))


def lr(argv):
    """Adam's learning rate: train_rows.rnl's, or model_parallel_lstm.rnl's
    (--lr 0.002) for devices_bench.py."""
    return float(argv[argv.index("--lr") + 1]) if "--lr" in argv else 0.001


# ---- the PyTorch side (run with --peer, in its own process) ----------------

def torch_main(argv):
    os.environ.setdefault("OMP_WAIT_POLICY", "PASSIVE")
    import torch  # pylint: disable=import-outside-toplevel
    torch.set_num_threads(peer.threads_arg(argv))
    compiled = "--compile" in argv
    n, steps = counts(argv)
    if "loop" in only(argv):
        if compiled:
            from torch._higher_order_ops.while_loop import while_loop  # pylint: disable=import-outside-toplevel

            @torch.compile(fullgraph=True)
            def count_graph(n):
                # Two tensors: the carried values may not alias.
                i = torch.zeros((), dtype=torch.int32)
                c = torch.zeros((), dtype=torch.int32)
                return while_loop(lambda i, c: i < n,
                                  lambda i, c: (i + 1, c + 1), (i, c))[1]

            def count(k):
                return count_graph(torch.tensor(k, dtype=torch.int32))
        else:
            def count(k):
                c = torch.zeros((), dtype=torch.int32)
                for _ in range(k):
                    c = c + 1
                return c
        print(f"RESULT loop {per_iteration(count, n):.9f}")
    if "lstm" not in only(argv):
        return
    lstm = torch.nn.LSTM(F, U, num_layers=peer.int_arg(argv, "--layers", 1),
                         batch_first=True)
    dense = torch.nn.Linear(U, 10)  # nn.dense: Glorot-uniform, zero bias
    torch.nn.init.xavier_uniform_(dense.weight)
    torch.nn.init.zeros_(dense.bias)
    opt = torch.optim.Adam(list(lstm.parameters()) + list(dense.parameters()),
                           lr=lr(argv))
    x, y = torch.rand(B, T, F), torch.randint(0, 10, (B,))

    def train(x, y):
        opt.zero_grad()
        out, _ = lstm(x)
        torch.nn.functional.cross_entropy(dense(out[:, -1]), y).backward()
        opt.step()
    if compiled:
        train = torch.compile(train)
    print(f"RESULT lstm {per_step(lambda: train(x, y), steps):.9f}")


# ---- the TensorFlow side (run with --peer-tf, in its own process) ----------

def tf_main(argv):
    tf = peer.import_tf(argv)
    xla = "--xla" in argv
    n, steps = counts(argv)
    if "loop" in only(argv) and not xla:  # XLA removes it (docstring)
        @tf.function
        def count_graph(n):
            def more(i, _):
                return i < n

            def body(i, c):
                return i + 1, c + 1
            zero = tf.constant(0)
            return tf.while_loop(more, body, (zero, zero))[1]
        print(f"RESULT loop "
              f"{per_iteration(lambda k: count_graph(tf.constant(k)), n):.9f}")
    if "lstm" not in only(argv):
        return
    layers = peer.int_arg(argv, "--layers", 1)
    # nn.lstm's (PyTorch's) initialization: U(-1/sqrt(units), 1/sqrt(units)).
    init = tf.keras.initializers.RandomUniform(-U ** -0.5, U ** -0.5)
    model = tf.keras.Sequential(
        [tf.keras.Input((T, F))] +
        [tf.keras.layers.LSTM(U, return_sequences=i < layers - 1,
                              kernel_initializer=init,
                              recurrent_initializer=init,
                              bias_initializer=init, unit_forget_bias=False,
                              unroll="--unroll" in argv)
         for i in range(layers)] + [tf.keras.layers.Dense(10)])
    opt = tf.keras.optimizers.Adam(lr(argv), epsilon=1e-8)
    loss_fn = tf.keras.losses.SparseCategoricalCrossentropy(from_logits=True)
    x = tf.random.uniform((B, T, F))
    y = tf.random.uniform((B,), 0, 10, tf.int32)

    train = peer.tf_train_step(tf, model, opt, loss_fn, xla)
    print(f"RESULT lstm {per_step(lambda: train(x, y), steps):.9f}")


# ---- the driver -------------------------------------------------------------

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

    script = [os.path.abspath(__file__), "--threads", str(threads)]
    peers = [peer.torch_peer(script + ["--peer"], threads, TORCH_VARIANTS),
             peer.tf_peer(script + ["--peer-tf"], threads, TF_VARIANTS)]
    peer.compare("in-graph loops", threads, runnel_side, peers, rounds,
                 DESCRIPTION, trial_args=["--trial"], flops=FLOPS,
                 build_dir=build)


if __name__ == "__main__":
    peer.dispatch(main, torch_main, tf_main)

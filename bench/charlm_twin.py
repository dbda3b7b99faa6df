"""The PyTorch twin of examples/charlm.rnl, a TensorFlow side for its step
time, and the comparison of the three.

The twin trains the same character-level LSTM language model on the same
data: the English fortunes of Debian's `fortunes` package, each file's first
90% for training and its last 10% for validation, bytes as characters
(one-hot over 256), `batch` streams read side by side in windows of 64
characters with the final state carried from window to window (truncated
back-propagation), the loss counting only the real characters of the
ragged last window. Same sizes, the same initialization scheme (PyTorch's
own for nn.LSTM, which nn.lstm copies: every weight and the bias
U(-1/sqrt(units), 1/sqrt(units)); Glorot-uniform weights and a zero bias for
the output layer), Adam with the same learning rate and the same number of
steps. nn.lstm has one bias where nn.LSTM has two, so the twin's second
bias is zero and frozen.

    /usr/bin/python3 bench/charlm_twin.py BUILD_DIR [--steps 2000]
        [--threads 2] [--rounds 3] [--no-train]

It prints, from the same invocation:
  1. both models' validation bits per character after full training, and
     fails (exit 1) when they differ by more than 0.03;
  2. the training step time of Runnel and of both peers over short runs,
     alternating rounds, each peer at its best configuration (bench/
     peer.py), and the floor: PyTorch is the twin (--peer), with and
     without torch.compile of its forward pass and loss; TensorFlow
     (--peer-tf) trains the same model on the same windows as a
     tf.keras.layers.LSTM (a tf.while_loop on the CPU; the mask freezes
     the states as `lengths` does) in a tf.function step, with and without
     XLA, or unrolled over the 64 characters.
Runnel's step time is read from the `time` of its --metrics lines, between
the 10th and the last step, so start-up, graph building and validation do
not count; the peers time the same steps the same way.
"""
import math
import os
import sys
import time

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import peer  # noqa: E402  pylint: disable=wrong-import-position

HERE = os.path.dirname(os.path.abspath(__file__))
EXAMPLE = os.path.join(os.path.dirname(HERE), "examples", "charlm.rnl")
DATA = "/usr/share/games/fortunes/"
FILES = ["art", "ascii-art", "computers", "cookie", "debian", "definitions",
         "disclaimer", "drugs", "education", "ethnic", "food", "fortunes",
         "goedel", "humorists", "kids", "knghtbrd", "law", "linux",
         "linuxcookie", "literature", "love", "magic", "medicine",
         "men-women", "miscellaneous", "news", "paradoxum", "people", "perl",
         "pets", "platitudes", "politics", "pratchett", "riddles", "science",
         "songs-poems", "sports", "startrek", "tao", "translate-me", "wisdom",
         "work", "zippy"]
VOCAB, BPTT = 256, 64
TIMED_FROM = 10  # steps before this one are warm-up in the step timings
BENCH_STEPS = 40


def arg(argv, name, fallback, kind=int):
    return kind(argv[argv.index(name) + 1]) if name in argv else fallback


def texts():
    train, valid = bytearray(), bytearray()
    for f in FILES:
        with open(os.path.join(DATA, f), "rb") as fh:
            b = fh.read()
        cut = len(b) * 9 // 10
        train += b[:cut]
        valid += b[cut:]
    return bytes(train), bytes(valid)


def streams(text, b):
    """As `streams` in charlm.rnl: rows, real lengths, window count (numpy
    arrays, which either side converts)."""
    import numpy as np  # pylint: disable=import-outside-toplevel
    n = len(text)
    row = (n + b - 1) // b
    ids = np.zeros(row * b + BPTT + 1, dtype=np.int64)
    ids[:n] = np.frombuffer(text, dtype=np.uint8)
    rows = np.concatenate([ids[:row * b].reshape(b, row),
                           np.zeros((b, BPTT + 1), dtype=np.int64)], 1)
    real = (n - np.arange(b) * row).clip(0, row)
    return rows, real, (row - 1 + BPTT - 1) // BPTT


def window(rows, real, k):
    at = k * BPTT
    return (rows[:, at:at + BPTT], rows[:, at + 1:at + BPTT + 1],
            (real - 1 - at).clip(0, BPTT))


def torch_main(argv):
    os.environ.setdefault("OMP_WAIT_POLICY", "PASSIVE")
    import torch  # pylint: disable=import-outside-toplevel
    torch.set_num_threads(peer.threads_arg(argv))
    steps = arg(argv, "--steps", 2000)
    units = arg(argv, "--units", 256)
    batch = arg(argv, "--batch", 32)
    lr = arg(argv, "--lr", 0.002, float)
    valid_windows = arg(argv, "--valid-windows", 0)
    torch.manual_seed(arg(argv, "--seed", 1))

    lstm = torch.nn.LSTM(VOCAB, units, batch_first=True)
    with torch.no_grad():
        lstm.bias_hh_l0.zero_()
    lstm.bias_hh_l0.requires_grad_(False)
    dense = torch.nn.Linear(units, VOCAB)
    torch.nn.init.xavier_uniform_(dense.weight)
    torch.nn.init.zeros_(dense.bias)
    params = [p for p in lstm.parameters() if p.requires_grad] + \
        list(dense.parameters())
    opt = torch.optim.Adam(params, lr=lr, eps=1e-8)

    def forward(x, y, n, state):
        out, (h, c) = lstm(torch.nn.functional.one_hot(x, VOCAB).float(),
                           state)
        logits = dense(out.reshape(-1, units))
        nll = torch.nn.functional.cross_entropy(logits, y.reshape(-1),
                                                reduction="none")
        mask = (torch.arange(x.shape[1])[None, :] < n[:, None]).reshape(-1)
        mask = mask.float()
        return (nll * mask).sum(), mask.sum(), (h, c)

    if "--compile" in argv:
        forward = torch.compile(forward)

    def torch_streams(text):
        rows, real, windows = streams(text, batch)
        return torch.from_numpy(rows), torch.from_numpy(real), windows

    train, valid = texts()
    rows, real, windows = torch_streams(train)
    zero = (torch.zeros(1, batch, units), torch.zeros(1, batch, units))
    state = zero
    stamps = []
    for i in range(steps):
        k = i % windows
        if k == 0:
            state = zero
        x, y, n = window(rows, real, k)
        opt.zero_grad()
        total, count, (h, c) = forward(x, y, n, state)
        (total / count).backward()
        opt.step()
        state = (h.detach(), c.detach())
        stamps.append(time.perf_counter())
    if steps > TIMED_FROM + 1:
        print(f"RESULT charlm {peer.step_time(stamps, TIMED_FROM):.9f}")

    rows, real, windows = torch_streams(valid)
    if 0 < valid_windows < windows:
        windows = valid_windows
    nats = chars = 0.0
    state = zero
    with torch.no_grad():
        for k in range(windows):
            total, count, state = forward(*window(rows, real, k), state)
            nats += float(total)
            chars += float(count)
    print(f"BPC {nats / chars / math.log(2):.6f}")


def tf_main(argv):
    """The TensorFlow side of the step timings: the same model, data and
    steps as the twin's training (no validation), as a Keras LSTM (on the
    CPU, Keras runs it as a tf.while_loop over its cell: the graph a
    hand-written loop would build) in a tf.function step, with --xla
    compiled by XLA, with --unroll unrolled over the window."""
    tf = peer.import_tf(argv)
    steps = arg(argv, "--steps", BENCH_STEPS)
    units = arg(argv, "--units", 256)
    batch = arg(argv, "--batch", 32)
    # nn.lstm's initialization: every weight and bias U(-1/sqrt(units), ..).
    init = tf.keras.initializers.RandomUniform(-units ** -0.5, units ** -0.5)
    lstm = tf.keras.layers.LSTM(
        units, return_sequences=True, return_state=True,
        kernel_initializer=init, recurrent_initializer=init,
        bias_initializer=init, unit_forget_bias=False,
        unroll="--unroll" in argv)
    dense = tf.keras.layers.Dense(VOCAB)  # Glorot-uniform, zero bias
    opt = tf.keras.optimizers.Adam(arg(argv, "--lr", 0.002, float),
                                   epsilon=1e-8)

    @tf.function(jit_compile="--xla" in argv)
    def train(x, y, n, h0, c0):
        # The mask freezes each stream's state past its end, as `lengths`.
        mask = tf.range(BPTT)[None, :] < tf.cast(n, tf.int32)[:, None]
        with tf.GradientTape() as tape:
            out, h, c = lstm(tf.one_hot(x, VOCAB), mask=mask,
                             initial_state=[h0, c0])
            nll = tf.nn.sparse_softmax_cross_entropy_with_logits(
                tf.reshape(y, [-1]), dense(tf.reshape(out, [-1, units])))
            real = tf.cast(tf.reshape(mask, [-1]), tf.float32)
            loss = tf.reduce_sum(nll * real) / tf.reduce_sum(real)
        params = lstm.trainable_variables + dense.trainable_variables
        opt.apply_gradients(zip(tape.gradient(loss, params), params))
        return loss, h, c

    rows, real, windows = streams(texts()[0], batch)
    zero = tf.zeros([batch, units])
    h, c = zero, zero
    stamps = []
    for i in range(steps):
        k = i % windows
        if k == 0:
            h, c = zero, zero
        loss, h, c = train(*window(rows, real, k), h, c)
        loss.numpy()
        stamps.append(time.perf_counter())
    print(f"RESULT charlm {peer.step_time(stamps, TIMED_FROM):.9f}")


def run_runnel(build, threads, steps, extra=()):
    """Runnel's validation bpc and seconds per step (from its metrics)."""
    return peer.run_example(build, EXAMPLE, threads, steps, TIMED_FROM, extra)


def flops(units, batch):
    """Matmul FLOPs a step needs: the recurrent product and the output
    layer, forward and both gradients. The input's product by one-hot rows
    is a row lookup (charlm.rnl gathers w_x's rows, and scatters the
    gradient back), so it counts for nothing here, although the peers'
    LSTMs, which take the one-hot rows as features, multiply them (another
    3.2 GFLOP a step at the defaults)."""
    gates = 4 * units
    per_t = 2 * batch * (units * gates + units * VOCAB)
    return 3 * BPTT * per_t


def main(argv):
    build = argv[0] if argv and not argv[0].startswith("-") else "build"
    threads = peer.threads_arg(argv)
    rounds = peer.int_arg(argv, "--rounds", 3)
    steps = peer.int_arg(argv, "--steps", 2000)
    units, batch = 256, 32
    if "--no-train" not in argv and peer.compare_twin_bpc(
            "char-LM", os.path.abspath(__file__), threads, steps,
            lambda: run_runnel(build, threads, steps)[0]):
        return 1

    def runnel_side(_):
        return {"charlm": run_runnel(build, threads, BENCH_STEPS,
                                     ["--arg", "valid_windows=1"])[1]}

    script = [os.path.abspath(__file__), "--threads", str(threads), "--steps",
              str(BENCH_STEPS)]
    peers = [peer.torch_peer(script + ["--peer", "--valid-windows", "1"],
                             threads, [("", ()),
                                       ("torch.compile", ("--compile",))]),
             peer.tf_peer(script + ["--peer-tf"], threads,
                          [("", ()), ("XLA", ("--xla",)),
                           ("unrolled", ("--unroll",))])]
    peer.compare("char-LM training step", threads, runnel_side, peers,
                 rounds, {"charlm": f"LSTM h{units}, batch {batch}, "
                          f"{BPTT} characters, Adam, per step"},
                 flops={"charlm": flops(units, batch)}, build_dir=build)
    return 0


if __name__ == "__main__":
    peer.dispatch(main, torch_main, tf_main)

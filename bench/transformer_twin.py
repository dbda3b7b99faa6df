"""The PyTorch twin of examples/char_transformer.rnl, a TensorFlow side for
its step time, and the comparison of the three (issue 33).

The twin trains the same GPT-style character model on the same data in the
same order: the English fortunes of Debian's `fortunes` package, each
file's first 90% for training and its last 10% for validation, bytes as
characters; `batch` streams read side by side, step i training on window i
(mod the windows) of 128 characters of every stream, the loss counting only
the real characters of the ragged last window. The same model: a character
and a learned position embedding (both N(0, 0.02)), 4 pre-norm blocks (4
heads of 32, causal attention, a GELU MLP of 512; every projection a
Glorot-uniform weight and a zero bias), a final layer norm and a dense layer
to 256 logits; AdamW (weight decay 0.01) with the learning rate warmed up
linearly over 100 steps and then decayed along a half cosine to 0 at the
last step; gradients clipped to a global norm of 1. One difference, said
in the example: Runnel's embedding gradient is sparse, so a character not
in a batch does not move at that step; PyTorch's nn.Embedding moves every
row.

    bench/transformer_twin.py BUILD_DIR [--steps 2000] [--threads 2]
        [--rounds 3] [--no-train]

It prints, from the same invocation:
  1. both models' validation bits per character after full training, and
     fails (exit 1) when they differ by more than 0.03;
  2. the training step time of Runnel and of both peers over short runs,
     alternating rounds, each peer at its best configuration (bench/
     peer.py) and the floor: PyTorch (--peer, the twin) with and without
     torch.compile of its forward pass and loss; TensorFlow (--peer-tf) the
     same model written with tf ops in a tf.function step, with and
     without XLA.
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
from charlm_twin import texts  # noqa: E402  pylint: disable=wrong-import-position

HERE = os.path.dirname(os.path.abspath(__file__))
EXAMPLE = os.path.join(os.path.dirname(HERE), "examples",
                       "char_transformer.rnl")
VOCAB, CONTEXT, WIDTH, HEADS, BLOCKS, BATCH = 256, 128, 128, 4, 4, 32
HIDDEN, WARMUP, PEAK, DECAY, CLIP = 4 * WIDTH, 100, 0.001, 0.01, 1.0
TIMED_FROM = 10  # steps before this one are warm-up in the step timings
BENCH_STEPS = 30


def arg(argv, name, fallback, kind=int):
    return kind(argv[argv.index(name) + 1]) if name in argv else fallback


def streams(text, b):
    """As `streams` in char_transformer.rnl: rows, real lengths, windows."""
    import numpy as np  # pylint: disable=import-outside-toplevel
    n = len(text)
    row = (n + b - 1) // b
    ids = np.zeros(row * b + CONTEXT + 1, dtype=np.int64)
    ids[:n] = np.frombuffer(text, dtype=np.uint8)
    rows = np.concatenate([ids[:row * b].reshape(b, row),
                           np.zeros((b, CONTEXT + 1), dtype=np.int64)], 1)
    real = (n - np.arange(b) * row).clip(0, row)
    return rows, real, (row - 1 + CONTEXT - 1) // CONTEXT


def window(rows, real, k):
    at = k * CONTEXT
    return (rows[:, at:at + CONTEXT], rows[:, at + 1:at + CONTEXT + 1],
            (real - 1 - at).clip(0, CONTEXT))


def learning_rate(step, total):
    """optim.schedule.warmup_cosine(PEAK, warm-up, total) at `step`, the
    warm-up WARMUP steps, or a tenth of a run shorter than that (as the
    example's)."""
    warmup = WARMUP if WARMUP < total else total // 10
    if step < warmup:
        return PEAK * step / warmup
    p = min(1.0, (step - warmup) / (total - warmup))
    return PEAK * 0.5 * (1.0 + math.cos(math.pi * p))


def torch_main(argv):
    os.environ.setdefault("OMP_WAIT_POLICY", "PASSIVE")
    import torch  # pylint: disable=import-outside-toplevel
    from torch import nn  # pylint: disable=import-outside-toplevel
    f = torch.nn.functional
    torch.set_num_threads(peer.threads_arg(argv))
    steps = arg(argv, "--steps", 2000)
    valid_windows = arg(argv, "--valid-windows", 0)
    torch.manual_seed(arg(argv, "--seed", 1))

    def linear(n_in, n_out):
        m = nn.Linear(n_in, n_out)
        nn.init.xavier_uniform_(m.weight)
        nn.init.zeros_(m.bias)
        return m

    class Block(nn.Module):
        def __init__(self):
            super().__init__()
            self.ln1, self.ln2 = nn.LayerNorm(WIDTH), nn.LayerNorm(WIDTH)
            self.q, self.k, self.v, self.o = (linear(WIDTH, WIDTH)
                                              for _ in range(4))
            self.fc1, self.fc2 = linear(WIDTH, HIDDEN), linear(HIDDEN, WIDTH)

        def forward(self, x):
            b, t, _ = x.shape
            a = self.ln1(x)
            q, k, v = (m(a).view(b, t, HEADS, WIDTH // HEADS).transpose(1, 2)
                       for m in (self.q, self.k, self.v))
            o = f.scaled_dot_product_attention(q, k, v, is_causal=True)
            h = x + self.o(o.transpose(1, 2).reshape(b, t, WIDTH))
            return h + self.fc2(f.gelu(self.fc1(self.ln2(h))))

    class Model(nn.Module):
        def __init__(self):
            super().__init__()
            self.chars = nn.Embedding(VOCAB, WIDTH)
            self.positions = nn.Parameter(torch.empty(CONTEXT, WIDTH))
            nn.init.normal_(self.chars.weight, std=0.02)
            nn.init.normal_(self.positions, std=0.02)
            self.blocks = nn.ModuleList(Block() for _ in range(BLOCKS))
            self.ln = nn.LayerNorm(WIDTH)
            self.out = linear(WIDTH, VOCAB)

        def forward(self, x, y, n):
            h = self.chars(x) + self.positions[:x.shape[1]]
            for block in self.blocks:
                h = block(h)
            logits = self.out(self.ln(h).reshape(-1, WIDTH))
            nll = f.cross_entropy(logits, y.reshape(-1), reduction="none")
            mask = (torch.arange(x.shape[1])[None, :] < n[:, None])
            mask = mask.reshape(-1).float()
            return (nll * mask).sum(), mask.sum()

    model = Model()
    forward = torch.compile(model) if "--compile" in argv else model
    opt = torch.optim.AdamW(model.parameters(), lr=PEAK, eps=1e-8,
                            weight_decay=DECAY)
    train, valid = texts()
    rows, real, windows = (torch.from_numpy(a) if hasattr(a, "shape") else a
                           for a in streams(train, BATCH))
    stamps = []
    for i in range(steps):
        x, y, n = window(rows, real, i % windows)
        for g in opt.param_groups:
            g["lr"] = learning_rate(i, steps)
        opt.zero_grad()
        total, count = forward(x, y, n)
        (total / count).backward()
        torch.nn.utils.clip_grad_norm_(model.parameters(), CLIP)
        opt.step()
        stamps.append(time.perf_counter())
    if steps > TIMED_FROM + 1:
        print(f"RESULT transformer {peer.step_time(stamps, TIMED_FROM):.9f}")

    rows, real, windows = (torch.from_numpy(a) if hasattr(a, "shape") else a
                           for a in streams(valid, BATCH))
    if 0 < valid_windows < windows:
        windows = valid_windows
    nats = chars = 0.0
    with torch.no_grad():
        for k in range(windows):
            total, count = forward(*window(rows, real, k))
            nats += float(total)
            chars += float(count)
    print(f"BPC {nats / chars / math.log(2):.6f}")


def tf_main(argv):
    """The TensorFlow side of the step timings: the same model, data and
    steps as the twin's training (no validation), written with tf ops in
    one tf.function step (--xla: compiled by XLA)."""
    tf = peer.import_tf(argv)
    steps = arg(argv, "--steps", BENCH_STEPS)
    glorot = tf.keras.initializers.GlorotUniform(seed=1)
    small = tf.keras.initializers.RandomNormal(stddev=0.02, seed=2)
    params = []

    def var(shape, init):
        v = tf.Variable(init(shape))
        params.append(v)
        return v

    def dense(n_in, n_out):
        return var([n_in, n_out], glorot), var([n_out], tf.zeros)

    def norm():
        return var([WIDTH], tf.ones), var([WIDTH], tf.zeros)

    chars, positions = var([VOCAB, WIDTH], small), var([CONTEXT, WIDTH], small)
    blocks = [{"ln1": norm(), "q": dense(WIDTH, WIDTH), "k": dense(WIDTH, WIDTH),
               "v": dense(WIDTH, WIDTH), "o": dense(WIDTH, WIDTH),
               "ln2": norm(), "fc1": dense(WIDTH, HIDDEN),
               "fc2": dense(HIDDEN, WIDTH)} for _ in range(BLOCKS)]
    final, out = norm(), dense(WIDTH, VOCAB)
    # AdamW by hand (torch.optim.AdamW's rule) on the plain tf.Variables.
    slots = [(tf.Variable(tf.zeros_like(p)), tf.Variable(tf.zeros_like(p)))
             for p in params]
    count = tf.Variable(0.0)

    def layer_norm(x, p):
        mean, variance = tf.nn.moments(x, axes=[-1], keepdims=True)
        return (x - mean) * tf.math.rsqrt(variance + 1e-5) * p[0] + p[1]

    def apply(x, p):
        return tf.matmul(x, p[0]) + p[1]

    def heads(x):
        b, t = tf.shape(x)[0], tf.shape(x)[1]
        return tf.transpose(tf.reshape(x, [b, t, HEADS, WIDTH // HEADS]),
                            [0, 2, 1, 3])

    @tf.function(jit_compile="--xla" in argv)
    def train(x, y, n, lr):
        b, t = tf.shape(x)[0], tf.shape(x)[1]
        causal = tf.linalg.band_part(tf.ones([t, t], tf.bool), -1, 0)
        with tf.GradientTape() as tape:
            h = tf.gather(chars, x) + positions[:t]
            for p in blocks:
                a = layer_norm(h, p["ln1"])
                q, k, v = (heads(apply(a, p[m])) for m in "qkv")
                s = tf.matmul(q, k, transpose_b=True) * (WIDTH // HEADS) ** -0.5
                s = tf.where(causal, s, -1e30)
                o = tf.matmul(tf.nn.softmax(s), v)
                o = tf.reshape(tf.transpose(o, [0, 2, 1, 3]), [b, t, WIDTH])
                h = h + apply(o, p["o"])
                g = tf.nn.gelu(apply(layer_norm(h, p["ln2"]), p["fc1"]))
                h = h + apply(g, p["fc2"])
            logits = apply(tf.reshape(layer_norm(h, final), [-1, WIDTH]), out)
            nll = tf.nn.sparse_softmax_cross_entropy_with_logits(
                tf.reshape(y, [-1]), logits)
            mask = tf.range(t)[None, :] < tf.cast(n, tf.int32)[:, None]
            real = tf.cast(tf.reshape(mask, [-1]), tf.float32)
            loss = tf.reduce_sum(nll * real) / tf.reduce_sum(real)
        grads, _ = tf.clip_by_global_norm(tape.gradient(loss, params), CLIP)
        count.assign_add(1.0)
        c1, c2 = 1.0 - 0.9 ** count, 1.0 - 0.999 ** count
        for p, g, (m, v) in zip(params, grads, slots):
            g = tf.convert_to_tensor(g)
            p.assign_sub(lr * DECAY * p)
            m.assign(0.9 * m + 0.1 * g)
            v.assign(0.999 * v + 0.001 * g * g)
            p.assign_sub(lr * (m / c1) / (tf.sqrt(v / c2) + 1e-8))
        return loss

    rows, real, windows = streams(texts()[0], BATCH)
    stamps = []
    for i in range(steps):
        x, y, n = window(rows, real, i % windows)
        train(x, y, n, tf.constant(learning_rate(i, steps), tf.float32)).numpy()
        stamps.append(time.perf_counter())
    print(f"RESULT transformer {peer.step_time(stamps, TIMED_FROM):.9f}")


def run_runnel(build, threads, steps, extra=()):
    """Runnel's validation bpc and seconds per step (from its metrics)."""
    return peer.run_example(build, EXAMPLE, threads, steps, TIMED_FROM, extra)


def flops():
    """Matmul FLOPs of one step, forward and both gradients: the
    projections and the MLP of every block, the attention products (the
    full [time, time] squares, as the kernels compute them) and the output
    layer."""
    tokens = BATCH * CONTEXT
    per_block = 2 * tokens * (4 * WIDTH * WIDTH + 2 * WIDTH * HIDDEN) + \
        2 * 2 * BATCH * CONTEXT * CONTEXT * WIDTH
    return 3 * (BLOCKS * per_block + 2 * tokens * WIDTH * VOCAB)


def main(argv):
    build = argv[0] if argv and not argv[0].startswith("-") else "build"
    threads = peer.threads_arg(argv)
    rounds = peer.int_arg(argv, "--rounds", 3)
    steps = peer.int_arg(argv, "--steps", 2000)
    if "--no-train" not in argv and peer.compare_twin_bpc(
            "char transformer", os.path.abspath(__file__), threads, steps,
            lambda: run_runnel(build, threads, steps)[0]):
        return 1

    def runnel_side(_):
        return {"transformer": run_runnel(build, threads, BENCH_STEPS,
                                          ["--arg", "valid_windows=1"])[1]}

    script = [os.path.abspath(__file__), "--threads", str(threads), "--steps",
              str(BENCH_STEPS)]
    peers = [peer.torch_peer(script + ["--peer", "--valid-windows", "1"],
                             threads, [("", ()),
                                       ("torch.compile", ("--compile",))]),
             peer.tf_peer(script + ["--peer-tf"], threads,
                          [("", ()), ("XLA", ("--xla",))])]
    peer.compare("char transformer training step", threads, runnel_side,
                 peers, rounds,
                 {"transformer": f"{BLOCKS} blocks, width {WIDTH}, "
                  f"{HEADS} heads, context {CONTEXT}, batch {BATCH}, "
                  "AdamW, per step"},
                 flops={"transformer": flops()}, build_dir=build)
    return 0


if __name__ == "__main__":
    peer.dispatch(main, torch_main, tf_main)

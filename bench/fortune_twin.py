"""The PyTorch twin of examples/fortune_topics.rnl, a TensorFlow side for
its step time, and the comparison.

The twin trains the same topic classifier on the same data: the fortunes
of the same ten files of Debian's `fortunes` package, the same split
(fortune i of a file is a test fortune when i % 5 == 4), the same
tokenisation (ASCII letters and digits, lower-cased; interpreter/
text_builtins.cc), the same vocabulary and word ids (every training word,
the most frequent first, ties in byte order; unknown test words skipped),
the same batches in the same order (`batches(..., shuffle = true, seed =
epoch)`: Fisher-Yates driven by std::mt19937_64, reproduced below), the
same sizes, the same initialization scheme (embeddings U(-1/dim, 1/dim),
a Glorot-uniform dense layer with a zero bias), Adagrad with the same
learning rate and the same number of steps. The model is nn.EmbeddingBag
(mode="mean") and nn.Linear; the peer may use dense or sparse embedding
gradients, whichever is faster (Adagrad gives the same result with both).

    /usr/bin/python3 bench/fortune_twin.py BUILD_DIR [--epochs 20]
        [--seeds 3] [--threads 2] [--rounds 3] [--no-train]

It prints, from the same invocation:
  1. both models' test accuracy after full training, for each of `seeds`
     initializations (--seed N on both sides; the two draw different
     numbers from the same distributions), and the difference of the
     means, and fails (exit 1) when it is above 0.01. One seed's accuracy
     moves by about 0.005 on either side, so means of a few seeds compare
     the systems rather than two draws;
  2. the training step time of Runnel and of both peers over short runs
     (BENCH_STEPS steps), alternating rounds, each peer at its best
     configuration (bench/peer.py): PyTorch is the twin (--peer), with
     dense or sparse embedding gradients; TensorFlow (--peer-tf) trains
     the same model on the same batches, each bag the
     unsorted_segment_mean of a Keras Embedding's rows and a Keras Dense
     layer, Keras's Adagrad with the same accumulator start and eps, in a
     tf.function step, with sparse (IndexedSlices) or dense embedding
     gradients. Not with XLA: every batch has another number of words, so
     XLA would compile the step again for nearly every batch. Runnel's
     step time is read from the `time` of its --metrics lines (one per
     step, from `report`) between the 10th and the last step, so start-up,
     tokenising and the test do not count; the peers time the same steps
     the same way.
"""
import collections
import os
import re
import statistics
import subprocess
import sys
import time

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import peer  # noqa: E402  pylint: disable=wrong-import-position

HERE = os.path.dirname(os.path.abspath(__file__))
EXAMPLE = os.path.join(os.path.dirname(HERE), "examples", "fortune_topics.rnl")
DATA = "/usr/share/games/fortunes/"
CLASSES = ["art", "computers", "education", "food", "law", "literature",
           "medicine", "politics", "science", "sports"]
DIM, BATCH, LR, EPOCHS = 64, 64, 0.05, 20
TIMED_FROM = 10  # steps before this one are warm-up in the step timings
BENCH_STEPS = 300
LIMIT = 0.01


def arg(argv, name, fallback, kind=int):
    return kind(argv[argv.index(name) + 1]) if name in argv else fallback


# ---- the text builtins of interpreter/text_builtins.cc, in Python

def load_records(path, sep=b"%"):
    """Records between lines that are exactly `sep`; blank ones dropped."""
    with open(path, "rb") as fh:
        data = fh.read()
    if data.endswith(b"\n"):
        data = data[:-1]
    records, lines = [], []
    for line in data.split(b"\n") if data else []:
        bare = line[:-1] if line.endswith(b"\r") else line
        if bare == sep:
            records.append(b"\n".join(lines))
            lines = []
        else:
            lines.append(line)
    records.append(b"\n".join(lines))
    return [r for r in records if r.strip(b" \t\n\r\f\v")]


def words(text):
    return [w.lower() for w in re.findall(rb"[A-Za-z0-9]+", text)]


def vocabulary(texts):
    counts = collections.Counter(w for t in texts for w in words(t))
    return [w for w, _ in sorted(counts.items(), key=lambda kv: (-kv[1],
                                                                kv[0]))]


def encode(texts, vocab):
    ids = {w: i for i, w in enumerate(vocab)}
    return [[ids[w] for w in words(t) if w in ids] for t in texts]


def split():
    """(train texts, train labels, test texts, test labels)."""
    tr, ytr, te, yte = [], [], [], []
    for c, f in enumerate(CLASSES):
        r = load_records(os.path.join(DATA, f))
        train = r[0::5] + r[1::5] + r[2::5] + r[3::5]
        tr += train
        ytr += [c] * len(train)
        te += r[4::5]
        yte += [c] * len(r[4::5])
    return tr, ytr, te, yte


class MT19937_64:  # pylint: disable=invalid-name
    """std::mt19937_64, for the shuffled order of interpreter/data.cc."""
    MASK = (1 << 64) - 1

    def __init__(self, seed):
        self.mt = [seed & self.MASK]
        for i in range(1, 312):
            prev = self.mt[-1]
            self.mt.append((6364136223846793005 * (prev ^ (prev >> 62)) + i)
                           & self.MASK)
        self.i = 312

    def _twist(self):
        mt = self.mt
        for i in range(312):
            x = (mt[i] & ~((1 << 31) - 1) & self.MASK) | \
                (mt[(i + 1) % 312] & ((1 << 31) - 1))
            xa = x >> 1
            if x & 1:
                xa ^= 0xB5026F5AA96619E9
            mt[i] = mt[(i + 156) % 312] ^ xa
        self.i = 0

    def __call__(self):
        if self.i >= 312:
            self._twist()
        y = self.mt[self.i]
        self.i += 1
        y ^= (y >> 29) & 0x5555555555555555
        y ^= (y << 17) & 0x71D67FFFEDA60000
        y ^= (y << 37) & 0xFFF7EEE000000000
        y ^= y >> 43
        return y & self.MASK


def row_order(n, seed):
    """RowOrder(n, shuffle = true, seed) of interpreter/data.cc."""
    order = list(range(n))
    gen = MT19937_64((seed * 0x9E3779B97F4A7C15 + 1) & MT19937_64.MASK)
    top = MT19937_64.MASK
    for i in range(n - 1, 0, -1):
        bound = i + 1
        limit = top - top % bound
        while True:
            r = gen()
            if r < limit:
                break
        j = r % bound
        order[i], order[j] = order[j], order[i]
    return order


def data(epochs, steps):
    """The vocabulary, the training fortunes' word ids and labels, the test
    fortunes' and the training batches' rows in order (the first `steps`
    when steps > 0), drawn before training."""
    tr, ytr, te, yte = split()
    vocab = vocabulary(tr)
    batches = []
    for epoch in range(epochs):
        if 0 < steps <= len(batches):
            break  # the Python shuffle of an epoch takes a while
        order = row_order(len(tr), epoch)
        batches += [order[k:k + BATCH] for k in range(0, len(order), BATCH)]
    if steps > 0:
        batches = batches[:steps]
    return (vocab, encode(tr, vocab), ytr, encode(te, vocab), yte, batches)


def torch_main(argv):
    os.environ.setdefault("OMP_WAIT_POLICY", "PASSIVE")
    import torch  # pylint: disable=import-outside-toplevel
    torch.set_num_threads(peer.threads_arg(argv))
    epochs = arg(argv, "--epochs", EPOCHS)
    steps = arg(argv, "--steps", 0)
    lr = arg(argv, "--lr", LR, float)
    sparse = "--sparse" in argv
    torch.manual_seed(arg(argv, "--seed", 1))

    vocab, train_ids, ytr, test_ids, yte, batches = data(epochs, steps)
    bag = torch.nn.EmbeddingBag(len(vocab), DIM, mode="mean", sparse=sparse)
    torch.nn.init.uniform_(bag.weight, -1.0 / DIM, 1.0 / DIM)
    dense = torch.nn.Linear(DIM, len(CLASSES))
    torch.nn.init.xavier_uniform_(dense.weight)
    torch.nn.init.zeros_(dense.bias)
    opt = torch.optim.Adagrad(list(bag.parameters()) +
                              list(dense.parameters()), lr=lr)

    # The input of nn.EmbeddingBag: the ids of a batch's fortunes one after
    # another, and where each starts. Each fortune's ids are a tensor made
    # once (interpreted Python would otherwise slow the timed steps down).
    def bags(ids, rows):
        lengths = torch.tensor([len(ids[i]) for i in rows])
        return (torch.cat([ids[i] for i in rows]),
                torch.cumsum(lengths, 0) - lengths)

    train_t = [torch.tensor(r, dtype=torch.long) for r in train_ids]
    test_t = [torch.tensor(r, dtype=torch.long) for r in test_ids]
    ytr_t = torch.tensor(ytr)
    stamps = []
    for rows in batches:
        opt.zero_grad()
        loss = torch.nn.functional.cross_entropy(
            dense(bag(*bags(train_t, rows))), ytr_t[rows])
        loss.backward()
        opt.step()
        float(loss.detach())  # Runnel's step returns the loss to the host
        stamps.append(time.perf_counter())
    done = len(stamps)
    if done > TIMED_FROM + 1:
        print(f"RESULT fortune {peer.step_time(stamps, TIMED_FROM):.9f}")
    with torch.no_grad():
        pred = dense(bag(*bags(test_t, range(len(test_t))))).argmax(1)
    acc = float((pred == torch.tensor(yte)).float().mean())
    print(f"ACCURACY {acc:.6f} after {done} steps, {len(vocab)} words")


def tf_main(argv):
    """The TensorFlow side of the step timings: the same model, data,
    batches and steps as the twin's training (no test), each bag the
    unsorted_segment_mean of Keras Embedding rows (a sparse gradient, or
    with --dense-gradient a dense one), in a tf.function step."""
    os.environ["TF_CPP_MIN_LOG_LEVEL"] = "2"
    import numpy as np  # pylint: disable=import-outside-toplevel
    tf = peer.import_tf(argv)
    vocab, train_ids, ytr, _, _, batches = data(
        arg(argv, "--epochs", EPOCHS), arg(argv, "--steps", 0))
    embed = tf.keras.layers.Embedding(
        len(vocab), DIM, embeddings_initializer=tf.keras.initializers
        .RandomUniform(-1.0 / DIM, 1.0 / DIM))
    dense = tf.keras.layers.Dense(len(CLASSES))  # Glorot-uniform, zero bias
    # As torch.optim.Adagrad's (and optim.adagrad's) accumulator and eps.
    opt = tf.keras.optimizers.Adagrad(arg(argv, "--lr", LR, float),
                                      initial_accumulator_value=0.0,
                                      epsilon=1e-10)
    dense_gradient = "--dense-gradient" in argv

    @tf.function(input_signature=[tf.TensorSpec([None], tf.int32)] * 3)
    def train(ids, bag_of, y):
        with tf.GradientTape() as tape:
            # A fortune with no known word is the zero vector.
            bags = tf.math.unsorted_segment_mean(embed(ids), bag_of,
                                                 tf.shape(y)[0])
            loss = tf.reduce_mean(
                tf.nn.sparse_softmax_cross_entropy_with_logits(
                    y, dense(bags)))
        params = embed.trainable_variables + dense.trainable_variables
        grads = tape.gradient(loss, params)
        if dense_gradient:
            grads = [tf.convert_to_tensor(g) for g in grads]
        opt.apply_gradients(zip(grads, params))
        return loss

    train_np = [np.array(r, dtype=np.int32) for r in train_ids]
    ytr_np = np.array(ytr, dtype=np.int32)
    stamps = []
    for rows in batches:
        lengths = [len(train_ids[i]) for i in rows]
        train(np.concatenate([train_np[i] for i in rows]),
              np.repeat(np.arange(len(rows), dtype=np.int32), lengths),
              ytr_np[rows]).numpy()  # as Runnel, the loss to the host
        stamps.append(time.perf_counter())
    print(f"RESULT fortune {peer.step_time(stamps, TIMED_FROM):.9f}")


def run_runnel(build, threads, extra=()):
    """Runnel's test accuracy and seconds per step (from its metrics)."""
    out, times = peer.run_with_metrics(
        [os.path.join(build, "runnel"), "run", EXAMPLE, "--threads",
         str(threads)] + list(extra))
    acc = None
    for line in out.splitlines():
        if line.startswith("test accuracy "):
            acc = float(line.split()[2])
    return acc, peer.step_time(times, TIMED_FROM)


def main(argv):
    build = argv[0] if argv and not argv[0].startswith("-") else "build"
    threads = peer.threads_arg(argv)
    rounds = peer.int_arg(argv, "--rounds", 3)
    epochs = peer.int_arg(argv, "--epochs", EPOCHS)
    seeds = peer.int_arg(argv, "--seeds", 3)
    settings = (f"{len(CLASSES)} classes, bag of {DIM}-d word embeddings, "
                f"batch {BATCH}, Adagrad lr {LR}")
    if "--no-train" not in argv:
        print(f"fortune topics: {epochs} epochs on each side, {threads} "
              f"threads, seeds 1 to {seeds}; {settings}")
        env = peer.torch_configs(threads)[0]
        ours, twins = [], []
        for seed in range(1, seeds + 1):
            r = subprocess.run([peer.PYTHON, os.path.abspath(__file__),
                                "--peer", "--threads", str(threads),
                                "--epochs", str(epochs), "--seed", str(seed)],
                               env=env.environ(), stdout=subprocess.PIPE,
                               text=True, check=True)
            line = next(x for x in r.stdout.splitlines()
                        if x.startswith("ACCURACY "))
            twins.append(float(line.split()[1]))
            ours.append(run_runnel(build, threads, [
                "--arg", f"epochs={epochs}", "--seed", str(seed)])[0])
            print(f"  seed {seed}: test accuracy Runnel {ours[-1]:.4f}, "
                  f"PyTorch twin {twins[-1]:.4f} ({line[9:]})")
        diff = abs(statistics.mean(ours) - statistics.mean(twins))
        print(f"  test accuracy, mean of {seeds} seeds: Runnel "
              f"{statistics.mean(ours):.4f}, PyTorch twin "
              f"{statistics.mean(twins):.4f}, difference {diff:.4f} "
              f"(limit {LIMIT})")
        if diff > LIMIT:
            print(f"  FAIL: the difference is above {LIMIT}")
            return 1

    def runnel_side(_):
        return {"fortune": run_runnel(build, threads, [
            "--arg", f"steps={BENCH_STEPS}"])[1]}

    script = [os.path.abspath(__file__), "--threads", str(threads),
              "--steps", str(BENCH_STEPS)]
    peers = [peer.torch_peer(script + ["--peer"], threads, [
        ("dense embedding gradient", ()),
        ("sparse embedding gradient", ("--sparse",))]),
             peer.tf_peer(script + ["--peer-tf"], threads, [
                 ("sparse embedding gradient", ()),
                 ("dense embedding gradient", ("--dense-gradient",))])]
    peer.compare("fortune topics training step", threads, runnel_side,
                 peers, rounds, {"fortune": settings + ", per step"})
    return 0


if __name__ == "__main__":
    peer.dispatch(main, torch_main, tf_main)

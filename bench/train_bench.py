"""Training-step benchmark: the Fashion-MNIST MLP (Adam, batch 128) and the
tutorial CNN (SGD, batch 64), in Runnel (bench/train_*.rnl) and in PyTorch,
alternating in the same invocation with the same thread count, the peer at
its best configuration (bench/peer.py). Prints ms/step, the median of the
per-round ratios Runnel / PyTorch (lower is better for Runnel), and the
floor: the step's matmul and convolution FLOPs at the measured GEMM peak.

    /usr/bin/python3 bench/train_bench.py BUILD_DIR [--threads 2] [--rounds 6]
        [--only mlp|cnn]

Runnel's time per step is the difference between a long and a short run of
the same script, divided by the difference in steps, so start-up, graph
building and the first steps' allocations cancel out. PyTorch is timed in
its own process after warm-up steps (`--peer` runs that side)."""
import os
import subprocess
import sys
import time

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import peer  # noqa: E402  pylint: disable=wrong-import-position

HERE = os.path.dirname(os.path.abspath(__file__))
MLP_LAYERS = [(784, 256), (256, 128), (128, 10)]
MLP_BATCH, CNN_BATCH = 128, 64
# (output height, width, in channels, out channels, window) per convolution.
CNN_CONVS = [(28, 28, 1, 32, 5), (14, 14, 32, 64, 5)]
CNN_DENSE = [(7 * 7 * 64, 1024), (1024, 10)]
# Runnel steps of the short and long runs; PyTorch's timed steps.
STEPS = {"mlp": (50, 550, 300), "cnn": (5, 35, 30)}
DESCRIPTION = {"mlp": "MLP 784-256-128-10, Adam, batch 128",
               "cnn": "CNN tutorial, SGD, batch 64"}


def dense_flops(batch, layers):
    """Forward, weight gradients, and input gradients but the first's."""
    fwd = sum(2 * batch * i * o for i, o in layers)
    return 2 * fwd + sum(2 * batch * i * o for i, o in layers[1:])


def cnn_flops():
    conv = [2 * CNN_BATCH * h * w * k * k * c * o for h, w, c, o, k in
            CNN_CONVS]
    dense = dense_flops(CNN_BATCH, CNN_DENSE)
    # Forward, filter gradients, input gradients but the first layer's;
    # the dense layers after the convolutions need their input gradients.
    dx_first_dense = 2 * CNN_BATCH * CNN_DENSE[0][0] * CNN_DENSE[0][1]
    return 2 * sum(conv) + sum(conv[1:]) + dense + dx_first_dense


FLOPS = {"mlp": dense_flops(MLP_BATCH, MLP_LAYERS), "cnn": cnn_flops()}


# ---- the PyTorch side (run with --peer, in its own process) ----------------

def torch_main(argv):
    # Before torch loads OpenMP: spin-waiting fights OpenBLAS on 2 cores.
    os.environ.setdefault("OMP_WAIT_POLICY", "PASSIVE")
    import torch  # pylint: disable=import-outside-toplevel
    torch.set_num_threads(peer.threads_arg(argv))
    trial = "--trial" in argv
    channels_last = "--channels-last" in argv
    if "--no-mkldnn" in argv:
        torch.backends.mkldnn.enabled = False

    def mlp():
        layers = []
        for i, o in MLP_LAYERS:
            layers += [torch.nn.Linear(i, o), torch.nn.ReLU()]
        model = torch.nn.Sequential(*layers[:-1])
        opt = torch.optim.Adam(model.parameters(), lr=0.001)
        return model, opt, torch.rand(MLP_BATCH, 784), torch.randint(
            0, 10, (MLP_BATCH,))

    def cnn():
        model = torch.nn.Sequential(
            torch.nn.Conv2d(1, 32, 5, padding=2), torch.nn.ReLU(),
            torch.nn.MaxPool2d(2),
            torch.nn.Conv2d(32, 64, 5, padding=2), torch.nn.ReLU(),
            torch.nn.MaxPool2d(2),
            torch.nn.Flatten(), torch.nn.Linear(7 * 7 * 64, 1024),
            torch.nn.ReLU(), torch.nn.Linear(1024, 10))
        x = torch.rand(CNN_BATCH, 1, 28, 28)
        if channels_last:
            model = model.to(memory_format=torch.channels_last)
            x = x.contiguous(memory_format=torch.channels_last)
        opt = torch.optim.SGD(model.parameters(), lr=0.01)
        return model, opt, x, torch.randint(0, 10, (CNN_BATCH,))

    for name, make in (("mlp", mlp), ("cnn", cnn)):
        if name not in only(argv):
            continue
        model, opt, x, y = make()
        loss_fn = torch.nn.CrossEntropyLoss()

        def train(x, y):
            opt.zero_grad()
            loss_fn(model(x), y).backward()
            opt.step()
        if "--compile" in argv:
            train = torch.compile(train)

        def step():
            train(x, y)
        steps = STEPS[name][2] // (3 if trial else 1)
        for _ in range(max(3, steps // 10)):
            step()
        t = time.perf_counter()
        for _ in range(steps):
            step()
        print(f"RESULT {name} {(time.perf_counter() - t) / steps:.9f}")


# ---- the TensorFlow side (run with --peer-tf, in its own process) ----------

def tf_main(argv):
    tf = peer.import_tf(argv)
    trial = "--trial" in argv
    layers = tf.keras.layers

    def mlp():
        model = tf.keras.Sequential(
            [tf.keras.Input((784,))] +
            [layers.Dense(o, activation="relu") for _, o in MLP_LAYERS[:-1]] +
            [layers.Dense(MLP_LAYERS[-1][1])])
        return model, tf.keras.optimizers.Adam(0.001), \
            tf.random.uniform((MLP_BATCH, 784)), \
            tf.random.uniform((MLP_BATCH,), 0, 10, tf.int32)

    def cnn():
        model = tf.keras.Sequential([
            tf.keras.Input((28, 28, 1)),
            layers.Conv2D(32, 5, padding="same", activation="relu"),
            layers.MaxPooling2D(2),
            layers.Conv2D(64, 5, padding="same", activation="relu"),
            layers.MaxPooling2D(2), layers.Flatten(),
            layers.Dense(1024, activation="relu"), layers.Dense(10)])
        return model, tf.keras.optimizers.SGD(0.01), \
            tf.random.uniform((CNN_BATCH, 28, 28, 1)), \
            tf.random.uniform((CNN_BATCH,), 0, 10, tf.int32)

    for name, make in (("mlp", mlp), ("cnn", cnn)):
        if name not in only(argv):
            continue
        model, opt, x, y = make()
        loss_fn = tf.keras.losses.SparseCategoricalCrossentropy(
            from_logits=True)

        train = peer.tf_train_step(tf, model, opt, loss_fn, "--xla" in argv)
        steps = STEPS[name][2] // (3 if trial else 1)
        for _ in range(max(3, steps // 10)):
            train(x, y).numpy()
        t = time.perf_counter()
        for _ in range(steps):
            train(x, y)
        train(x, y).numpy()  # wait for the last step
        print(f"RESULT {name} {(time.perf_counter() - t) / (steps + 1):.9f}")


def only(argv):
    for i, a in enumerate(argv[:-1]):
        if a == "--only":
            return [argv[i + 1]]
    return ["mlp", "cnn"]


# ---- the driver -------------------------------------------------------------

def main(argv):
    build = argv[0] if argv and not argv[0].startswith("-") else \
        "build-release"
    threads = peer.threads_arg(argv)
    rounds = peer.int_arg(argv, "--rounds", 6)
    runnel = os.path.join(build, "runnel")
    names = only(argv)

    def runnel_side(_):
        out = {}
        for name in names:
            short, long, _ = STEPS[name]

            def wall(steps):
                t = time.perf_counter()
                subprocess.run([runnel, "run",
                                os.path.join(HERE, f"train_{name}.rnl"),
                                "--threads", str(threads), "--arg",
                                f"steps={steps}"], check=True)
                return time.perf_counter() - t
            out[name] = (wall(long) - wall(short)) / (long - short)
        return out

    script = [os.path.abspath(__file__), "--threads", str(threads)]
    for name in names:
        script += ["--only", name] if len(names) == 1 else []
    torch_variants = [("", ()), ("torch.compile", ("--compile",))]
    if "cnn" in names:
        torch_variants += [("channels_last", ("--channels-last",)),
                           ("channels_last, torch.compile",
                            ("--channels-last", "--compile")),
                           ("mkldnn off", ("--no-mkldnn",))]
    tf_variants = [("", ()), ("XLA", ("--xla",))]
    peers = [peer.torch_peer(script + ["--peer"], threads, torch_variants),
             peer.tf_peer(script + ["--peer-tf"], threads, tf_variants)]
    peer.compare("training steps", threads, runnel_side, peers, rounds,
                 {n: DESCRIPTION[n] for n in names},
                 trial_args=["--trial"], flops=FLOPS, build_dir=build)

if __name__ == "__main__":
    peer.dispatch(main, torch_main, tf_main)

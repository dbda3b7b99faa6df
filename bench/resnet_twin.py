"""The step time of examples/fashion_resnet.rnl against PyTorch and
TensorFlow twins (issue 33, item 9).

The twins train the same residual network on the same Fashion-MNIST
batches: a 3x3 stem of `width` channels, then three stages of two residual
blocks each (width, 2 * width and 4 * width channels; the second and third
stages start with a stride of 2 and a projected 1x1 shortcut), each block
conv-bn-relu-conv-bn plus its shortcut, then relu; convolutions without
bias, He-normal weights; global average pooling and a dense layer to the
10 classes. Batch norm in training mode (the batch's statistics, the moving
ones updated with Keras' momentum 0.9, PyTorch's 0.1), eps 1e-5. AdamW
(weight decay 0.05) with a linear warm-up over the first twentieth of the
steps and a cosine decay, batch 128, shuffled batches, each image flipped
left to right with probability 1/2 in the step.

    bench/resnet_twin.py BUILD_DIR [--threads 2] [--rounds 3]

Runnel's step time is read from the `time` of its --metrics lines between
the 10th and the last step; the peers time the same steps the same way.
PyTorch runs with and without channels_last and torch.compile, TensorFlow
with and without XLA; each keeps its fastest. Test accuracy is not
compared here: `make resnet-full` (docs/performance.md) trains the example
for its full run.
"""
import gzip
import math
import os
import sys
import time

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import peer  # noqa: E402  pylint: disable=wrong-import-position

HERE = os.path.dirname(os.path.abspath(__file__))
EXAMPLE = os.path.join(os.path.dirname(HERE), "examples", "fashion_resnet.rnl")
DATA = "/usr/share/datasets/fashion-mnist/"
WIDTH, BATCH, PEAK, DECAY = 16, 128, 0.003, 0.05
STAGES = [(WIDTH, 1), (WIDTH, 1), (2 * WIDTH, 2), (2 * WIDTH, 1),
          (4 * WIDTH, 2), (4 * WIDTH, 1)]
TIMED_FROM = 10
BENCH_STEPS = 30


def images_and_labels():
    """The training set as float32 [n, 28, 28, 1] in [0, 1] and int64
    labels, read from the idx files the example reads."""
    import numpy as np  # pylint: disable=import-outside-toplevel
    with gzip.open(DATA + "train-images-idx3-ubyte.gz") as f:
        x = np.frombuffer(f.read(), np.uint8, offset=16)
    with gzip.open(DATA + "train-labels-idx1-ubyte.gz") as f:
        y = np.frombuffer(f.read(), np.uint8, offset=8)
    return (x.reshape(-1, 28, 28, 1).astype(np.float32) / 255.0,
            y.astype(np.int64))


def batches(steps):
    """`steps` shuffled batches (a fixed seed), as NumPy arrays."""
    import numpy as np  # pylint: disable=import-outside-toplevel
    x, y = images_and_labels()
    order = np.random.default_rng(0).permutation(len(y))
    out = []
    for i in range(steps):
        idx = order[(i * BATCH) % (len(y) - BATCH):][:BATCH]
        out.append((x[idx], y[idx]))
    return out


def learning_rate(step, total):
    warmup = max(total // 20, 1)
    if step < warmup:
        return PEAK * step / warmup
    p = min(1.0, (step - warmup) / max(total - warmup, 1))
    return PEAK * 0.5 * (1.0 + math.cos(math.pi * p))


def flops():
    """Convolution and dense FLOPs of one training step (forward and both
    gradients: three times the forward's)."""
    size, channels = 28, WIDTH
    total = 2 * 28 * 28 * 1 * WIDTH * 9  # the stem
    for filters, strides in STAGES:
        out = size // strides
        total += 2 * out * out * channels * filters * 9      # conv a
        total += 2 * out * out * filters * filters * 9       # conv b
        if strides != 1 or channels != filters:
            total += 2 * out * out * channels * filters      # shortcut
        size, channels = out, filters
    total += 2 * channels * 10
    return 3 * BATCH * total


def torch_main(argv):
    os.environ.setdefault("OMP_WAIT_POLICY", "PASSIVE")
    import torch  # pylint: disable=import-outside-toplevel
    from torch import nn  # pylint: disable=import-outside-toplevel
    torch.set_num_threads(peer.threads_arg(argv))
    torch.manual_seed(1)
    steps = peer.int_arg(argv, "--steps", BENCH_STEPS)
    last = "--channels-last" in argv

    def conv_bn(c_in, c_out, size=3, stride=1):
        conv = nn.Conv2d(c_in, c_out, size, stride, padding=size // 2,
                         bias=False)
        nn.init.kaiming_normal_(conv.weight, nonlinearity="relu")
        return nn.Sequential(conv, nn.BatchNorm2d(c_out, eps=1e-5,
                                                  momentum=0.1))

    class Block(nn.Module):
        def __init__(self, c_in, c_out, stride):
            super().__init__()
            self.a, self.b = conv_bn(c_in, c_out, 3, stride), conv_bn(c_out, c_out)
            self.short = (conv_bn(c_in, c_out, 1, stride)
                          if stride != 1 or c_in != c_out else nn.Identity())

        def forward(self, h):
            return torch.relu(self.b(torch.relu(self.a(h))) + self.short(h))

    layers, c = [conv_bn(1, WIDTH), nn.ReLU()], WIDTH
    for filters, stride in STAGES:
        layers.append(Block(c, filters, stride))
        c = filters
    model = nn.Sequential(*layers, nn.AdaptiveAvgPool2d(1), nn.Flatten(),
                          nn.Linear(c, 10))
    if last:
        model = model.to(memory_format=torch.channels_last)
    forward = torch.compile(model) if "--compile" in argv else model
    opt = torch.optim.AdamW(model.parameters(), lr=PEAK, weight_decay=DECAY)
    loss_fn = nn.CrossEntropyLoss()
    data = [(torch.from_numpy(x).permute(0, 3, 1, 2).contiguous(
        memory_format=torch.channels_last if last else torch.contiguous_format),
        torch.from_numpy(y)) for x, y in batches(steps)]
    model.train()
    stamps = []
    for i, (x, y) in enumerate(data):
        for g in opt.param_groups:
            g["lr"] = learning_rate(i, steps)
        opt.zero_grad()
        flip = torch.rand(x.shape[0], 1, 1, 1) < 0.5
        loss_fn(forward(torch.where(flip, x.flip(3), x)), y).backward()
        opt.step()
        stamps.append(time.perf_counter())
    print(f"RESULT resnet {peer.step_time(stamps, TIMED_FROM):.9f}")


def tf_main(argv):
    tf = peer.import_tf(argv)
    steps = peer.int_arg(argv, "--steps", BENCH_STEPS)
    layers = tf.keras.layers
    tf.keras.utils.set_random_seed(1)

    def conv_bn(h, filters, size=3, stride=1):
        h = layers.Conv2D(filters, size, stride, padding="same", use_bias=False,
                          kernel_initializer="he_normal")(h)
        return layers.BatchNormalization(momentum=0.9, epsilon=1e-5)(h)

    inputs = tf.keras.Input((28, 28, 1))
    h = layers.ReLU()(conv_bn(inputs, WIDTH))
    c = WIDTH
    for filters, stride in STAGES:
        a = layers.ReLU()(conv_bn(h, filters, 3, stride))
        short = (conv_bn(h, filters, 1, stride)
                 if stride != 1 or c != filters else h)
        h = layers.ReLU()(layers.Add()([conv_bn(a, filters), short]))
        c = filters
    logits = layers.Dense(10)(layers.GlobalAveragePooling2D()(h))
    model = tf.keras.Model(inputs, logits)
    opt = tf.keras.optimizers.AdamW(learning_rate=PEAK, weight_decay=DECAY)
    loss = tf.keras.losses.SparseCategoricalCrossentropy(from_logits=True)
    train = peer.tf_train_step(tf, model, opt, loss, xla="--xla" in argv)

    @tf.function(jit_compile="--xla" in argv)
    def flipped(x):
        flip = tf.random.uniform([tf.shape(x)[0], 1, 1, 1]) < 0.5
        return tf.where(flip, x[:, :, ::-1, :], x)

    def step(x, y):
        return train(flipped(x), y)
    stamps = []
    for i, (x, y) in enumerate(batches(steps)):
        opt.learning_rate.assign(learning_rate(i, steps))
        step(tf.constant(x), tf.constant(y)).numpy()
        stamps.append(time.perf_counter())
    print(f"RESULT resnet {peer.step_time(stamps, TIMED_FROM):.9f}")


def main(argv):
    build = argv[0] if argv and not argv[0].startswith("-") else "build"
    threads = peer.threads_arg(argv)
    rounds = peer.int_arg(argv, "--rounds", 3)

    def runnel_side(_):
        return {"resnet": peer.run_example(
            build, EXAMPLE, threads, BENCH_STEPS, TIMED_FROM,
            ["--arg", "epochs=1"])[1]}

    script = [os.path.abspath(__file__), "--threads", str(threads), "--steps",
              str(BENCH_STEPS)]
    peers = [peer.torch_peer(script + ["--peer"], threads,
                             [("", ()), ("channels_last", ("--channels-last",)),
                              ("torch.compile", ("--compile",)),
                              ("channels_last, torch.compile",
                               ("--channels-last", "--compile"))]),
             peer.tf_peer(script + ["--peer-tf"], threads,
                          [("", ()), ("XLA", ("--xla",))])]
    peer.compare("Fashion ResNet training step", threads, runnel_side, peers,
                 rounds,
                 {"resnet": f"ResNet (3 stages of 2 blocks, width {WIDTH}, "
                            f"batch norm), batch {BATCH}, AdamW, per step"},
                 flops={"resnet": flops()}, build_dir=build)
    return 0


if __name__ == "__main__":
    peer.dispatch(main, torch_main, tf_main)

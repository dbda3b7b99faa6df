"""ops_bench's peers and driver: the training steps' heavy ops one at a
time, in PyTorch channels-last (the layout of Runnel's NHWC) and in
TensorFlow NHWC (eager, each op in its own tf.function, and with XLA).

    /usr/bin/python3 bench/ops_peer.py --compare build-release/ops_bench
        [--threads 2] [--rounds 6]

compares (build-release/ops_bench does this itself); `--peer` runs the
PyTorch side alone and `--peer-tf` the TensorFlow side; each prints
`RESULT <op> <seconds>`, the median of 20 calls. Convolution gradients are
aten.convolution_backward with one output asked for, and TensorFlow's own
gradient ops (Conv2DBackpropInput, Conv2DBackpropFilter, MaxPoolGrad), as
Runnel computes each in its own op. The char transformer's ops follow:
causal attention (PyTorch's flash attention for the CPU and its backward
op; TensorFlow, which has no fused attention, its matmuls, mask and softmax
and their gradients from a tape, the forward pass included, as Runnel's
gradient op recomputes the probabilities), gelu's gradient, and a bias's
(TensorFlow's BiasAddGrad).
"""
import os
import statistics
import sys
import time

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import peer  # noqa: E402  pylint: disable=wrong-import-position

# op: description, FLOPs (0: no floor, nothing is multiplied).
CONV1 = 2 * 64 * 28 * 28 * 32 * 25
CONV2 = 2 * 64 * 14 * 14 * 64 * 800
ATT = 2 * 2 * 32 * 4 * 128 * 128 * 32  # q k^T and p v
FC = 2 * 4096 * 128 * 512
OPS = {
    "conv1": ("conv2d 28x28x1 -> 32, 5x5, batch 64", CONV1),
    "conv1_dw": ("  its filter gradient", CONV1),
    "pool1": ("max_pool 2x2 of 64x28x28x32", 0),  # no multiply-adds
    "pool1_dx": ("  its gradient", 0),
    "conv2": ("conv2d 14x14x32 -> 64, 5x5, batch 64", CONV2),
    "conv2_dx": ("  its input gradient", CONV2),
    "conv2_dw": ("  its filter gradient", CONV2),
    "fc1": ("matmul 64x3136 @ 3136x1024", 2 * 64 * 3136 * 1024),
    "fc1_dw": ("  its weight gradient, x^T @ dy", 2 * 64 * 3136 * 1024),
    "fc1_dx": ("  its input gradient, dy @ w^T", 2 * 64 * 3136 * 1024),
    "mlp1": ("matmul 128x784 @ 784x256", 2 * 128 * 784 * 256),
    "mlp1_dw": ("  its weight gradient", 2 * 128 * 784 * 256),
    # The char transformer's (floor: the full square of scores; causal
    # attention needs about half).
    "att": ("causal attention, 32x4 heads of 128x32", ATT),
    "att_grad": ("  its gradients (dq, dk, dv)", 5 * ATT // 2),
    "gelu_grad": ("gelu's gradient over 4096x512", 0),
    "bias_grad": ("a bias' gradient: 4096x512 summed over rows", 0),
    # Its MLP's products over 32 x 128 rows: fc1 128 -> 512, fc2 512 -> 128.
    "tf_fc1": ("matmul 4096x128 @ 128x512", FC),
    "tf_fc1_dx": ("  its input gradient, dy @ w^T", FC),
    "tf_fc1_dw": ("  its weight gradient, x^T @ dy", FC),
    "tf_fc2": ("matmul 4096x512 @ 512x128", FC),
    "tf_fc2_dx": ("  its input gradient, dy @ w^T", FC),
    "tf_fc2_dw": ("  its weight gradient, x^T @ dy", FC),
}


def torch_main(argv):
    # Before torch loads OpenMP: spin-waiting fights OpenBLAS on 2 cores.
    os.environ.setdefault("OMP_WAIT_POLICY", "PASSIVE")
    import torch  # pylint: disable=import-outside-toplevel
    import torch.nn.functional as F  # pylint: disable=import-outside-toplevel
    torch.set_num_threads(peer.threads_arg(argv))
    cl = torch.channels_last
    aten = torch.ops.aten

    def nchw(n, c, h, w):
        return torch.rand(n, c, h, w).contiguous(memory_format=cl) - 0.5

    def conv_grad(x, w, dy, mask):
        return lambda: aten.convolution_backward(
            dy, x, w, None, [1, 1], [2, 2], [1, 1], False, [0, 0], 1, mask)

    x1, w1, dy1 = nchw(64, 1, 28, 28), nchw(32, 1, 5, 5), nchw(64, 32, 28, 28)
    x2, w2, dy2 = nchw(64, 32, 14, 14), nchw(64, 32, 5, 5), nchw(64, 64, 14, 14)
    p1 = nchw(64, 32, 28, 28)
    _, idx = aten.max_pool2d_with_indices(p1, [2, 2], [2, 2])
    dp = nchw(64, 32, 14, 14)
    a, w, dy = torch.rand(64, 3136), torch.rand(3136, 1024), torch.rand(64, 1024)
    m, mw, mdy = torch.rand(128, 784), torch.rand(784, 256), torch.rand(128, 256)
    q, k, v, dout = (torch.rand(32, 4, 128, 32) - 0.5 for _ in range(4))
    flash = aten._scaled_dot_product_flash_attention_for_cpu
    out, lse = flash(q, k, v, 0.0, True)[:2]
    gx, gdy = torch.rand(4096, 512) - 0.5, torch.rand(4096, 512) - 0.5
    n128, w1t, w2t = torch.rand(4096, 128), torch.rand(128, 512), torch.rand(512, 128)
    calls = {
        "conv1": lambda: F.conv2d(x1, w1, padding=2),
        "conv1_dw": conv_grad(x1, w1, dy1, [False, True, False]),
        "pool1": lambda: aten.max_pool2d_with_indices(p1, [2, 2], [2, 2]),
        "pool1_dx": lambda: aten.max_pool2d_with_indices_backward(
            dp, p1, [2, 2], [2, 2], [0, 0], [1, 1], False, idx),
        "conv2": lambda: F.conv2d(x2, w2, padding=2),
        "conv2_dx": conv_grad(x2, w2, dy2, [True, False, False]),
        "conv2_dw": conv_grad(x2, w2, dy2, [False, True, False]),
        "fc1": lambda: torch.mm(a, w),
        "fc1_dw": lambda: torch.mm(a.t(), dy),
        "fc1_dx": lambda: torch.mm(dy, w.t()),
        "mlp1": lambda: torch.mm(m, mw),
        "mlp1_dw": lambda: torch.mm(m.t(), mdy),
        "att": lambda: F.scaled_dot_product_attention(q, k, v, is_causal=True),
        "att_grad": lambda: aten._scaled_dot_product_flash_attention_for_cpu_backward(
            dout, q, k, v, out, lse, 0.0, True),
        "gelu_grad": lambda: aten.gelu_backward(gdy, gx),
        "bias_grad": lambda: gdy.sum(0),
        "tf_fc1": lambda: torch.mm(n128, w1t),
        "tf_fc1_dx": lambda: torch.mm(gdy, w1t.t()),
        "tf_fc1_dw": lambda: torch.mm(n128.t(), gdy),
        "tf_fc2": lambda: torch.mm(gx, w2t),
        "tf_fc2_dx": lambda: torch.mm(n128, w2t.t()),
        "tf_fc2_dw": lambda: torch.mm(gx.t(), n128),
    }
    time_calls(calls)


def time_calls(calls, wait=lambda r: r):
    """Prints the median seconds of 20 calls of each op in OPS after 3
    warm-up calls; `wait` is applied to each result, so a call ends when
    its work is done."""
    for name in OPS:
        f = calls[name]
        for _ in range(3):
            wait(f())
        t = []
        for _ in range(20):
            t0 = time.perf_counter()
            wait(f())
            t.append(time.perf_counter() - t0)
        print(f"RESULT {name} {statistics.median(t):.9f}")


def tf_main(argv):
    tf = peer.import_tf(argv)
    raw = tf.raw_ops
    g = tf.random.Generator.from_seed(0)

    def rand(*shape):
        return g.uniform(shape) - 0.5

    one, two = [1, 1, 1, 1], [1, 2, 2, 1]

    def conv(x, w):
        return lambda: tf.nn.conv2d(x, w, 1, "SAME")

    def conv_dx(x, w, dy):
        return lambda: raw.Conv2DBackpropInput(
            input_sizes=x.shape, filter=w, out_backprop=dy, strides=one,
            padding="SAME")

    def conv_dw(x, w, dy):
        return lambda: raw.Conv2DBackpropFilter(
            input=x, filter_sizes=w.shape, out_backprop=dy, strides=one,
            padding="SAME")

    x1, w1, dy1 = rand(64, 28, 28, 1), rand(5, 5, 1, 32), rand(64, 28, 28, 32)
    x2, w2 = rand(64, 14, 14, 32), rand(5, 5, 32, 64)
    dy2 = rand(64, 14, 14, 64)
    p1, dp = rand(64, 28, 28, 32), rand(64, 14, 14, 32)
    pooled = tf.nn.max_pool2d(p1, 2, 2, "VALID")
    a, w, dy = rand(64, 3136), rand(3136, 1024), rand(64, 1024)
    m, mw, mdy = rand(128, 784), rand(784, 256), rand(128, 256)
    mm = tf.linalg.matmul
    q, k, v, dout = (rand(32, 4, 128, 32) for _ in range(4))
    causal = tf.linalg.band_part(tf.ones([128, 128], tf.bool), -1, 0)
    gx, gdy = rand(4096, 512), rand(4096, 512)
    n128, w1t, w2t = rand(4096, 128), rand(128, 512), rand(512, 128)

    def att(q, k, v):
        s = mm(q, k, transpose_b=True) * 32 ** -0.5
        return mm(tf.nn.softmax(tf.where(causal, s, -1e30)), v)

    def att_grad():
        with tf.GradientTape() as tape:
            tape.watch([q, k, v])
            o = att(q, k, v)
        return tape.gradient(o, [q, k, v], output_gradients=dout)[0]

    def gelu_grad():
        phi = tf.exp(-0.5 * gx * gx) * 0.3989422804014327
        return gdy * (0.5 * (1.0 + tf.math.erf(gx * 0.7071067811865476)) +
                      gx * phi)

    calls = {
        "conv1": conv(x1, w1),
        "conv1_dw": conv_dw(x1, w1, dy1),
        "pool1": lambda: tf.nn.max_pool2d(p1, 2, 2, "VALID"),
        "pool1_dx": lambda: raw.MaxPoolGrad(
            orig_input=p1, orig_output=pooled, grad=dp, ksize=two,
            strides=two, padding="VALID"),
        "conv2": conv(x2, w2),
        "conv2_dx": conv_dx(x2, w2, dy2),
        "conv2_dw": conv_dw(x2, w2, dy2),
        "fc1": lambda: mm(a, w),
        "fc1_dw": lambda: mm(a, dy, transpose_a=True),
        "fc1_dx": lambda: mm(dy, w, transpose_b=True),
        "mlp1": lambda: mm(m, mw),
        "mlp1_dw": lambda: mm(m, mdy, transpose_a=True),
        "att": lambda: att(q, k, v),
        "att_grad": att_grad,
        "gelu_grad": gelu_grad,
        "bias_grad": lambda: raw.BiasAddGrad(out_backprop=gdy),
        "tf_fc1": lambda: mm(n128, w1t),
        "tf_fc1_dx": lambda: mm(gdy, w1t, transpose_b=True),
        "tf_fc1_dw": lambda: mm(n128, gdy, transpose_a=True),
        "tf_fc2": lambda: mm(gx, w2t),
        "tf_fc2_dx": lambda: mm(n128, w2t, transpose_b=True),
        "tf_fc2_dw": lambda: mm(gx, n128, transpose_a=True),
    }
    if "--function" in argv or "--xla" in argv:
        calls = {n: tf.function(f, jit_compile="--xla" in argv)
                 for n, f in calls.items()}
    time_calls(calls, lambda r: r.numpy())


def main(argv):
    peer.drive_binary("training ops, one at a time", argv, __file__,
                      {n: f"{n:9} {d}" for n, (d, _) in OPS.items()},
                      tf_variants=[("eager", ()),
                                   ("tf.function", ("--function",)),
                                   ("XLA", ("--xla",))],
                      flops={n: f for n, (_, f) in OPS.items()})


if __name__ == "__main__":
    peer.dispatch(main, torch_main, tf_main)

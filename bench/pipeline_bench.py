"""The input pipeline against host feeding and against the peers' input
pipelines (docs/queues.md): the step time of the Fashion-MNIST MLP
(784-256-128-10, Adam, batch 128) when its batches come from a shuffling
queue fed by two runner threads that read and decode the IDX files in the
graph (examples/fashion_pipeline.rnl), against the same model fed from the
host, each step's batch gathered from the loaded arrays and passed with
`run ... with` (examples/fashion_mlp.rnl), and against the peers training
the same MLP from the same IDX arrays through their own input pipelines:
TensorFlow's tf.data (shuffled, batched, decoded in parallel map calls,
prefetched; the step a tf.function, with and without XLA) and a PyTorch
DataLoader (shuffled, decoded in its collate function, num_workers 0 and
2). `--peer` and `--peer-tf` run the peers' sides.

    /usr/bin/python3 bench/pipeline_bench.py BUILD_DIR [--threads 2]
        [--rounds 5] [--steps 400]

Every side reports once per step; a step's time is the mean over the steps
after the first WARM (start-up, loading and the first fill excluded).
bench/peer.py tunes the peers, alternates rounds and reports the medians
and the median of per-round ratios of Runnel's pipeline against the best
peer; the ratio pipeline / host-fed (below 1 the pipeline is faster)
follows.
"""
import gzip
import json
import os
import statistics
import subprocess
import sys
import tempfile
import time

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import peer  # noqa: E402  pylint: disable=wrong-import-position

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
SCRIPTS = {
    "host-fed": os.path.join(ROOT, "examples", "fashion_mlp.rnl"),
    "pipeline": os.path.join(ROOT, "examples", "fashion_pipeline.rnl"),
}
DATA = "/usr/share/datasets/fashion-mnist/"
WARM, BATCH = 50, 128


def step_time(runnel, script, threads, steps):
    with tempfile.TemporaryDirectory() as tmp:
        metrics = os.path.join(tmp, "m.jsonl")
        subprocess.run([runnel, "run", script, "--threads", str(threads),
                        "--metrics", metrics, "--arg", "epochs=1",
                        "--arg", f"steps={steps}"], check=True,
                       stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
        with open(metrics, encoding="utf-8") as f:
            lines = [json.loads(line) for line in f]
    t = [m["time"] for m in lines if "loss" in m]
    assert len(t) == steps, (script, len(t))
    return (t[-1] - t[WARM - 1]) / (len(t) - WARM)


def load_idx():
    """The training images (uint8, N x 784) and labels (uint8, N) from the
    IDX files the Runnel scripts read."""
    import numpy as np  # pylint: disable=import-outside-toplevel

    def read(name, header):
        with gzip.open(DATA + name) as f:
            return np.frombuffer(f.read(), np.uint8, offset=header)
    return (read("train-images-idx3-ubyte.gz", 16).reshape(-1, 784),
            read("train-labels-idx1-ubyte.gz", 8))


def time_steps(argv, batches, step, wait):
    """Prints RESULT pipeline: seconds per step of step(x, y) on the first
    --steps of `batches` (half as many, at least WARM + 50, with --trial),
    after the first WARM; `wait` is applied to the last step's result."""
    steps = peer.int_arg(argv, "--steps", 400)
    if "--trial" in argv:
        steps = max(WARM + 50, steps // 2)
    it = iter(batches)
    for _ in range(WARM):
        r = step(*next(it))
    wait(r)
    t0 = time.perf_counter()
    for _ in range(steps - WARM):
        r = step(*next(it))
    wait(r)
    print(f"RESULT pipeline {(time.perf_counter() - t0) / (steps - WARM):.9f}")


def torch_main(argv):
    # Before torch loads OpenMP: spin-waiting fights OpenBLAS on 2 cores.
    os.environ.setdefault("OMP_WAIT_POLICY", "PASSIVE")
    import torch  # pylint: disable=import-outside-toplevel
    from torch.utils import data  # pylint: disable=import-outside-toplevel
    torch.set_num_threads(peer.threads_arg(argv))
    images, labels = load_idx()
    dataset = data.TensorDataset(torch.from_numpy(images.copy()),
                                 torch.from_numpy(labels.astype("int64")))
    loader = data.DataLoader(
        dataset, batch_size=BATCH, shuffle=True, drop_last=True,
        num_workers=peer.int_arg(argv, "--workers", 0), collate_fn=decode,
        generator=torch.Generator().manual_seed(0))
    model = torch.nn.Sequential(
        torch.nn.Linear(784, 256), torch.nn.ReLU(), torch.nn.Linear(256, 128),
        torch.nn.ReLU(), torch.nn.Linear(128, 10))
    opt = torch.optim.Adam(model.parameters(), lr=0.001)
    loss_fn = torch.nn.CrossEntropyLoss()

    def step(x, y):
        opt.zero_grad()
        loss = loss_fn(model(x), y)
        loss.backward()
        opt.step()
        return loss
    time_steps(argv, loader, step, lambda r: r.item())


def decode(samples):
    """DataLoader's collate: the batch's images as f32 in [0, 1] (in the
    workers when there are any), and its labels."""
    import torch  # pylint: disable=import-outside-toplevel
    x = torch.stack([s[0] for s in samples]).float().div_(255.0)
    return x, torch.stack([s[1] for s in samples])


def tf_main(argv):
    tf = peer.import_tf(argv)
    images, labels = load_idx()
    auto = tf.data.AUTOTUNE
    batches = (tf.data.Dataset.from_tensor_slices((images, labels))
               .shuffle(10000, seed=0).repeat()
               .batch(BATCH, drop_remainder=True)
               .map(lambda x, y: (tf.cast(x, tf.float32) / 255.0,
                                  tf.cast(y, tf.int32)),
                    num_parallel_calls=auto)
               .prefetch(auto))
    layers = tf.keras.layers
    model = tf.keras.Sequential([
        tf.keras.Input((784,)), layers.Dense(256, activation="relu"),
        layers.Dense(128, activation="relu"), layers.Dense(10)])
    opt = tf.keras.optimizers.Adam(0.001)
    loss_fn = tf.keras.losses.SparseCategoricalCrossentropy(from_logits=True)

    step = peer.tf_train_step(tf, model, opt, loss_fn, "--xla" in argv)
    time_steps(argv, batches, step, lambda r: r.numpy())


def main(argv):
    if not argv or argv[0].startswith("--"):
        sys.exit(__doc__)
    runnel = os.path.join(argv[0], "runnel")
    threads = peer.threads_arg(argv)
    rounds = peer.int_arg(argv, "--rounds", 5)
    steps = peer.int_arg(argv, "--steps", 400)
    host_fed = []

    def runnel_side(_):
        """The pipeline's step, for the comparison; the host-fed step's,
        Runnel's alone, is kept for the pipeline / host-fed ratio."""
        host_fed.append(step_time(runnel, SCRIPTS["host-fed"], threads,
                                  steps))
        return {"pipeline": step_time(runnel, SCRIPTS["pipeline"], threads,
                                      steps)}

    script = [os.path.abspath(__file__), "--threads", str(threads),
              "--steps", str(steps)]
    peers = [peer.torch_peer(script + ["--peer"], threads,
                             [(f"num_workers {n}", ("--workers", str(n)))
                              for n in (0, 2)]),
             peer.tf_peer(script + ["--peer-tf"], threads,
                          [("tf.function", ()), ("XLA", ("--xla",))])]
    ours, _ = peer.compare(
        "input pipeline", threads, runnel_side, peers, rounds,
        {"pipeline": f"Fashion MLP step (batch {BATCH}) fed by the input "
                     "pipeline: Runnel's queue, tf.data, DataLoader"},
        trial_args=["--trial"])
    ratios = [a / b for a, b in zip(ours["pipeline"], host_fed)]
    print(f"  Runnel host-fed median "
          f"{peer.fmt_time(statistics.median(host_fed))}; pipeline / "
          f"host-fed: median ratio {statistics.median(ratios):.2f}")


if __name__ == "__main__":
    peer.dispatch(main, torch_main, tf_main)

"""The peers' side of bench/sparse_bench.py: the embedding step of
bench/sparse_step.rnl (a batch of ids, a DIM-vector per id, loss
mean((e - 1)^2), SGD lr 0.1) on tables of each of SIZES rows, updating
only the rows looked up (sparse) or, as without sparse updates, the whole
table from a densified gradient (dense).

    python sparse_peer.py --peer --threads N [--dense] [--trial]
        PyTorch: nn.Embedding(sparse=True), or with --dense (sparse=False);
        torch.optim.SGD
    python sparse_peer.py --peer-tf --threads N --intra N --inter M [--xla]
        [--dense] [--trial]
        TensorFlow: a tf.Variable table, tf.gather under a GradientTape in a
        tf.function (with XLA: jit_compile); the IndexedSlices gradient is
        applied with scatter_sub (what SGD does with it), or densified and
        subtracted from the whole table

Prints `RESULT <sparse|dense>_<size> <seconds per step>` (sparse_1e5, ...).
One table lives at a time: the 10^7-row one is 2.56 GB.
"""
import os
import sys
import time

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import peer  # noqa: E402  pylint: disable=wrong-import-position
from sparse_bench import (  # noqa: E402  pylint: disable=wrong-import-position
    BATCH, DIM, LR, SIZES, steps_for, workload)


def time_steps(name, steps, step, wait=lambda r: r):
    """Prints the seconds per step of `steps` calls of step(i) after a
    quarter as many warm-up calls (1 to 5); `wait` is applied to the last
    result."""
    for i in range(min(5, max(1, steps // 4))):
        wait(step(i))
    t0 = time.perf_counter()
    for i in range(steps):
        r = step(i)
    wait(r)
    print(f"RESULT {name} {(time.perf_counter() - t0) / steps:.9f}",
          flush=True)


def runs(argv):
    """(workload name, vocab, dense, steps) for each step to time: the
    sparse ones, or with --dense the dense ones."""
    dense = "--dense" in argv
    for vocab in SIZES:
        steps = steps_for(dense, vocab)
        if "--trial" in argv:
            steps = max(2, steps // 4)
        yield workload(dense, vocab), vocab, dense, steps


def torch_main(argv):
    # Before torch loads OpenMP: spin-waiting fights OpenBLAS on 2 cores.
    os.environ.setdefault("OMP_WAIT_POLICY", "PASSIVE")
    import torch  # pylint: disable=import-outside-toplevel
    torch.set_num_threads(peer.threads_arg(argv))
    for name, vocab, dense, steps in runs(argv):
        emb = torch.nn.Embedding(vocab, DIM, sparse=not dense)
        with torch.no_grad():
            emb.weight.zero_()
        opt = torch.optim.SGD(emb.parameters(), lr=LR)
        g = torch.Generator().manual_seed(3)
        ids = torch.randint(0, vocab, (8, BATCH), generator=g)

        def step(i, emb=emb, opt=opt, ids=ids):
            opt.zero_grad(set_to_none=True)
            loss = ((emb(ids[i % 8]) - 1.0) ** 2).mean()
            loss.backward()
            opt.step()
        time_steps(name, steps, step)
        del emb, opt


def tf_main(argv):
    tf = peer.import_tf(argv)
    for name, vocab, dense, steps in runs(argv):
        table = tf.Variable(tf.zeros((vocab, DIM)))
        ids = tf.random.stateless_uniform((8, BATCH), (3, 0), 0, vocab,
                                          tf.int32)

        @tf.function(jit_compile="--xla" in argv)
        def train(batch, table=table, dense=dense):
            with tf.GradientTape() as tape:
                loss = tf.reduce_mean((tf.gather(table, batch) - 1.0) ** 2)
            grad = tape.gradient(loss, table)  # IndexedSlices
            if dense:
                table.assign_sub(LR * tf.convert_to_tensor(grad))
            else:
                table.scatter_sub(tf.IndexedSlices(
                    LR * grad.values, grad.indices, grad.dense_shape))
            return loss
        time_steps(name, steps, lambda i, t=train: t(ids[i % 8]),
                   lambda r: r.numpy())
        del table, train


if __name__ == "__main__":
    if "--peer-tf" in sys.argv:
        tf_main(sys.argv[1:])
    else:
        torch_main(sys.argv[1:])

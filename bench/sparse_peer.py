"""PyTorch's side of bench/sparse_bench.py: the embedding step of
bench/sparse_step.rnl (a batch of ids, a `dim`-vector per id, loss
mean((e - 1)^2), SGD lr 0.1) on nn.Embedding(sparse=True), or with
sparse=False (a dense gradient and update). Prints the seconds per step.

    python3 sparse_peer.py VOCAB DIM BATCH STEPS THREADS sparse|dense
"""
import os
import sys
import time

os.environ.setdefault("OMP_WAIT_POLICY", "PASSIVE")
import torch  # noqa: E402  pylint: disable=wrong-import-position


def main():
    vocab, dim, batch, steps, threads = (int(a) for a in sys.argv[1:6])
    sparse = sys.argv[6] == "sparse"
    torch.set_num_threads(threads)
    emb = torch.nn.Embedding(vocab, dim, sparse=sparse)
    with torch.no_grad():
        emb.weight.zero_()
    opt = torch.optim.SGD(emb.parameters(), lr=0.1)
    g = torch.Generator().manual_seed(3)
    ids = torch.randint(0, vocab, (8, batch), generator=g)

    def one(i):
        opt.zero_grad(set_to_none=True)
        loss = ((emb(ids[i % 8]) - 1.0) ** 2).mean()
        loss.backward()
        opt.step()

    for i in range(5):
        one(i)
    t0 = time.perf_counter()
    for i in range(steps):
        one(i)
    print(f"RESULT step {(time.perf_counter() - t0) / steps:.9f}")


if __name__ == "__main__":
    main()

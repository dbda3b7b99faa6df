"""PyTorch's side of bench/cluster_bench.py, on loopback:

    cluster_peer.py null W STEPS THREADS   torch.distributed.rpc: W worker
        processes each call rpc_sync on a parameter-server process that adds
        1 to a counter (the null step); prints RESULT null <s per step>
        per worker.
    cluster_peer.py ddp W STEPS THREADS    DistributedDataParallel (gloo):
        W processes train the Fashion MLP (784-256-128-10, batch 128 each,
        Adam) on a fixed random batch; prints RESULT ddp <steps per s> per
        worker.
    cluster_peer.py fetch MB STEPS THREADS   torch.distributed.rpc: one
        worker fetches an MB-megabyte f32 tensor from a ps process with
        rpc_sync and sums it; prints RESULT fetch <s per fetch>, then
        RESULT sum <s per sum of a local tensor of that size>.
"""
import os
import socket
import sys
import time

# OpenMP's default spin-waiting fights OpenBLAS's threads on a small
# machine and inflates every time; cluster_bench.py passes the policy it
# tuned, and a direct run gets the passive one.
os.environ.setdefault("OMP_WAIT_POLICY", "PASSIVE")

import torch  # noqa: E402  pylint: disable=wrong-import-position
import torch.distributed as dist  # noqa: E402  pylint: disable=wrong-import-position
import torch.multiprocessing as mp  # noqa: E402  pylint: disable=wrong-import-position

COUNTER = [0.0]


def bump():
    COUNTER[0] += 1.0
    return COUNTER[0]


def result(name, value):
    # One write: the processes share stdout, and lines must not mix.
    os.write(1, f"RESULT {name} {value}\n".encode())


def free_port():
    s = socket.socket()
    s.bind(("127.0.0.1", 0))
    port = s.getsockname()[1]
    s.close()
    return port


def null_task(rank, workers, steps, threads, port):
    import torch.distributed.rpc as rpc  # pylint: disable=import-outside-toplevel
    torch.set_num_threads(threads)
    opts = rpc.TensorPipeRpcBackendOptions(
        num_worker_threads=8, init_method=f"tcp://127.0.0.1:{port}")
    name = "ps" if rank == 0 else f"worker{rank}"
    rpc.init_rpc(name, rank=rank, world_size=workers + 1,
                 rpc_backend_options=opts)
    if rank > 0:
        for _ in range(10):
            rpc.rpc_sync("ps", bump)
        t = time.perf_counter()
        for _ in range(steps):
            rpc.rpc_sync("ps", bump)
        result("null", (time.perf_counter() - t) / steps)
    rpc.shutdown()


BIG = []


def big():
    return BIG[0]


def fetch_task(rank, mb, steps, threads, port):
    import torch.distributed.rpc as rpc  # pylint: disable=import-outside-toplevel
    torch.set_num_threads(threads)
    opts = rpc.TensorPipeRpcBackendOptions(
        num_worker_threads=8, init_method=f"tcp://127.0.0.1:{port}")
    BIG.append(torch.zeros(mb * 262144))
    rpc.init_rpc("ps" if rank == 0 else "worker", rank=rank, world_size=2,
                 rpc_backend_options=opts)
    if rank > 0:
        for _ in range(3):
            rpc.rpc_sync("ps", big).sum()
        t = time.perf_counter()
        for _ in range(steps):
            rpc.rpc_sync("ps", big).sum()
        result("fetch", (time.perf_counter() - t) / steps)
        t = time.perf_counter()
        for _ in range(steps):
            BIG[0].sum()
        result("sum", (time.perf_counter() - t) / steps)
    rpc.shutdown()


def ddp_task(rank, workers, steps, threads, port):
    from torch import nn  # pylint: disable=import-outside-toplevel
    from torch.nn.parallel import DistributedDataParallel  # pylint: disable=import-outside-toplevel
    torch.set_num_threads(threads)
    dist.init_process_group("gloo", init_method=f"tcp://127.0.0.1:{port}",
                            rank=rank, world_size=workers)
    torch.manual_seed(0)
    model = nn.Sequential(nn.Linear(784, 256), nn.ReLU(), nn.Linear(256, 128),
                          nn.ReLU(), nn.Linear(128, 10))
    ddp = DistributedDataParallel(model)
    opt = torch.optim.Adam(ddp.parameters(), lr=1e-3)
    x = torch.rand(128, 784)
    y = torch.randint(0, 10, (128,))

    def step():
        opt.zero_grad()
        nn.functional.cross_entropy(ddp(x), y).backward()
        opt.step()

    for _ in range(10):
        step()
    dist.barrier()
    t = time.perf_counter()
    for _ in range(steps):
        step()
    result("ddp", steps / (time.perf_counter() - t))
    dist.destroy_process_group()


def main():
    what, workers, steps, threads = (sys.argv[1], int(sys.argv[2]),
                                     int(sys.argv[3]), int(sys.argv[4]))
    if what == "null":
        mp.spawn(null_task, args=(workers, steps, threads, free_port()),
                 nprocs=workers + 1)
    elif what == "fetch":
        mp.spawn(fetch_task, args=(workers, steps, threads, free_port()),
                 nprocs=2)
    else:
        mp.spawn(ddp_task, args=(workers, steps, threads, free_port()),
                 nprocs=workers)


if __name__ == "__main__":
    main()

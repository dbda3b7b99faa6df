"""PyTorch's side of bench/cluster_bench.py, on loopback, and what the
TensorFlow side (bench/tf_cluster_peer.py) shares with it:

    cluster_peer.py --only null1,async2,sync2,... --threads N [--trial]
        null<W>: torch.distributed.rpc: W worker processes each call
            rpc_sync on a parameter-server process that adds 1 to a counter
            (the null step); RESULT null<W> <median s per step of the
            workers>.
        async<W>, sync<W>: DistributedDataParallel (gloo): W processes train
            the Fashion MLP (784-256-128-10, batch 128 each, Adam) on a fixed
            random batch; RESULT <workload> <s per worker step, all workers
            together>. PyTorch has no asynchronous parameter server, so
            async<W> is DDP too.
        --trial runs a fifth of the steps (peer.tune's trials).
    cluster_peer.py fetch MB STEPS THREADS   torch.distributed.rpc: one
        worker fetches an MB-megabyte f32 tensor from a ps process with
        rpc_sync and sums it; prints RESULT fetch <s per fetch>, then
        RESULT sum <s per sum of a local tensor of that size>
        (bench/cluster_transfer.py).

torch is imported by the functions that use it, so that cluster_bench.py
and tf_cluster_peer.py can import this module without it.
"""
import os
import socket
import statistics
import sys
import time

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, HERE)
import peer  # noqa: E402  pylint: disable=wrong-import-position

# Timed steps per workload kind (after 10 untimed ones), shared by Runnel's
# side and the peers'.
STEPS = {"null": 500, "async": 150, "sync": 150}
COUNTER = [0.0]
BIG = []


def bump():
    COUNTER[0] += 1.0
    return COUNTER[0]


def big():
    return BIG[0]


def result(name, value):
    # One write: the processes share stdout, and lines must not mix.
    os.write(1, f"RESULT {name} {value}\n".encode())


def free_port():
    s = socket.socket()
    s.bind(("127.0.0.1", 0))
    port = s.getsockname()[1]
    s.close()
    return port


def split_workload(name):
    """'sync2' -> ('sync', 2)."""
    kind = name.rstrip("0123456789")
    return kind, int(name[len(kind):])


def peer_main(argv, run):
    """Runs each workload of --only with run(kind, workers, steps, argv),
    which returns seconds per step, and prints its RESULT line."""
    only = argv[argv.index("--only") + 1].split(",")
    for name in only:
        kind, workers = split_workload(name)
        steps = STEPS[kind] // (5 if "--trial" in argv else 1)
        print(f"RESULT {name} {run(kind, workers, steps, argv):.9f}",
              flush=True)


def per_worker_step(rates):
    """Seconds per worker step, all workers together, from each worker's
    steps per second."""
    return 1.0 / sum(rates)


def rpc_init(rank, world, name, threads, port):
    import torch  # pylint: disable=import-outside-toplevel
    import torch.distributed.rpc as rpc  # pylint: disable=import-outside-toplevel
    torch.set_num_threads(threads)
    opts = rpc.TensorPipeRpcBackendOptions(
        num_worker_threads=8, init_method=f"tcp://127.0.0.1:{port}")
    rpc.init_rpc(name, rank=rank, world_size=world, rpc_backend_options=opts)
    return rpc


def null_task(rank, workers, steps, threads, port, out):
    rpc = rpc_init(rank, workers + 1, "ps" if rank == 0 else f"worker{rank}",
                   threads, port)
    if rank > 0:
        for _ in range(10):
            rpc.rpc_sync("ps", bump)
        t = time.perf_counter()
        for _ in range(steps):
            rpc.rpc_sync("ps", bump)
        out.put((time.perf_counter() - t) / steps)
    rpc.shutdown()


def fetch_task(rank, mb, steps, threads, port):
    import torch  # pylint: disable=import-outside-toplevel
    BIG.append(torch.zeros(mb * 262144))
    rpc = rpc_init(rank, 2, "ps" if rank == 0 else "worker", threads, port)
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


def ddp_task(rank, workers, steps, threads, port, out):
    import torch  # pylint: disable=import-outside-toplevel
    import torch.distributed as dist  # pylint: disable=import-outside-toplevel
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
    out.put(steps / (time.perf_counter() - t))
    dist.destroy_process_group()


def torch_run(kind, workers, steps, argv):
    """One workload in PyTorch: seconds per step (null) or per worker step."""
    import torch.multiprocessing as mp  # pylint: disable=import-outside-toplevel
    threads = peer.threads_arg(argv, 1)
    out = mp.get_context("spawn").SimpleQueue()
    task, procs = (null_task, workers + 1) if kind == "null" else \
        (ddp_task, workers)
    mp.spawn(task, args=(workers, steps, threads, free_port(), out),
             nprocs=procs)
    values = [out.get() for _ in range(workers)]
    return statistics.median(values) if kind == "null" else \
        per_worker_step(values)


def main():
    # OpenMP's default spin-waiting fights OpenBLAS's threads on a small
    # machine; the harness passes the policy it tuned, a direct run gets
    # the passive one. Set before torch loads OpenMP.
    os.environ.setdefault("OMP_WAIT_POLICY", "PASSIVE")
    if sys.argv[1] == "fetch":
        import torch.multiprocessing as mp  # pylint: disable=import-outside-toplevel
        mp.spawn(fetch_task, args=(int(sys.argv[2]), int(sys.argv[3]),
                                   int(sys.argv[4]), free_port()), nprocs=2)
    else:
        peer_main(sys.argv[1:], torch_run)


if __name__ == "__main__":
    main()

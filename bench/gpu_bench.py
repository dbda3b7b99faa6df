"""GPU benchmarks (docs/gpu.md, issue 16), Runnel against PyTorch in the
same invocation on the same GPU, alternating rounds, medians and the median
of the per-round ratios Runnel / PyTorch (lower is better for Runnel):

  1. mlp, cnn, rows: training steps of bench/train_mlp.rnl (Adam, batch
     128), train_cnn.rnl (SGD, batch 64) and train_rows.rnl (row-LSTM,
     Adam, batch 64). Both sides feed the same fixed batch from host memory
     every step (PyTorch copies it to the GPU), as the scripts do.
  2. alexnet_fwd, alexnet_train: bench/alexnet.rnl at batch 128 on 224x224
     synthetic images, forward, and forward + backward + SGD; the images
     stay on the GPU on both sides.
  2b. c3d_train: bench/c3d.rnl, a C3D-style 3-D convnet (conv3d and
     max_pool3d, issue 34) trained on 16 synthetic clips of 16 frames of
     112x112, on the GPU on both sides; PyTorch in NCDHW and in
     channels_last_3d, the faster kept (both printed).
  3. copy: host <-> GPU bandwidth, bench/gpu_copy.rnl (a 256 MiB feed to
     an identity on the GPU and back) against PyTorch's copies between
     pinned host memory and the GPU (cudaMemcpy's best).
  4. memory: the peak memory reserved during the CNN training run (the
     "peak reserved" counter of a --trace) against
     torch.cuda.max_memory_reserved().
  5. loop_none, loop_checkpoint, loop_swap (issue 37, item 3) and their
     *_memory: bench/loop_swap.rnl, an LSTM cell over 1,024 steps of a
     batch of 64 (512 units) in one in-graph loop, trained with SGD:
     every step's values kept on the GPU, recomputed from the state saved
     every 32 steps (`checkpoint = 32`), or kept in host memory
     (`swap_memory = true`); step time and peak memory reserved. PyTorch:
     nn.LSTMCell over the same steps, whole, in segments of 32 under
     torch.utils.checkpoint, or under
     torch.autograd.graph.save_on_cpu(pin_memory=True). Not in the default
     set (about a minute a round on an H100): ask with --only.

Aims (issue 16): steps and AlexNet <= 1.0x PyTorch; copies >= 80% of the
pinned bandwidth; peak reserved <= 1.2x PyTorch's.

PyTorch computes f32 convolutions and matmuls with TF32 by default; Runnel
does not (its results match the CPU's within rounding), so the peer is run
with TF32 off (`--tf32` turns it on there, for reference).

    python3 bench/gpu_bench.py [RUNNEL_DIR] [--rounds 5] [--only a,b]
                               [--tf32]

RUNNEL_DIR holds the `runnel` binary (default build-gpu; on the device
machine the unpacked archive of scripts/gpu_run.sh, /tmp/runnel-gpu).
Runnel's times are the difference between a long and a short run of a
script divided by the difference in steps, so start-up, graph building,
cuDNN's loading and the first steps cancel; PyTorch's are timed in its own
process after warm-up steps, synchronised with the GPU.
"""
import json
import os
import statistics
import subprocess
import sys
import tempfile
import time

HERE = os.path.dirname(os.path.abspath(__file__))
PYTHON = sys.executable or "python3"

# Runnel: (script, extra args, short steps, long steps); PyTorch: its timed
# steps.
WORK = {
    "mlp": ("train_mlp.rnl", [], 50, 550, 300),
    "cnn": ("train_cnn.rnl", [], 20, 220, 200),
    "rows": ("train_rows.rnl", [], 20, 120, 100),
    # 20 more forward steps (80 ms on an H100) were within the noise of two
    # processes' start-up: one round measured -1.2 ms a step.
    "alexnet_fwd": ("alexnet.rnl", ["--arg", "mode=forward"], 3, 203, 20),
    "alexnet_train": ("alexnet.rnl", ["--arg", "mode=train"], 3, 103, 20),
    "c3d_train": ("c3d.rnl", [], 3, 33, 30),
}
DESCRIPTION = {
    "mlp": "MLP 784-256-128-10, Adam, batch 128, step",
    "cnn": "CNN tutorial, SGD, batch 64, step",
    "rows": "row-LSTM h128, Adam, batch 64, step",
    "alexnet_fwd": "AlexNet forward, batch 128, 224x224",
    "alexnet_train": "AlexNet forward+backward+SGD, batch 128, 224x224",
    "c3d_train": "C3D-style 3-D convnet, SGD, batch 16 x 16 frames, 112x112",
}
# bench/loop_swap.rnl's sizes, on both sides.
LOOP = {"time": 1024, "batch": 64, "units": 512, "checkpoint": 32}
LOOP_ARGS = [a for key, v in LOOP.items() for a in ("--arg", f"{key}={v}")]
for _mode in ("none", "checkpoint", "swap"):
    WORK[f"loop_{_mode}"] = ("loop_swap.rnl",
                             LOOP_ARGS + ["--arg", f"mode={_mode}"], 2, 6, 4)
DESCRIPTION.update({
    "loop_none": "LSTM loop of 1,024 steps, values kept on the GPU, step",
    "loop_checkpoint": "LSTM loop of 1,024 steps, recomputed every 32, step",
    "loop_swap": "LSTM loop of 1,024 steps, values swapped to host, step",
})
# A peak-memory benchmark: the training run whose peak it measures.
MEMORY = {"memory": "cnn", "loop_none_memory": "loop_none",
          "loop_checkpoint_memory": "loop_checkpoint",
          "loop_swap_memory": "loop_swap"}
COPY_MIB = 256
ALL = list(WORK) + ["copy"] + list(MEMORY)
DEFAULT = [n for n in ALL if not n.startswith("loop_")]


# ---- the PyTorch side (run with --peer NAME, in its own process) -----------

def torch_main(argv):
    # OpenMP's default spin-waiting fights OpenBLAS's threads on a small
    # machine and inflates the peer's host-side time (the other benches
    # set it too); set OMP_WAIT_POLICY yourself to try another policy.
    os.environ.setdefault("OMP_WAIT_POLICY", "PASSIVE")
    import torch  # pylint: disable=import-outside-toplevel
    name = argv[argv.index("--peer") + 1]
    tf32 = "--tf32" in argv
    torch.backends.cuda.matmul.allow_tf32 = tf32
    torch.backends.cudnn.allow_tf32 = tf32
    dev = torch.device("cuda")
    nn = torch.nn

    if name == "copy":
        n = COPY_MIB << 18
        host = torch.rand(n).pin_memory()
        back = torch.empty(n).pin_memory()
        gpu = torch.empty(n, device=dev)

        def once():
            gpu.copy_(host, non_blocking=True)
            back.copy_(gpu, non_blocking=True)
            torch.cuda.synchronize()
        for _ in range(3):
            once()
        t = time.perf_counter()
        for _ in range(10):
            once()
        per = (time.perf_counter() - t) / 10
        print(f"RESULT copy {2 * n * 4 / per / 1e9:.6f}")  # GB/s
        return

    def mlp():
        layers = []
        for i, o in ((784, 256), (256, 128), (128, 10)):
            layers += [nn.Linear(i, o), nn.ReLU()]
        model = nn.Sequential(*layers[:-1]).to(dev)
        return (model, torch.optim.Adam(model.parameters(), lr=0.001),
                torch.rand(128, 784), torch.randint(0, 10, (128,)), True)

    def cnn():
        model = nn.Sequential(
            nn.Conv2d(1, 32, 5, padding=2), nn.ReLU(), nn.MaxPool2d(2),
            nn.Conv2d(32, 64, 5, padding=2), nn.ReLU(), nn.MaxPool2d(2),
            nn.Flatten(), nn.Linear(7 * 7 * 64, 1024), nn.ReLU(),
            nn.Linear(1024, 10)).to(dev)
        return (model, torch.optim.SGD(model.parameters(), lr=0.01),
                torch.rand(64, 1, 28, 28), torch.randint(0, 10, (64,)), True)

    class Rows(nn.Module):
        def __init__(self):
            super().__init__()
            self.lstm = nn.LSTM(28, 128, batch_first=True)
            self.dense = nn.Linear(128, 10)

        def forward(self, x):
            _, (h, _) = self.lstm(x)
            return self.dense(h[-1])

    def rows():
        model = Rows().to(dev)
        return (model, torch.optim.Adam(model.parameters(), lr=0.001),
                torch.rand(64, 28, 28), torch.randint(0, 10, (64,)), True)

    def alexnet():
        # bench/alexnet.rnl: torchvision's AlexNet, conv1 unpadded, no
        # dropout; 224 -> 54 -> 26 -> 12 -> 5.
        model = nn.Sequential(
            nn.Conv2d(3, 64, 11, stride=4), nn.ReLU(), nn.MaxPool2d(3, 2),
            nn.Conv2d(64, 192, 5, padding=2), nn.ReLU(), nn.MaxPool2d(3, 2),
            nn.Conv2d(192, 384, 3, padding=1), nn.ReLU(),
            nn.Conv2d(384, 256, 3, padding=1), nn.ReLU(),
            nn.Conv2d(256, 256, 3, padding=1), nn.ReLU(), nn.MaxPool2d(3, 2),
            nn.Flatten(), nn.Linear(256 * 5 * 5, 4096), nn.ReLU(),
            nn.Linear(4096, 4096), nn.ReLU(), nn.Linear(4096, 1000)).to(dev)
        x = torch.rand(128, 3, 224, 224, device=dev)
        y = torch.randint(0, 1000, (128,), device=dev)
        return (model, torch.optim.SGD(model.parameters(), lr=0.001), x, y,
                False)

    def c3d():
        # bench/c3d.rnl: three 3x3x3 convolutions with relu and max_pool3d,
        # a mean over the volume, a dense layer; clips NCDHW.
        class C3d(nn.Module):
            def __init__(self):
                super().__init__()
                self.features = nn.Sequential(
                    nn.Conv3d(3, 64, 3, padding=1), nn.ReLU(),
                    nn.MaxPool3d((1, 2, 2)),
                    nn.Conv3d(64, 128, 3, padding=1), nn.ReLU(),
                    nn.MaxPool3d(2),
                    nn.Conv3d(128, 256, 3, padding=1), nn.ReLU(),
                    nn.MaxPool3d(2))
                self.dense = nn.Linear(256, 101)

            def forward(self, x):
                return self.dense(self.features(x).mean(dim=(2, 3, 4)))
        model = C3d().to(dev)
        x = torch.rand(16, 3, 16, 112, 112, device=dev)
        y = torch.randint(0, 101, (16,), device=dev)
        return (model, torch.optim.SGD(model.parameters(), lr=0.001), x, y,
                False)

    def loop_step(mode):
        # bench/loop_swap.rnl: the cell's gates from x[t] and h, the mean
        # square of each step's output summed, over the time steps.
        from torch.utils.checkpoint import checkpoint  # pylint: disable=import-outside-toplevel
        t_all, b, u, k = (LOOP["time"], LOOP["batch"], LOOP["units"],
                          LOOP["checkpoint"])
        cell = nn.LSTMCell(u, u).to(dev)
        xs = torch.randn(t_all, b, u, device=dev)
        opt = torch.optim.SGD(cell.parameters(), lr=0.01)

        def segment(h, c, total, x):
            for t in range(x.shape[0]):
                h, c = cell(x[t], (h, c))
                total = total + (h * h).mean()
            return h, c, total

        def step():
            opt.zero_grad()
            h = torch.zeros(b, u, device=dev)
            c = torch.zeros(b, u, device=dev)
            total = torch.zeros((), device=dev)
            if mode == "checkpoint":
                for at in range(0, t_all, k):
                    h, c, total = checkpoint(segment, h, c, total,
                                             xs[at:at + k],
                                             use_reentrant=False)
            elif mode == "swap":
                with torch.autograd.graph.save_on_cpu(pin_memory=True):
                    h, c, total = segment(h, c, total, xs)
            else:
                h, c, total = segment(h, c, total, xs)
            loss = total / t_all
            loss.backward()
            opt.step()
            return loss
        return step

    work = MEMORY.get(name, name)
    if work.startswith("loop_"):
        step = loop_step(work[len("loop_"):])
    else:
        make = {"mlp": mlp, "cnn": cnn, "rows": rows, "alexnet_fwd": alexnet,
                "alexnet_train": alexnet, "c3d_train": c3d}[work]
        model, opt, x, y, from_host = make()
        loss_fn = nn.CrossEntropyLoss()
        forward_only = name == "alexnet_fwd"

        def step():
            xs, ys = (x.to(dev), y.to(dev)) if from_host else (x, y)
            if forward_only:
                with torch.no_grad():
                    return loss_fn(model(xs), ys)
            opt.zero_grad()
            loss = loss_fn(model(xs), ys)
            loss.backward()
            opt.step()
            return loss
    steps = WORK[work][4]

    def timed():
        for _ in range(max(3, steps // 10)):
            step()
        torch.cuda.synchronize()
        t = time.perf_counter()
        for _ in range(steps):
            step()
        torch.cuda.synchronize()
        return (time.perf_counter() - t) / steps
    torch.cuda.reset_peak_memory_stats()
    per = timed()
    if name == "c3d_train":
        # PyTorch at its best: channels_last_3d too, the faster kept.
        model.to(memory_format=torch.channels_last_3d)
        x = x.to(memory_format=torch.channels_last_3d)
        last = timed()
        print(f"gpu_bench: c3d_train PyTorch NCDHW {per * 1e3:.2f} ms, "
              f"channels_last_3d {last * 1e3:.2f} ms", file=sys.stderr)
        per = min(per, last)
    if name in MEMORY:
        print(f"RESULT {name} "
              f"{torch.cuda.max_memory_reserved() / 2**20:.3f}")
    else:
        print(f"RESULT {name} {per:.9f}")


def peer_env():
    """Under scripts/gpu_run.sh's run.sh, LD_LIBRARY_PATH starts with the
    libraries carried for Runnel (Debian's, older than the machine's):
    PyTorch gets the machine's own path back."""
    env = dict(os.environ)
    if "GPU_BENCH_PEER_LD_LIBRARY_PATH" in env:
        env["LD_LIBRARY_PATH"] = env.pop("GPU_BENCH_PEER_LD_LIBRARY_PATH")
    return env


def peer_version():
    """The peer's PyTorch and CUDA versions, for the report."""
    r = subprocess.run([PYTHON, "-c", "import torch; print(torch.__version__, "
                        "'CUDA', torch.version.cuda)"], stdout=subprocess.PIPE,
                       stderr=subprocess.STDOUT, text=True, env=peer_env(),
                       check=False)
    return r.stdout.strip().splitlines()[-1] if r.stdout.strip() else "unknown"


def peer(name, argv):
    cmd = [PYTHON, os.path.abspath(__file__), "--peer", name]
    if "--tf32" in argv:
        cmd.append("--tf32")
    out = subprocess.run(cmd, check=True, stdout=subprocess.PIPE, text=True,
                         env=peer_env()).stdout
    for line in out.splitlines():
        if line.startswith(f"RESULT {name} "):
            return float(line.split()[2])
    raise RuntimeError(f"the PyTorch peer printed no result for {name}")


# ---- the Runnel side ---------------------------------------------------------

def wall(cmd):
    t = time.perf_counter()
    subprocess.run(cmd, check=True, stdout=subprocess.DEVNULL)
    return time.perf_counter() - t


def runnel_step(runnel, name):
    script, args, short, long, _ = WORK[name]
    base = [runnel, "run", os.path.join(HERE, script)] + args
    return (wall(base + ["--arg", f"steps={long}"]) -
            wall(base + ["--arg", f"steps={short}"])) / (long - short)


def runnel_copy(runnel):
    """GB/s: 2 x 256 MiB a run, from the difference of 25 and 5 runs."""
    base = [runnel, "run", os.path.join(HERE, "gpu_copy.rnl"), "--arg",
            f"mib={COPY_MIB}"]
    per = (wall(base + ["--arg", "steps=25"]) -
           wall(base + ["--arg", "steps=5"])) / 20
    return 2 * (COPY_MIB << 20) / per / 1e9


def runnel_memory(runnel, name):
    """MiB: the largest "peak reserved" of any GPU over a traced run of the
    training whose peak `name` measures."""
    script, args, _, long, _ = WORK[MEMORY[name]]
    with tempfile.TemporaryDirectory() as tmp:
        path = os.path.join(tmp, "t.json")
        subprocess.run([runnel, "run", os.path.join(HERE, script)] + args +
                       ["--arg", f"steps={long}", "--trace", path,
                        "--trace-runs", f"1..{long}"], check=True,
                       stdout=subprocess.DEVNULL)
        with open(path, encoding="utf-8") as f:
            events = json.load(f)["traceEvents"]
    peaks = [e["args"]["peak reserved"] for e in events
             if e.get("ph") == "C" and "peak reserved" in e.get("args", {})]
    if not peaks:
        raise RuntimeError("the trace has no GPU memory counter: no GPU?")
    return max(peaks)


# ---- the driver -------------------------------------------------------------

def fmt(name, v):
    if name == "copy":
        return f"{v:.1f} GB/s"
    if name in MEMORY:
        return f"{v:.0f} MiB"
    return f"{v * 1e3:.2f} ms"


def int_arg(argv, flag, default):
    return int(argv[argv.index(flag) + 1]) if flag in argv else default


def main(argv):
    folder = argv[0] if argv and not argv[0].startswith("-") else "build-gpu"
    runnel = os.path.join(folder, "runnel")
    rounds = int_arg(argv, "--rounds", 5)
    names = argv[argv.index("--only") + 1].split(",") if "--only" in argv \
        else DEFAULT
    for n in names:
        if n not in ALL:
            sys.exit(f"gpu_bench: unknown benchmark {n}; one of {ALL}")
    ours_of = {n: (lambda n=n: runnel_step(runnel, n)) for n in WORK}
    ours_of["copy"] = lambda: runnel_copy(runnel)
    for n in MEMORY:
        ours_of[n] = lambda n=n: runnel_memory(runnel, n)
    # Without a GPU there is nothing to compare (`make bench` runs every
    # harness): skipped, saying why, as the GPU tests are.
    with tempfile.TemporaryDirectory() as tmp:
        probe = os.path.join(tmp, "probe.rnl")
        with open(probe, "w", encoding="utf-8") as f:
            f.write("let x = 1\n")
        r = subprocess.run([runnel, "run", probe, "--devices", "gpu=1"],
                           stdout=subprocess.PIPE, stderr=subprocess.STDOUT,
                           text=True, check=False)
    if r.returncode != 0:
        if "none is visible" in r.stdout:
            print("gpu_bench: skipped, no GPU here: " +
                  r.stdout.strip().splitlines()[0])
            return
        sys.exit(f"gpu_bench: the GPU probe failed:\n{r.stdout}")
    try:
        subprocess.run(["nvidia-smi", "--query-gpu=name,memory.total",
                        "--format=csv,noheader"], check=False)
    except FileNotFoundError:
        print("gpu_bench: no nvidia-smi")
    print(f"gpu_bench: PyTorch {peer_version()}")
    print(f"gpu_bench: {rounds} alternating rounds; PyTorch TF32 "
          f"{'on' if '--tf32' in argv else 'off'}, OMP_WAIT_POLICY="
          f"{os.environ.get('OMP_WAIT_POLICY', 'PASSIVE')}")
    results = {n: ([], []) for n in names}
    for k in range(rounds):
        line = []
        for n in names:
            sides = [ours_of[n], lambda n=n: peer(n, argv)]
            if k % 2:
                sides.reverse()
            got = [f() for f in sides]
            if k % 2:
                got.reverse()
            results[n][0].append(got[0])
            results[n][1].append(got[1])
            line.append(f"{n} {fmt(n, got[0])} vs {fmt(n, got[1])}")
        print(f"  round {k + 1}: " + ", ".join(line), flush=True)
    print("median Runnel vs PyTorch (ratio: median of per-round ratios):")
    for n in names:
        ours, theirs = results[n]
        ratio = statistics.median(a / b for a, b in zip(ours, theirs))
        if n == "copy":
            aim = "aim >= 0.80 of pinned cudaMemcpy"
            what = f"host<->GPU copies, {COPY_MIB} MiB each way"
        elif n == "memory":
            aim = "aim <= 1.2"
            what = "CNN training, peak memory reserved"
        elif n in MEMORY:
            aim = "issue 37: swap's peak far below none's"
            what = DESCRIPTION[MEMORY[n]].replace(", step", "") + \
                ", peak memory reserved"
        else:
            aim = "aim <= 1.0"
            what = DESCRIPTION[n]
        print(f"  {what}: {fmt(n, statistics.median(ours))} vs "
              f"{fmt(n, statistics.median(theirs))}: ratio {ratio:.3f} "
              f"({aim})")


if __name__ == "__main__":
    if "--peer" in sys.argv:
        torch_main(sys.argv[1:])
    else:
        main(sys.argv[1:])

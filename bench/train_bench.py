"""Training-step benchmark: the Fashion-MNIST MLP (Adam, batch 128) and the
tutorial CNN (SGD, batch 64), in Runnel (bench/train_*.rnl) and in PyTorch
in the same invocation, with the same thread count. Prints ms/step for
each and the ratio Runnel / PyTorch (lower is better for Runnel).

    /usr/bin/python3 bench/train_bench.py BUILD_DIR [--threads 2] [--rounds 3]

Runnel's time per step is the difference between a long and a short run of
the same script, divided by the difference in steps, so start-up, graph
building and the first steps' allocations cancel out. PyTorch is timed in
process after warm-up steps. Each side's best round is reported, with every
round printed because this machine is noisy."""
import os
import subprocess
import sys
import time

args = sys.argv[1:]
build = args[0] if args else "build-release"
threads, rounds = 2, 3
for i, a in enumerate(args):
    if a == "--threads":
        threads = int(args[i + 1])
    if a == "--rounds":
        rounds = int(args[i + 1])
os.environ["OMP_NUM_THREADS"] = str(threads)
import torch  # noqa: E402  (after OMP_NUM_THREADS)

torch.set_num_threads(threads)
here = os.path.dirname(os.path.abspath(__file__))
runnel = os.path.join(build, "runnel")


def runnel_ms(script, short, long):
    def wall(steps):
        t = time.perf_counter()
        subprocess.run([runnel, "run", os.path.join(here, script),
                        "--threads", str(threads), "--arg", "steps=%d" % steps],
                       check=True)
        return time.perf_counter() - t
    return (wall(long) - wall(short)) * 1000 / (long - short)


def torch_mlp():
    model = torch.nn.Sequential(
        torch.nn.Linear(784, 256), torch.nn.ReLU(),
        torch.nn.Linear(256, 128), torch.nn.ReLU(),
        torch.nn.Linear(128, 10))
    opt = torch.optim.Adam(model.parameters(), lr=0.001)
    return model, opt, torch.rand(128, 784), torch.randint(0, 10, (128,))


def torch_cnn():
    model = torch.nn.Sequential(
        torch.nn.Conv2d(1, 32, 5, padding=2), torch.nn.ReLU(), torch.nn.MaxPool2d(2),
        torch.nn.Conv2d(32, 64, 5, padding=2), torch.nn.ReLU(), torch.nn.MaxPool2d(2),
        torch.nn.Flatten(), torch.nn.Linear(7 * 7 * 64, 1024), torch.nn.ReLU(),
        torch.nn.Linear(1024, 10))
    opt = torch.optim.SGD(model.parameters(), lr=0.01)
    return model, opt, torch.rand(64, 1, 28, 28), torch.randint(0, 10, (64,))


def torch_ms(make, steps):
    model, opt, x, y = make()
    loss_fn = torch.nn.CrossEntropyLoss()

    def step():
        opt.zero_grad()
        loss_fn(model(x), y).backward()
        opt.step()
    for _ in range(max(3, steps // 10)):
        step()
    t = time.perf_counter()
    for _ in range(steps):
        step()
    return (time.perf_counter() - t) * 1000 / steps


for name, script, short, long, make, tsteps in [
        ("MLP 784-256-128-10, Adam, batch 128", "train_mlp.rnl", 50, 550, torch_mlp, 300),
        ("CNN tutorial, SGD, batch 64", "train_cnn.rnl", 5, 35, torch_cnn, 30)]:
    r, p = [], []
    for k in range(rounds):
        r.append(runnel_ms(script, short, long))
        p.append(torch_ms(make, tsteps))
        print("  round %d: Runnel %.2f ms/step, PyTorch %.2f ms/step" % (k + 1, r[-1], p[-1]))
    print("%s (%d threads): Runnel %.2f ms/step, PyTorch %.2f ms/step, ratio %.2f"
          % (name, threads, min(r), min(p), min(r) / min(p)))
    sys.stdout.flush()

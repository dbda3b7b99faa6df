"""Placement and partitioning benchmarks (docs/devices.md), in one
invocation, alternating rounds (this machine's speed drifts), medians and
the median of per-round ratios:

  1. transfer: the cost of one local Send/Recv. A chain of 200 tiny
     additions alternating between /cpu:0 and /cpu:1 (200 transfers a run)
     against the same chain on /cpu:0 alone, both on --devices cpu=2.
  2. mlp: the Fashion MLP training step (bench/train_mlp.rnl) on
     --devices cpu=2, where the placer may split it, against the unplaced
     --devices cpu=1. A graph that fits one device should lose nothing.
  3. lstm: the model-parallel two-layer LSTM step
     (examples/model_parallel_lstm.rnl, batch 64) with a layer per device
     on --devices cpu=2, against the same script on --devices cpu=1
     (--soft-placement), and PyTorch's two-layer nn.LSTM step on the same
     sizes as the peer (same thread count, its best configuration). Also the
     share of the traced runs during which each device was busy.

    /usr/bin/python3 bench/devices_bench.py BUILD_DIR [--threads 2] [--rounds 5]

Runnel's times are the difference between a long and a short run divided
by the difference in runs or steps (start-up and graph building cancel);
the LSTM's from the `time` of its --metrics lines.
"""
import json
import os
import statistics
import subprocess
import sys
import tempfile
import time

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import peer  # noqa: E402  pylint: disable=wrong-import-position

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(HERE)
LSTM = os.path.join(ROOT, "examples", "model_parallel_lstm.rnl")
TIMED_FROM = 10


def wall(cmd):
    t = time.perf_counter()
    subprocess.run(cmd, check=True, stdout=subprocess.DEVNULL,
                   stderr=subprocess.DEVNULL)
    return time.perf_counter() - t


def per_unit(runnel, script, args, short, long):
    base = [runnel, "run", script] + args
    return (wall(base + ["--arg", f"steps={long}"]) -
            wall(base + ["--arg", f"steps={short}"])) / (long - short)


def lstm_step(runnel, args, steps=60):
    with tempfile.TemporaryDirectory() as tmp:
        metrics = os.path.join(tmp, "m.jsonl")
        subprocess.run([runnel, "run", LSTM, "--metrics", metrics, "--arg",
                        f"steps={steps}"] + args, check=True,
                       stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
        with open(metrics, encoding="utf-8") as f:
            t = [json.loads(line)["time"] for line in f]
    return (t[-1] - t[TIMED_FROM - 1]) / (len(t) - TIMED_FROM)


def busy_share(runnel, threads):
    """Per device, the share of traced runs 20-22 it spent in kernels."""
    with tempfile.TemporaryDirectory() as tmp:
        path = os.path.join(tmp, "t.json")
        subprocess.run([runnel, "run", LSTM, "--devices", "cpu=2",
                        "--threads", str(threads), "--arg", "steps=25",
                        "--trace", path, "--trace-runs", "20..22"],
                       check=True, stdout=subprocess.DEVNULL,
                       stderr=subprocess.DEVNULL)
        with open(path, encoding="utf-8") as f:
            events = json.load(f)["traceEvents"]
    tracks = {e["tid"]: e["args"]["name"] for e in events
              if e.get("name") == "thread_name"}
    spans = [e for e in events if e["ph"] == "X"]
    total = sum(e["dur"] for e in spans if tracks[e["tid"]] == "host")
    out = {}
    for tid, name in tracks.items():
        if name == "host":
            continue
        intervals = sorted((e["ts"], e["ts"] + e["dur"]) for e in spans
                           if e["tid"] == tid)
        busy, end = 0.0, None
        start = None
        for a, b in intervals:
            if end is None or a > end:
                if end is not None:
                    busy += end - start
                start, end = a, b
            else:
                end = max(end, b)
        if end is not None:
            busy += end - start
        out[name] = busy / total
    return out


def torch_lstm(threads, steps=40):
    """PyTorch's two-layer LSTM step on the same sizes (its best config)."""
    code = f"""
import os, time, torch
torch.set_num_threads({threads})
lstm = torch.nn.LSTM(28, 128, num_layers=2, batch_first=True)
dense = torch.nn.Linear(128, 10)
opt = torch.optim.Adam(list(lstm.parameters()) + list(dense.parameters()), lr=0.002)
x, y = torch.rand(64, 28, 28), torch.randint(0, 10, (64,))
def step():
    opt.zero_grad()
    out, _ = lstm(x)
    torch.nn.functional.cross_entropy(dense(out[:, -1]), y).backward()
    opt.step()
for _ in range(5): step()
t = time.perf_counter()
for _ in range({steps}): step()
print((time.perf_counter() - t) / {steps})
"""
    best = None
    for config in peer.peer_configs(threads):
        r = subprocess.run([peer.PYTHON, "-c", code], env=config.environ(),
                           stdout=subprocess.PIPE, text=True, check=True)
        s = float(r.stdout.split()[-1])
        if best is None or s < best[0]:
            best = (s, config.describe(threads))
    return best


def main(argv):
    build = argv[0] if argv and not argv[0].startswith("-") else "build"
    threads = peer.threads_arg(argv)
    rounds = peer.int_arg(argv, "--rounds", 5)
    runnel = os.path.join(build, "runnel")
    th = ["--threads", str(threads)]
    chain = os.path.join(HERE, "transfer_chain.rnl")
    mlp = os.path.join(HERE, "train_mlp.rnl")
    results = {k: ([], []) for k in ("transfer", "mlp", "lstm")}
    ratios = {k: [] for k in results}
    peer_times = []
    print(f"devices ({threads} threads, {rounds} alternating rounds)")
    for k in range(rounds):
        sides = {
            "transfer": (
                lambda: per_unit(runnel, chain, th + ["--devices", "cpu=2"],
                                 20, 220) / 200,
                lambda: per_unit(runnel, chain, th + ["--devices", "cpu=2",
                                                      "--arg", "split=false"],
                                 20, 220) / 200),
            "mlp": (
                lambda: per_unit(runnel, mlp, th + ["--devices", "cpu=2"],
                                 50, 350),
                lambda: per_unit(runnel, mlp, th + ["--devices", "cpu=1"],
                                 50, 350)),
            "lstm": (
                lambda: lstm_step(runnel, th + ["--devices", "cpu=2"]),
                lambda: lstm_step(runnel, th + ["--devices", "cpu=1",
                                                "--soft-placement"])),
        }
        for name, (a, b) in sides.items():
            first, second = (a, b) if k % 2 == 0 else (b, a)
            x, y = first(), second()
            ours, base = (x, y) if k % 2 == 0 else (y, x)
            results[name][0].append(ours)
            results[name][1].append(base)
            ratios[name].append(ours / base)
        peer_times.append(torch_lstm(threads))
        print(f"  round {k + 1}: " + ", ".join(
            f"{n} {peer.fmt_time(results[n][0][-1])} vs "
            f"{peer.fmt_time(results[n][1][-1])}" for n in results) +
            f", PyTorch 2-layer LSTM {peer.fmt_time(peer_times[-1][0])}")
    med = {n: (statistics.median(a), statistics.median(b))
           for n, (a, b) in results.items()}
    chain_ops = med["transfer"][1]
    print(f"Send/Recv, per local transfer: "
          f"{peer.fmt_time(med['transfer'][0] - chain_ops)} "
          f"(an op on a split chain {peer.fmt_time(med['transfer'][0])}, "
          f"on one device {peer.fmt_time(chain_ops)})")
    print(f"Fashion MLP step, --devices cpu=2 (placed) "
          f"{peer.fmt_time(med['mlp'][0])} vs cpu=1 "
          f"{peer.fmt_time(med['mlp'][1])}: ratio "
          f"{statistics.median(ratios['mlp']):.3f} (aim: at most 1.03)")
    speedup = 1 / statistics.median(ratios["lstm"])
    pt = statistics.median(p[0] for p in peer_times)
    print(f"Model-parallel 2-layer LSTM step (h128, batch 64, Adam): cpu=2 "
          f"{peer.fmt_time(med['lstm'][0])} vs cpu=1 "
          f"{peer.fmt_time(med['lstm'][1])}: {speedup:.2f}x faster "
          f"(aim: at least 1.3x); PyTorch nn.LSTM(num_layers=2) "
          f"{peer.fmt_time(pt)} ({min(peer_times)[1]})")
    share = busy_share(runnel, threads)
    print("  device busy during traced runs 20-22 on cpu=2: " + ", ".join(
        f"{d} {100 * s:.0f}%" for d, s in sorted(share.items())))


if __name__ == "__main__":
    main(sys.argv[1:])

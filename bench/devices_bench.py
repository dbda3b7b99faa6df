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
     (--soft-placement), and the peers' step on the same sizes, each at its
     best configuration and the same thread count (bench/peer.py):
     PyTorch's nn.LSTM(num_layers=2), with and without torch.compile, and
     TensorFlow's two stacked tf.keras.layers.LSTM in a tf.function, with
     and without XLA or unrolled (bench/rnn_bench.py's LSTM side, --layers
     2). Also the share of the traced runs during which each device was
     busy.

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
import rnn_bench  # noqa: E402  pylint: disable=wrong-import-position

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


def lstm_peers(threads):
    """[(peer, its fastest configuration)]: PyTorch's nn.LSTM(num_layers=2)
    and TensorFlow's two stacked Keras LSTMs on the same sizes and
    optimizer (rnn_bench.py's LSTM side with --layers 2), tuned once."""
    script = [os.path.join(HERE, "rnn_bench.py"), "--threads", str(threads),
              "--only", "lstm", "--layers", "2", "--lr", "0.002"]
    peers = [peer.torch_peer(script + ["--peer"], threads,
                             rnn_bench.TORCH_VARIANTS),
             peer.tf_peer(script + ["--peer-tf"], threads,
                          rnn_bench.TF_VARIANTS)]
    return [(p, (peer.tune(p, ["--trial"]) or {"lstm": p.configs[0]})["lstm"])
            for p in peers]


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
    print(f"devices ({threads} threads, {rounds} alternating rounds)")
    peers = lstm_peers(threads)
    peer_times = {p.name: [] for p, _ in peers}
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
        for p, config in peers:
            peer_times[p.name].append(peer.run_side(p.side, config)["lstm"])
        print(f"  round {k + 1}: " + ", ".join(
            f"{n} {peer.fmt_time(results[n][0][-1])} vs "
            f"{peer.fmt_time(results[n][1][-1])}" for n in results) + "".join(
            f", {n} 2-layer LSTM {peer.fmt_time(t[-1])}"
            for n, t in peer_times.items()))
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
    print(f"Model-parallel 2-layer LSTM step (h128, batch 64, Adam): cpu=2 "
          f"{peer.fmt_time(med['lstm'][0])} vs cpu=1 "
          f"{peer.fmt_time(med['lstm'][1])}: {speedup:.2f}x faster "
          f"(aim: at least 1.3x)")
    theirs = {p.name: (statistics.median(peer_times[p.name]),
                       config.describe(threads)) for p, config in peers}
    for p, _ in peers:
        print(f"  {p.name} {peer.fmt_time(theirs[p.name][0])} "
              f"({theirs[p.name][1]})")
    peer_ratio = statistics.median(
        ours / min(t[k] for t in peer_times.values())
        for k, ours in enumerate(results["lstm"][0]))
    print(f"  ratio cpu=2 / best peer {peer_ratio:.3g} (median of "
          "per-round ratios)")
    peer.record("devices", "model-parallel 2-layer LSTM h128, batch 64, "
                "Adam, cpu=2, per step", med["lstm"][0], theirs, peer_ratio,
                threads=threads)
    share = busy_share(runnel, threads)
    print("  device busy during traced runs 20-22 on cpu=2: " + ", ".join(
        f"{d} {100 * s:.0f}%" for d, s in sorted(share.items())))


if __name__ == "__main__":
    main(sys.argv[1:])

"""The input pipeline against host feeding (docs/queues.md): the step time
of the Fashion-MNIST MLP (784-256-128-10, Adam, batch 128) when its batches
come from a shuffling queue fed by two runner threads that read and decode
the IDX files in the graph (examples/fashion_pipeline.rnl), against the same
model fed from the host, each step's batch gathered from the loaded arrays
and passed with `run ... with` (examples/fashion_mlp.rnl).

    /usr/bin/python3 bench/pipeline_bench.py BUILD_DIR [--threads 2]
        [--rounds 5] [--steps 400]

Both scripts report once per step; a step's time is the mean gap between
the `time`s of their --metrics lines after the first WARM steps (start-up,
loading and the queue's first fill excluded). The two alternate, round by
round, each going first in turn (this machine's speed drifts); the medians
and the median of the per-round ratios (pipeline / host-fed: below 1 the
pipeline is faster) are printed. Not a test: nothing here asserts a time.
"""
import json
import os
import statistics
import subprocess
import sys
import tempfile

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import peer  # noqa: E402  pylint: disable=wrong-import-position

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
SCRIPTS = {
    "host-fed": os.path.join(ROOT, "examples", "fashion_mlp.rnl"),
    "pipeline": os.path.join(ROOT, "examples", "fashion_pipeline.rnl"),
}
WARM = 50


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


def main(argv):
    if not argv or argv[0].startswith("--"):
        sys.exit(__doc__)
    runnel = os.path.join(argv[0], "runnel")
    threads = peer.threads_arg(argv)
    rounds = peer.int_arg(argv, "--rounds", 5)
    steps = peer.int_arg(argv, "--steps", 400)
    times = {name: [] for name in SCRIPTS}
    ratios = []
    for r in range(rounds):
        order = list(SCRIPTS) if r % 2 == 0 else list(reversed(SCRIPTS))
        got = {name: step_time(runnel, SCRIPTS[name], threads, steps)
               for name in order}
        for name, t in got.items():
            times[name].append(t)
        ratios.append(got["pipeline"] / got["host-fed"])
        print(f"round {r + 1}: " + ", ".join(
            f"{name} {peer.fmt_time(got[name])}" for name in SCRIPTS),
              flush=True)
    print(f"Fashion MLP step (batch 128), --threads {threads}, {rounds} "
          f"rounds of {steps} steps (first {WARM} not timed):")
    for name in SCRIPTS:
        print(f"  {name:9} median {peer.fmt_time(statistics.median(times[name]))}")
    print(f"  pipeline / host-fed: median ratio "
          f"{statistics.median(ratios):.2f}")


if __name__ == "__main__":
    main(sys.argv[1:])

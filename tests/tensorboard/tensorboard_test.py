"""A real TensorBoard reads what `runnel run --logdir` wrote.

Trains a small model with --logdir and --metrics, starts TensorBoard 2.21
(build/venv/tensorboard, requirements/tensorboard.txt) on loopback over the
log directory, and reads its HTTP data API: the runs, every reported
scalar at its global step (against the --metrics log of the same run), the
histograms of the trainable variables, and the graph with its scopes.

    tensorboard_test.py RUNNEL REPO
"""
import json
import os
import re
import subprocess
import sys
import tempfile
import time
import urllib.parse
import urllib.request

SCRIPT = """
import nn
import optim
# y = 3 x - 1, learnt by a one-unit dense layer in a scope, a full batch a
# step.
let xs = reshape(arange(0.0, 64.0) / 64.0, [64, 1])
let data = dataset(x = xs, y = xs * 3.0 - 1.0)
input x: f32[?, 1]
input y: f32[?, 1]
scope "model" {
    let p = nn.dense(x, 1)
}
let loss = mean(square(p - y))
let step = optim.sgd(loss, lr = 0.7)
for epoch in 0..40 {
    for b in batches(data, 64) {
        let (l, _) = run (loss, step) with {x: b.x, y: b.y}
        report(loss = l, epoch = epoch)
    }
}
"""

def get(port, path, **query):
    url = f"http://127.0.0.1:{port}{path}"
    if query:
        url += "?" + urllib.parse.urlencode(query)
    with urllib.request.urlopen(url, timeout=30) as r:
        return r.read()


def start_tensorboard(tensorboard, logdir):
    """TensorBoard on a free loopback port; returns (process, port)."""
    p = subprocess.Popen(
        [tensorboard, "--logdir", logdir, "--host", "127.0.0.1", "--port", "0",
         "--reload_interval", "1"],
        stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True)
    seen = []
    deadline = time.time() + 120
    while time.time() < deadline:
        line = p.stdout.readline()
        if not line:
            break
        seen.append(line)
        m = re.search(r"http://127\.0\.0\.1:(\d+)/", line)
        if m:
            return p, int(m.group(1))
    p.kill()
    raise AssertionError("TensorBoard did not start:\n" + "".join(seen))


def wait_for(what, fn, seconds=60):
    """fn() until it returns something true (TensorBoard loads in the
    background)."""
    deadline = time.time() + seconds
    while True:
        value = fn()
        if value:
            return value
        if time.time() > deadline:
            raise AssertionError(f"TensorBoard never showed {what}")
        time.sleep(0.5)


def main():
    runnel, repo = sys.argv[1], sys.argv[2]
    python = subprocess.run(
        ["bash", os.path.join(repo, "scripts/venv.sh"), "tensorboard"],
        capture_output=True, text=True, check=True).stdout.strip()
    tensorboard = os.path.join(os.path.dirname(python), "tensorboard")
    with tempfile.TemporaryDirectory() as tmp:
        script = os.path.join(tmp, "fit.rnl")
        with open(script, "w") as f:
            f.write(SCRIPT)
        logdir = os.path.join(tmp, "logs")
        metrics = os.path.join(tmp, "metrics.jsonl")
        r = subprocess.run(
            [runnel, "run", script, "--logdir", logdir, "--metrics", metrics,
             "--histograms-every", "10"],
            capture_output=True, text=True, timeout=120)
        assert r.returncode == 0, r.stderr
        reports = [json.loads(l) for l in open(metrics)]
        assert len(reports) == 40, len(reports)

        p, port = start_tensorboard(tensorboard, logdir)
        try:
            runs = wait_for("the run", lambda: json.loads(get(port, "/data/runs")))
            assert runs == ["."], runs

            # Every report, at global steps 1 to 40, as --metrics logged it
            # (the event file holds f32).
            def loss_series():
                s = json.loads(get(port, "/data/plugin/scalars/scalars",
                                   run=".", tag="loss"))
                return s if len(s) == 40 else None
            series = wait_for("40 losses", loss_series)
            for (wall, step, value), report in zip(series, reports):
                assert step == report["report"], (step, report)
                want = report["loss"]
                assert abs(value - want) <= 1e-6 * max(1.0, abs(want)), \
                    (step, value, want)
            assert series[-1][2] < series[0][2] / 10, series
            epochs = json.loads(get(port, "/data/plugin/scalars/scalars",
                                    run=".", tag="epoch"))
            assert [v for _, _, v in epochs] == [r["epoch"] for r in reports]
            print(f"scalars: loss {series[0][2]:.4f} at step {series[0][1]} "
                  f"-> {series[-1][2]:.6f} at step {series[-1][1]}")

            # Histograms of the two trainable variables at steps 1, 11, 21,
            # 31: each counts the variable's elements.
            tags = json.loads(get(port, "/data/plugin/histograms/tags"))["."]
            assert sorted(tags) == ["model/dense/b", "model/dense/w"], tags
            hist = json.loads(get(port, "/data/plugin/histograms/histograms",
                                  run=".", tag="model/dense/w"))
            assert [step for _, step, _ in hist] == [1, 11, 21, 31], hist
            for _, _, buckets in hist:
                assert sum(count for _, _, count in buckets) == 1, buckets
            print(f"histograms: {sorted(tags)} at steps "
                  f"{[step for _, step, _ in hist]}")

            # The graph: the scope's nodes under model/, with their ops and
            # output shapes.
            graph = get(port, "/data/plugin/graphs/graph", run=".").decode()
            ops = dict(re.findall(r'^\s*name: "([^"]+)"\n\s*op: "([^"]+)"',
                                  graph, re.M))
            assert ops.get("x") == "placeholder", list(ops.items())[:20]
            assert ops.get("model/dense/w") == "variable", ops
            assert ops.get("model/dense/y") == "matmul", ops
            assert ops.get("model/dense/bias_add") == "bias_add", ops
            assert "_output_shapes" in graph
            print(f"graph: {len(ops)} nodes, e.g. "
                  f"{[(n, o) for n, o in ops.items() if n.startswith('model/')][:4]}")
        finally:
            p.kill()
            p.wait()


if __name__ == "__main__":
    main()

"""An example trained on the GPU reaches the accuracy it reaches on the CPU
(ctest label `gpu`, docs/gpu.md). Runs SCRIPT twice with the same ARGS,
with --devices gpu=0 and with --devices gpu=1 (tracing a few runs), and
checks that:

  - the GPU run's kernels for OP (conv2d, matmul) ran on the GPU (its
    trace has OP events on the GPU's track); OP may list several ops,
    comma-separated, any of which will do (the placer's measured costs
    decide which of a loop's row ops go to the GPU);
  - both print "test accuracy X", and the two differ by at most --tol
    (0.02): the same model, initialisation and data; only rounding and the
    order of sums differ between the devices.

Without a GPU it exits 77 (ctest's skip), saying why; a GPU that is
visible but cannot be used fails the test.

    example_accuracy.py RUNNEL SCRIPT OP [--tol T] -- ARGS...
"""
import json
import os
import re
import subprocess
import sys
import tempfile


def accuracy(out, which):
    m = re.findall(r"test accuracy ([0-9.]+)", out)
    if not m:
        sys.exit(f"{which}: no 'test accuracy' in its output:\n{out}")
    return float(m[-1])


def main(argv):
    sep = argv.index("--")
    runnel, script, op = argv[:3]
    tol = float(argv[argv.index("--tol") + 1]) if "--tol" in argv[:sep] \
        else 0.02
    args = argv[sep + 1:]
    with tempfile.TemporaryDirectory() as tmp:
        probe = os.path.join(tmp, "probe.rnl")
        with open(probe, "w", encoding="utf-8") as f:
            f.write("let x = 1\n")
        r = subprocess.run([runnel, "run", probe, "--devices", "gpu=1"],
                           stdout=subprocess.PIPE, stderr=subprocess.STDOUT,
                           text=True, check=False)
        if r.returncode != 0:
            # Skipped only when there is no GPU to use; a GPU that is there
            # but cannot be used (cuBLASLt missing, ...) is a failure.
            if "none is visible" in r.stdout:
                print(f"no GPU: {r.stdout.strip()}")
                return 77
            sys.exit(f"the GPU probe failed:\n{r.stdout}")
        trace = os.path.join(tmp, "trace.json")
        runs = {}
        for name, extra in (("cpu", ["--devices", "gpu=0"]),
                            ("gpu", ["--devices", "gpu=1", "--trace", trace,
                                     "--trace-runs", "5..7"])):
            r = subprocess.run([runnel, "run", script] + args + extra,
                               stdout=subprocess.PIPE,
                               stderr=subprocess.STDOUT, text=True,
                               check=False)
            print(f"--- {name}:\n{r.stdout}")
            if r.returncode != 0:
                sys.exit(f"{name} run failed (exit {r.returncode})")
            runs[name] = accuracy(r.stdout, name)
        with open(trace, encoding="utf-8") as f:
            events = json.load(f)["traceEvents"]
    gpu_tracks = {e["tid"] for e in events if e.get("name") == "thread_name"
                  and "gpu" in e["args"]["name"]}
    on_gpu = [e for e in events if e.get("ph") == "X"
              and e.get("tid") in gpu_tracks
              and e["args"]["detail"].split(" ")[0] in op.split(",")]
    if not on_gpu:
        sys.exit(f"no {' or '.join(op.split(','))} ran on the GPU in traced "
                 "runs 5-7")
    print(f"{len(on_gpu)} {op} kernels on the GPU in runs 5-7; test accuracy "
          f"CPU {runs['cpu']:.4f}, GPU {runs['gpu']:.4f}")
    if abs(runs["gpu"] - runs["cpu"]) > tol:
        sys.exit(f"the GPU's accuracy {runs['gpu']:.4f} is not within {tol} "
                 f"of the CPU's {runs['cpu']:.4f}")
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))

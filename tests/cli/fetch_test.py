"""`runnel run FILE --feed NAME=FILE.npy ... --fetch NAME ... --out DIR`:
after the script, one run of the named values with the inputs fed from
.npy files, each written to DIR/NAME.npy; checked against NumPy. And the
errors: usage errors (status 2), an unknown name, a feed that is not an
input or has the wrong shape, a missing feed, all pointing at the option.

  python3 tests/cli/fetch_test.py build/runnel
"""
import os
import subprocess
import sys
import tempfile

import numpy as np

RUNNEL = sys.argv[1]
SCRIPT = """\
input x: f32[?, 3]
input scale: f32[] = 2.0
var w = [[1.0, 0.0], [0.0, 1.0], [1.0, 1.0]]
let y = x @ w * scale
let total = sum(y)
let steps = 0
"""
failures = []


def check(ok, what):
    if not ok:
        failures.append(what)
        print("FAIL:", what)


def run(*args):
    return subprocess.run([RUNNEL, "run", *args], capture_output=True, text=True,
                          timeout=120)


with tempfile.TemporaryDirectory() as tmp:
    script = os.path.join(tmp, "model.rnl")
    with open(script, "w") as f:
        f.write(SCRIPT)
    x = np.array([[1, 2, 3], [4, 5, 6]], dtype=np.float32)
    np.save(os.path.join(tmp, "x.npy"), x)
    np.save(os.path.join(tmp, "scale.npy"), np.array(0.5, dtype=np.float32))
    w = np.array([[1, 0], [0, 1], [1, 1]], dtype=np.float32)
    out = os.path.join(tmp, "out", "nested")

    # Two fetches; `scale` keeps its default.
    p = run(script, "--feed", f"x={tmp}/x.npy", "--fetch", "y", "--fetch", "total",
            "--out", out)
    check(p.returncode == 0, f"run with --fetch: {p.returncode} {p.stderr}")
    if p.returncode == 0:
        y = np.load(os.path.join(out, "y.npy"))
        check(y.dtype == np.float32 and y.shape == (2, 2), f"y.npy {y.dtype} {y.shape}")
        check(np.array_equal(y, x @ w * 2), f"y = {y}")
        total = np.load(os.path.join(out, "total.npy"))
        check(total.shape == () and total == (x @ w * 2).sum(), f"total = {total}")

    # Both inputs fed (--feed=NAME=FILE also works).
    p = run(script, f"--feed=x={tmp}/x.npy", "--feed", f"scale={tmp}/scale.npy",
            "--fetch", "y", "--out", out)
    check(p.returncode == 0, f"two feeds: {p.stderr}")
    if p.returncode == 0:
        check(np.array_equal(np.load(os.path.join(out, "y.npy")), x @ w * 0.5),
              "y with scale 0.5")

    def error(args, status, expected):
        p = run(script, *args)
        check(p.returncode == status,
              f"{args}: status {p.returncode}, expected {status}: {p.stderr}")
        check(expected in p.stderr, f"{args}: {expected!r} not in {p.stderr!r}")

    error(["--fetch", "y"], 2, "--fetch needs --out DIR")
    error(["--feed", "x=a.npy", "--out", out], 2, "--feed needs --fetch NAME")
    error(["--fetch", "a/b", "--out", out], 2,
          "--fetch needs the name of a value the script binds at its top level, got 'a/b'")
    error(["--feed", "x", "--fetch", "y", "--out", out], 2, "--feed needs NAME=FILE.npy")
    # The language's own errors, at the option's code.
    error(["--feed", f"x={tmp}/x.npy", "--fetch", "yy", "--out", out], 1,
          "<command line>:1:22: error: unknown name 'yy'")
    error(["--feed", f"x={tmp}/x.npy", "--fetch", "yy", "--out", out], 1,
          "did you mean 'y'?")
    error(["--fetch", "y", "--out", out], 1, "x")  # missing feed: names the input
    error(["--feed", f"w={tmp}/x.npy", "--fetch", "y", "--out", out], 1,
          "cannot feed 'w'")
    np.save(os.path.join(tmp, "bad.npy"), np.zeros((2, 4), dtype=np.float32))
    error(["--feed", f"x={tmp}/bad.npy", "--fetch", "y", "--out", out], 1, "[?,3]")
    error(["--feed", f"x={tmp}/missing.npy", "--fetch", "y", "--out", out], 1,
          "missing.npy")
    # Not a tensor: a plain number the script binds.
    error(["--fetch", "steps", "--feed", f"x={tmp}/x.npy", "--out", out], 0, "")

if failures:
    sys.exit(f"{len(failures)} failures")
print("fetch test: ok")

"""`runnel export`, checked by ONNX's checker and by ONNX Runtime, and the
round trip through `runnel import`.

For tests/onnx/export_ops.rnl (a value per translated op, in-graph loops
and conditionals, nested, too) and the examples fashion_mlp, fashion_cnn, fashion_rows (trained for
a few steps on Debian's Fashion-MNIST) and charlm's forward (an LSTM with its output
layer and loss in a loop over a window, on Debian's fortunes): `runnel export FILE --fetch ... -o model.onnx --feed ...
--out DIR` writes the model and Runnel's own values of the fetches in one
run (the same variables); the model must pass `onnx.checker` (full check),
ONNX Runtime's outputs must match Runnel's to 1e-5, and the model imported
back (`runnel import`) and run must match them too. Also: a refused export
(an op without a translation, deep in loops and conditionals) names the
script line, against
tests/onnx/golden/export_refused.expected.

    export_test.py RUNNEL REPO

RUNNEL_UPDATE_GOLDENS=1 writes the golden file instead of comparing.
"""
import os
import subprocess
import sys
import tempfile

import numpy as np
import onnx
import onnxruntime as ort

RUNNEL, REPO = os.path.abspath(sys.argv[1]), os.path.abspath(sys.argv[2])
GOLDEN = os.path.join(REPO, "tests", "onnx", "golden")
UPDATE = os.environ.get("RUNNEL_UPDATE_GOLDENS") == "1"
FASHION = "/usr/share/datasets/fashion-mnist/"
FORTUNES = "/usr/share/games/fortunes/"
TOLERANCE = dict(rtol=1e-5, atol=1e-5)
failures = []


def runnel(*args, cwd):
    return subprocess.run([RUNNEL, *args], cwd=cwd, capture_output=True,
                          text=True, timeout=600)


def check(name, script, fetches, feeds, work, args=()):
    """Exports `fetches` of `script`, then compares ONNX Runtime's values
    and the re-imported script's with Runnel's."""
    feed_args = []
    for key, value in feeds.items():
        np.save(os.path.join(work, f"{key}.npy"), value)
        feed_args += ["--feed", f"{key}={key}.npy"]
    fetch_args = [a for f in fetches for a in ("--fetch", f)]
    p = runnel("export", script, *args, *fetch_args, "-o", f"{name}.onnx",
               *feed_args, "--out", f"{name}_runnel", cwd=work)
    if p.returncode != 0:
        failures.append(f"{name}: export: exit {p.returncode}: {p.stderr}")
        return
    path = os.path.join(work, f"{name}.onnx")
    try:
        onnx.checker.check_model(onnx.load(path), full_check=True)
    except Exception as e:  # pylint: disable=broad-except
        failures.append(f"{name}: onnx.checker: {e}")
        return
    want = {f: np.load(os.path.join(work, f"{name}_runnel", f"{f}.npy")) for f in fetches}
    options = ort.SessionOptions()
    options.log_severity_level = 3  # errors only: an input's default warns
    session = ort.InferenceSession(path, options, providers=["CPUExecutionProvider"])
    got = dict(zip(fetches, session.run(fetches, feeds)))
    compare(f"{name} (ONNX Runtime)", got, want)

    # The round trip: the exported model imported back.
    p = runnel("import", f"{name}.onnx", "-o", f"{name}_back.rnl", cwd=work)
    if p.returncode != 0:
        failures.append(f"{name}: import of the export: exit {p.returncode}: {p.stderr}")
        return
    p = runnel("run", f"{name}_back.rnl", *fetch_args, *feed_args, "--out",
               f"{name}_back", cwd=work)
    if p.returncode != 0:
        failures.append(f"{name}: run of the re-import: exit {p.returncode}: {p.stderr}")
        return
    back = {f: np.load(os.path.join(work, f"{name}_back", f"{f}.npy")) for f in fetches}
    compare(f"{name} (exported and imported back)", back, want)


def compare(what, got, want):
    for f, w in want.items():
        g = got[f]
        if g.dtype != w.dtype or g.shape != w.shape:
            failures.append(f"{what}: {f}: {g.dtype}{g.shape}, Runnel gave {w.dtype}{w.shape}")
        elif not np.allclose(g, w, **TOLERANCE):
            failures.append(f"{what}: {f}: differs by up to {np.abs(g - w).max()}")


def main():
    rng = np.random.default_rng(0)
    with tempfile.TemporaryDirectory(prefix="onnx_export_") as work:
        ops = ["m", "mt", "ma", "act", "sm", "lsm", "sxe", "red", "am", "sq", "rs", "cc", "sp", "ex",
               "cv", "cvv", "mp", "ap", "mpd", "cv3", "cv3v", "mp3", "ap3", "ct", "ctv", "ct3", "ws", "gs", "ln", "att", "att_t", "sums", "total", "nest", "rows", "pick", "picks", "deep", "ge", "se", "gn",
               "sn", "tk", "top_at", "nz", "uv", "ui", "uinv", "uc", "urows", "lh", "lc", "gru"]
        check("ops", os.path.join(REPO, "tests", "onnx", "export_ops.rnl"), ops,
              {"x": rng.standard_normal((4, 6)).astype(np.float32),
               "img": rng.standard_normal((2, 8, 8, 3)).astype(np.float32),
               "vol": rng.standard_normal((2, 5, 6, 7, 2)).astype(np.float32)}, work)
        if os.path.isdir(FASHION):
            short = ("--arg", "epochs=1", "--arg", "steps=20")
            check("fashion_mlp", os.path.join(REPO, "examples", "fashion_mlp.rnl"),
                  ["logits"], {"x": rng.random((8, 784), dtype=np.float32)}, work, short)
            check("fashion_cnn", os.path.join(REPO, "examples", "fashion_cnn.rnl"),
                  ["logits"], {"x": rng.random((8, 28, 28, 1), dtype=np.float32)}, work,
                  short)
            check("fashion_rows", os.path.join(REPO, "examples", "fashion_rows.rnl"),
                  ["logits"], {"x": rng.random((8, 28, 28), dtype=np.float32)}, work,
                  short)
        else:
            print(f"export_test: {FASHION} missing; the Fashion-MNIST examples were "
                  f"not exported")
        if os.path.isdir(FORTUNES):
            # The char-LM's forward: an LSTM step, its output layer and
            # loss in an in-graph loop over a window, with lengths and a
            # carried state; its final state and summed loss.
            batch, units = 32, 256
            check("charlm", os.path.join(REPO, "examples", "charlm.rnl"),
                  ["total", "count", "h", "c"],
                  {"x": rng.integers(0, 256, (batch, 12)).astype(np.int32),
                   "y": rng.integers(0, 256, (batch, 12)).astype(np.int32),
                   "n": rng.integers(0, 13, batch).astype(np.int32),
                   "h0": (rng.random((batch, units), dtype=np.float32) - 0.5) * 0.2,
                   "c0": (rng.random((batch, units), dtype=np.float32) - 0.5) * 0.2},
                  work, ("--arg", "steps=2", "--arg", "valid_windows=1"))
        else:
            print(f"export_test: {FORTUNES} missing; charlm was not exported")
        # A refusal names the line.
        script = os.path.join(REPO, "tests", "onnx", "export_refused.rnl")
        p = runnel("export", os.path.relpath(script, REPO), "--fetch", "total", "-o",
                   os.path.join(work, "refused.onnx"), cwd=REPO)
        actual = f"exit {p.returncode}\n{p.stderr}"
        path = os.path.join(GOLDEN, "export_refused.expected")
        if UPDATE:
            with open(path, "w", encoding="utf-8") as f:
                f.write(actual)
        else:
            with open(path, encoding="utf-8") as f:
                expected = f.read()
            if actual != expected:
                failures.append(f"export_refused: differs from the golden file\n"
                                f"--- expected\n{expected}--- actual\n{actual}")
        if os.path.exists(os.path.join(work, "refused.onnx")):
            failures.append("export_refused: a refused export wrote its file")
    for f in failures:
        print(f"FAIL: {f}", file=sys.stderr)
    if not failures:
        print("export_test: all passed")
    return 1 if failures else 0


if __name__ == "__main__":
    sys.exit(main())

"""`runnel import`: the script it writes, that script's values and training,
and its errors, each checked against a golden file.

Builds small ONNX models with onnx.helper (in build/venv/onnx,
requirements/onnx.txt), imports them in a temporary folder (so that the
paths in the messages are the same on every machine) and checks:
- a two-layer model with initializers and scoped node names: the script
  against tests/onnx/golden/mlp.rnl.expected, its outputs against NumPy, and
  that the script, edited as a user would, trains (`grad` works on it);
- each refusal's message and exit status against golden/NAME.expected: an
  unsupported operator, an attribute the importer does not know, an input
  that must be a constant, a file that is not a model, a missing file.

    import_test.py RUNNEL REPO

RUNNEL_UPDATE_GOLDENS=1 writes the golden files instead of comparing.
"""
import os
import subprocess
import sys
import tempfile

import numpy as np
import onnx
from onnx import TensorProto, helper, numpy_helper

RUNNEL, REPO = os.path.abspath(sys.argv[1]), os.path.abspath(sys.argv[2])
GOLDEN = os.path.join(REPO, "tests", "onnx", "golden")
UPDATE = os.environ.get("RUNNEL_UPDATE_GOLDENS") == "1"
failures = []


def check_golden(name, actual):
    path = os.path.join(GOLDEN, name)
    if UPDATE:
        with open(path, "w", encoding="utf-8") as f:
            f.write(actual)
        return
    with open(path, encoding="utf-8") as f:
        expected = f.read()
    if actual != expected:
        failures.append(f"{name}: differs from the golden file\n"
                        f"--- expected\n{expected}--- actual\n{actual}")


def save(model, path):
    onnx.checker.check_model(model)
    onnx.save(model, path)


def runnel(*args, cwd):
    return subprocess.run([RUNNEL, *args], cwd=cwd, capture_output=True,
                          text=True, timeout=120)


def mlp_model(w1, b1, w2):
    """x[?, 4] -> Gemm -> Relu -> MatMul: logits[?, 2], the nodes named as
    PyTorch's exporter names them."""
    nodes = [
        helper.make_node("Gemm", ["x", "fc1.weight", "fc1.bias"], ["/fc1/Gemm_output_0"],
                         name="/fc1/Gemm", transB=1),
        helper.make_node("Relu", ["/fc1/Gemm_output_0"], ["/act/Relu_output_0"],
                         name="/act/Relu"),
        helper.make_node("MatMul", ["/act/Relu_output_0", "head.weight"], ["logits"],
                         name="/head/MatMul"),
    ]
    graph = helper.make_graph(
        nodes, "mlp",
        [helper.make_tensor_value_info("x", TensorProto.FLOAT, ["batch", 4])],
        [helper.make_tensor_value_info("logits", TensorProto.FLOAT, ["batch", 2])],
        initializer=[numpy_helper.from_array(w1, "fc1.weight"),
                     numpy_helper.from_array(b1, "fc1.bias"),
                     numpy_helper.from_array(w2, "head.weight")])
    return helper.make_model(graph, opset_imports=[helper.make_opsetid("", 17)],
                             producer_name="import_test")


def test_mlp(work):
    rng = np.random.default_rng(0)
    w1 = rng.standard_normal((3, 4)).astype(np.float32)  # [out, in]: transB
    b1 = rng.standard_normal(3).astype(np.float32)
    w2 = rng.standard_normal((3, 2)).astype(np.float32)
    save(mlp_model(w1, b1, w2), os.path.join(work, "mlp.onnx"))
    script = imported(work, "mlp")
    if script is None:
        return
    check_golden("mlp.rnl.expected", script)

    # Its values, against NumPy.
    x = rng.standard_normal((5, 4)).astype(np.float32)
    np.save(os.path.join(work, "x.npy"), x)
    p = runnel("run", "mlp.rnl", "--feed", "x=x.npy", "--fetch", "logits",
               "--out", "out", cwd=work)
    if p.returncode != 0:
        failures.append(f"run mlp: exit {p.returncode}: {p.stderr}")
        return
    got = np.load(os.path.join(work, "out", "logits.npy"))
    want = np.maximum(x @ w1.T + b1, 0) @ w2
    if not np.allclose(got, want, rtol=1e-5, atol=1e-6):
        failures.append(f"mlp values: {got} != {want}")

    # Edited as a user would: a loss and an optimizer step after it; the
    # imported variables train.
    train = script + f"""
import optim
let xs = {np.array2string(x, separator=', ', floatmode='unique')}
let loss = mean(square(logits - 1.0))
let step = optim.sgd(loss, lr = 0.05)
let before = run loss with {{x: xs}}
for i in 0..30 {{
    run step with {{x: xs}}
}}
let final = run loss with {{x: xs}}
assert(final < before * 0.8, "the imported model trains")
"""
    with open(os.path.join(work, "train.rnl"), "w", encoding="utf-8") as f:
        f.write(train)
    p = runnel("run", "train.rnl", cwd=work)
    if p.returncode != 0:
        failures.append(f"training the imported mlp: exit {p.returncode}: "
                        f"{p.stdout}{p.stderr}")


def one_node(op, inputs, outputs, attrs=None, opset=17, extra_inputs=()):
    """A model of one node over float inputs of shape [2, 3]."""
    node = helper.make_node(op, [n for n, _ in inputs], outputs, name="n0",
                            **(attrs or {}))
    graph = helper.make_graph(
        [node], op,
        [helper.make_tensor_value_info(n, t, [2, 3]) for n, t in inputs]
        + list(extra_inputs),
        [helper.make_tensor_value_info(o, TensorProto.FLOAT, None) for o in outputs])
    return helper.make_model(graph, opset_imports=[helper.make_opsetid("", opset)])


def test_errors(work):
    f = TensorProto.FLOAT
    cases = {
        # An operator without a translation.
        "unsupported_operator": one_node("BitShift", [("x", f)], ["y"]),
        # An attribute the translator does not read.
        "unknown_attribute": one_node("Relu", [("x", f)], ["y"], {"slope": 0.5}),
        # An attribute value without an exact translation.
        "unsupported_attribute_value": one_node(
            "Gelu", [("x", f)], ["y"], {"approximate": "erf"}, opset=20),
        # An input Runnel needs while building the graph.
        "computed_axes": one_node("ReduceSum", [("x", f), ("axes", TensorProto.INT64)],
                                  ["y"], opset=13),
    }
    for name, model in cases.items():
        onnx.save(model, os.path.join(work, "model.onnx"))
        p = runnel("import", "model.onnx", "-o", "out.rnl", cwd=work)
        check_golden(f"{name}.expected", f"exit {p.returncode}\n{p.stderr}")
        if os.path.exists(os.path.join(work, "out.rnl")):
            failures.append(f"{name}: a refused import wrote out.rnl")
    # A file that is not a model, and no file.
    with open(os.path.join(work, "model.onnx"), "wb") as out:
        out.write(b"\x0a\xff\xff\xff\xff\xff not a model")
    p = runnel("import", "model.onnx", "-o", "out.rnl", cwd=work)
    check_golden("not_a_model.expected", f"exit {p.returncode}\n{p.stderr}")
    p = runnel("import", "missing.onnx", "-o", "out.rnl", cwd=work)
    check_golden("missing_file.expected", f"exit {p.returncode}\n{p.stderr}")


def imported(work, name):
    """`runnel import NAME.onnx -o NAME.rnl` in `work`: the script's text,
    or None (a failure noted) when the import fails."""
    p = runnel("import", f"{name}.onnx", "-o", f"{name}.rnl", cwd=work)
    if p.returncode != 0:
        failures.append(f"import {name}: exit {p.returncode}: {p.stderr}")
        return None
    with open(os.path.join(work, f"{name}.rnl"), encoding="utf-8") as f:
        return f.read()


def test_scan(work):
    """Scan over axis 1 of x, backwards, its outputs stacked along axis 1
    (prepended): the running sum and product of x's columns from the last,
    checked against NumPy."""
    f = TensorProto.FLOAT
    body = helper.make_graph(
        [helper.make_node("Add", ["s_in", "col"], ["s_out"]),
         helper.make_node("Mul", ["s_out", "col"], ["y"])],
        "body",
        [helper.make_tensor_value_info("s_in", f, [3]),
         helper.make_tensor_value_info("col", f, [3])],
        [helper.make_tensor_value_info("s_out", f, [3]),
         helper.make_tensor_value_info("y", f, [3])])
    node = helper.make_node("Scan", ["s0", "x"], ["s", "ys"], name="scan", body=body,
                            num_scan_inputs=1, scan_input_axes=[1],
                            scan_input_directions=[1], scan_output_axes=[1],
                            scan_output_directions=[1])
    graph = helper.make_graph(
        [node], "scan",
        [helper.make_tensor_value_info("s0", f, [3]),
         helper.make_tensor_value_info("x", f, [3, 4])],
        [helper.make_tensor_value_info("s", f, [3]),
         helper.make_tensor_value_info("ys", f, [3, 4])])
    save(helper.make_model(graph, opset_imports=[helper.make_opsetid("", 16)]),
         os.path.join(work, "scan.onnx"))
    rng = np.random.default_rng(1)
    s0 = rng.standard_normal(3).astype(np.float32)
    x = rng.standard_normal((3, 4)).astype(np.float32)
    np.save(os.path.join(work, "s0.npy"), s0)
    np.save(os.path.join(work, "x.npy"), x)
    if imported(work, "scan") is None:
        return
    p = runnel("run", "scan.rnl", "--feed", "s0=s0.npy", "--feed", "x=x.npy",
               "--fetch", "s", "--fetch", "ys", "--out", "scan_out", cwd=work)
    if p.returncode != 0:
        failures.append(f"run scan: exit {p.returncode}: {p.stderr}")
        return
    state, rows = s0.copy(), []
    for t in range(3, -1, -1):  # the columns from the last
        state = state + x[:, t]
        rows.append(state * x[:, t])
    want_ys = np.stack(rows[::-1], axis=1)  # prepended: the last pass first
    got_s = np.load(os.path.join(work, "scan_out", "s.npy"))
    got_ys = np.load(os.path.join(work, "scan_out", "ys.npy"))
    if not np.allclose(got_s, state, rtol=1e-5) or got_ys.shape != (3, 4) or \
            not np.allclose(got_ys, want_ys, rtol=1e-5):
        failures.append(f"scan values: {got_s} {got_ys} != {state} {want_ys}")


def test_loop(work):
    """A Loop with a trip count and a condition, its scan output stacked
    in place (scatter_nd into rows that double when full, cut to the
    passes after the loop), against NumPy: no pass, one, a condition that
    ends it early, and 3000 passes."""
    f, i64, b = TensorProto.FLOAT, TensorProto.INT64, TensorProto.BOOL
    half = helper.make_tensor("half_value", f, [], [0.5])
    body = helper.make_graph(
        [helper.make_node("Constant", [], ["half"], value=half),
         helper.make_node("Mul", ["s_in", "half"], ["h"]),
         helper.make_node("Add", ["h", "x"], ["s_out"]),
         helper.make_node("Cast", ["i"], ["fi"], to=f),
         helper.make_node("Mul", ["s_out", "fi"], ["y"]),
         helper.make_node("Less", ["i", "stop"], ["c_out"])],
        "body",
        [helper.make_tensor_value_info("i", i64, []),
         helper.make_tensor_value_info("c_in", b, []),
         helper.make_tensor_value_info("s_in", f, [64])],
        [helper.make_tensor_value_info("c_out", b, []),
         helper.make_tensor_value_info("s_out", f, [64]),
         helper.make_tensor_value_info("y", f, [64])])
    node = helper.make_node("Loop", ["trips", "", "s0"], ["s", "ys"],
                            name="loop", body=body)
    graph = helper.make_graph(
        [node], "loop",
        [helper.make_tensor_value_info("trips", i64, []),
         helper.make_tensor_value_info("s0", f, [64]),
         helper.make_tensor_value_info("x", f, [64]),
         helper.make_tensor_value_info("stop", i64, [])],
        [helper.make_tensor_value_info("s", f, [64]),
         helper.make_tensor_value_info("ys", f, [None, 64])])
    save(helper.make_model(graph, opset_imports=[helper.make_opsetid("", 16)]),
         os.path.join(work, "loop.onnx"))
    text = imported(work, "loop")
    if text is None:
        return
    if "scatter_nd(y_stack_room, reshape(i, [1, 1])" not in text or \
            "let ys = ys_rows[0:passes]" not in text:
        failures.append(f"loop: the scan output is not stacked in place:\n{text}")
    rng = np.random.default_rng(2)
    s0 = rng.standard_normal(64).astype(np.float32)
    x = rng.standard_normal(64).astype(np.float32)
    np.save(os.path.join(work, "s0.npy"), s0)
    np.save(os.path.join(work, "x.npy"), x)
    for trips, stop in [(0, 5), (1, 5), (100, 6), (3000, 10**9)]:
        np.save(os.path.join(work, "trips.npy"), np.int64(trips))
        np.save(os.path.join(work, "stop.npy"), np.int64(stop))
        p = runnel("run", "loop.rnl", "--feed", "trips=trips.npy", "--feed",
                   "s0=s0.npy", "--feed", "x=x.npy", "--feed", "stop=stop.npy",
                   "--fetch", "s", "--fetch", "ys", "--out", "loop_out",
                   cwd=work)
        if p.returncode != 0:
            failures.append(f"run loop ({trips}, {stop}): exit {p.returncode}: "
                            f"{p.stderr}")
            continue
        state, rows, i, go = s0.copy(), [], 0, True
        while go and i < trips:  # ONNX tests the condition after each pass
            state = state * np.float32(0.5) + x
            rows.append(state * np.float32(i))
            go = i < stop
            i += 1
        want_ys = np.array(rows, dtype=np.float32).reshape(-1, 64)
        got_s = np.load(os.path.join(work, "loop_out", "s.npy"))
        got_ys = np.load(os.path.join(work, "loop_out", "ys.npy"))
        if not np.allclose(got_s, state, rtol=1e-5) or \
                got_ys.shape != want_ys.shape or \
                not np.allclose(got_ys, want_ys, rtol=1e-5):
            failures.append(f"loop ({trips}, {stop}) values: shape "
                            f"{got_ys.shape}, want {want_ys.shape}")


def test_einsum(work):
    """Einsum with ellipses (broadcast as numpy aligns them) and diagonals,
    with one, two and three operands, against numpy.einsum; a diagonal
    among three operands is refused, naming the node."""
    f = TensorProto.FLOAT
    rng = np.random.default_rng(2)
    cases = [
        ("diagonal", "ii->i", [(3, 3)]),
        ("trace", "ii", [(4, 4)]),
        ("batch_diagonal", "...ii->...i", [(2, 3, 3)]),
        ("diagonal_product", "iij,jk->ik", [(3, 3, 2), (2, 4)]),
        ("broadcast_matmul", "...ij,...jk->...ik", [(2, 1, 3, 4), (5, 4, 2)]),
        ("implicit_ellipsis", "...j,jk", [(2, 3, 4), (4, 5)]),
        ("three", "...i,...j,k->...ijk", [(2, 3), (1, 4), (2,)]),
    ]
    for name, eq, shapes in cases:
        names = [f"x{k}" for k in range(len(shapes))]
        xs = [rng.standard_normal(s).astype(np.float32) for s in shapes]
        want = np.einsum(eq, *xs)
        node = helper.make_node("Einsum", names, ["y"], name="e", equation=eq)
        graph = helper.make_graph(
            [node], name,
            [helper.make_tensor_value_info(n, f, list(s)) for n, s in zip(names, shapes)],
            [helper.make_tensor_value_info("y", f, list(want.shape))])
        save(helper.make_model(graph, opset_imports=[helper.make_opsetid("", 13)]),
             os.path.join(work, f"{name}.onnx"))
        feeds = []
        for n, x in zip(names, xs):
            np.save(os.path.join(work, f"{name}_{n}.npy"), x)
            feeds += ["--feed", f"{n}={name}_{n}.npy"]
        if imported(work, name) is None:
            continue
        p = runnel("run", f"{name}.rnl", *feeds, "--fetch", "y", "--out",
                   f"{name}_out", cwd=work)
        if p.returncode != 0:
            failures.append(f"run einsum {name}: exit {p.returncode}: {p.stderr}")
            continue
        got = np.load(os.path.join(work, f"{name}_out", "y.npy"))
        if got.shape != want.shape or not np.allclose(got, want, rtol=1e-5, atol=1e-6):
            failures.append(f"einsum {name} ({eq}): {got} != {want}")
    node = helper.make_node("Einsum", ["a", "b", "c"], ["y"], name="e3",
                            equation="ii,i,i->i")
    graph = helper.make_graph(
        [node], "refused",
        [helper.make_tensor_value_info("a", f, [2, 2]),
         helper.make_tensor_value_info("b", f, [2]),
         helper.make_tensor_value_info("c", f, [2])],
        [helper.make_tensor_value_info("y", f, [2])])
    save(helper.make_model(graph, opset_imports=[helper.make_opsetid("", 13)]),
         os.path.join(work, "refused.onnx"))
    p = runnel("import", "refused.onnx", "-o", "refused.rnl", cwd=work)
    if p.returncode != 1 or "'e3' (Einsum)" not in p.stderr or "twice" not in p.stderr:
        failures.append(f"einsum diagonal of three operands: exit {p.returncode}: "
                        f"{p.stderr}")


def main():
    with tempfile.TemporaryDirectory(prefix="onnx_import_") as work:
        test_mlp(work)
    with tempfile.TemporaryDirectory(prefix="onnx_import_") as work:
        test_scan(work)
    with tempfile.TemporaryDirectory(prefix="onnx_import_") as work:
        test_loop(work)
    with tempfile.TemporaryDirectory(prefix="onnx_import_") as work:
        test_einsum(work)
    with tempfile.TemporaryDirectory(prefix="onnx_import_") as work:
        test_errors(work)
    for f in failures:
        print(f"FAIL: {f}", file=sys.stderr)
    if not failures:
        print("import_test: all passed" + (" (goldens written)" if UPDATE else ""))
    return 1 if failures else 0


if __name__ == "__main__":
    sys.exit(main())

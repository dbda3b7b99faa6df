"""`runnel import` against ONNX's node tests: the conformance harness.

For each node test of the installed onnx package (requirements/onnx.txt,
in the environment build/venv/onnx), imports the test's model with
`runnel import MODEL.onnx -o OUT.rnl`, runs the script once per data set
with `runnel run OUT.rnl --feed ... --fetch ... --out DIR`, and compares
every output with ONNX's reference as ONNX's own backend runner does
(onnx/backend/test/runner): the same shape and dtype, and values within
rtol 1e-3, atol 1e-7 (np.testing.assert_allclose, NaN equal to NaN);
integers and booleans exactly. Then prints a table per operator.

    build/venv/onnx/bin/python scripts/onnx_conformance.py --runnel BIN
        [--filter REGEX] [--list FILE] [--markdown OUT.md] [--jobs N]
        [--keep DIR] [--expect-pass]

--filter: only the tests whose name the regular expression matches
(re.search); --list: only the tests named in FILE, one a line (`#` starts
a comment); --markdown: the report as a Markdown page as well (docs/onnx.md,
written by `make conformance`); --jobs: tests at once (default: the CPU
count); --keep: keep each test's files in DIR/TEST (model.onnx, model.rnl,
the fed, expected and fetched .npy files, each command's output), to run
or import one by hand; --expect-pass: exit 1 unless every selected test
passes (`make test` runs tests/onnx/fast_subset.txt so).

Each test ends as one of
  pass         every output of every data set matches;
  fail         an output has the wrong dtype, shape or values;
  unsupported  the importer said that an operator, attribute or dtype "is
               not supported" (exit status 1), or an input or output is of
               a kind Runnel's .npy feeds and fetches cannot carry
               (sequence, map, optional, a dtype Runnel lacks);
  error        any other failure of import or run: another exit status, a
               crash, a timeout, a missing header line or output file.

Where the tests come from: the onnx package defines them in
onnx/backend/test/case/node (one `expect(...)` per test: a model and its
inputs and reference outputs). Some builds of the package also ship them
on disk as onnx/backend/test/data/node/TEST/{model.onnx,
test_data_set_N/{input,output}_K.pb}; onnx 1.23's wheels do not, and its
backend runner generates them in memory (onnx.backend.test.loader). This
harness reads the directory when it is there and generates them otherwise.

The importer's contract (what this harness relies on): the script's header
has a line `# onnx-input: ONNXNAME -> RUNNELNAME` per graph input that is
not an initializer and `# onnx-output: ONNXNAME -> RUNNELNAME` per graph
output; inputs are fed and outputs fetched under the Runnel names, in the
ONNX dtypes. A checkpoint for the initializers lies beside the script.
An input the importer needs while building the graph (a shape, axes,
pads), which real models give as an initializer or a Constant but node
tests feed, it asks for on exit status 1 with `--const NAME=FILE.npy`; the
harness then imports again with that input's value from the data set
(once per data set) and does not feed it. Both commands run in the
test's folder with relative paths, so that what they print names no
temporary folder.
"""
import argparse
import collections
import concurrent.futures
import contextlib
import dataclasses
import glob
import io
import os
import re
import shutil
import signal
import subprocess
import sys
import tempfile
import warnings

import numpy as np
import onnx
from onnx import TensorProto, numpy_helper

TIMEOUT = 60  # seconds for each `runnel import` and each `runnel run`
RTOL, ATOL = 1e-3, 1e-7  # ONNX's node tests' tolerances (TestCase.rtol/atol)

# The ONNX element types Runnel has, with their names in Runnel; what
# np.load gives for each is numpy_helper's dtype for it.
RUNNEL_DTYPES = {
    TensorProto.FLOAT16: "f16",
    TensorProto.FLOAT: "f32",
    TensorProto.DOUBLE: "f64",
    TensorProto.INT8: "i8",
    TensorProto.UINT8: "u8",
    TensorProto.INT32: "i32",
    TensorProto.INT64: "i64",
    TensorProto.BOOL: "bool",
}
# Runnel has bf16, but its .npy files (io/npy.cc) have no form for it, so
# `runnel run --feed/--fetch` cannot carry one.
NO_NPY = {TensorProto.BFLOAT16: "bf16, which Runnel's .npy feeds and "
                                "fetches cannot carry"}
# ValueInfoProto type kinds other than a dense tensor, as the reasons say them.
TYPE_KINDS = {"sequence_type": "a sequence", "map_type": "a map",
              "optional_type": "an optional",
              "sparse_tensor_type": "a sparse tensor", None: "of no type"}
OUTCOMES = ("pass", "fail", "unsupported", "error")
HEADER = re.compile(r"^#\s*onnx-(input|output):\s*(.*?)\s*->\s*(\S+)\s*$")
# How the importer asks for an input as a constant.
CONST_HINT = re.compile(r"--const (.+?)=FILE\.npy")


@dataclasses.dataclass
class Case:
    """One node test: its model and data sets, each (inputs, outputs) in
    the order of the graph's fed inputs and of its outputs. A value is a
    numpy array, or None where it is not a tensor (a sequence, map or
    optional: the type check makes the test unsupported first)."""
    name: str
    model: onnx.ModelProto
    data_sets: list
    rtol: float = RTOL
    atol: float = ATOL


@dataclasses.dataclass
class Result:
    name: str
    domain: str  # "ai.onnx", "ai.onnx.ml", "ai.onnx.preview.training", ...
    op: str
    outcome: str  # one of OUTCOMES
    reason: str = ""  # one line; empty for a pass


# ---- the tests --------------------------------------------------------------

def node_data_dir():
    return os.path.join(os.path.dirname(onnx.__file__), "backend", "test",
                        "data", "node")


def fed_inputs(graph):
    """The graph's inputs that are fed: not initializers, not unnamed."""
    initializers = {t.name for t in graph.initializer}
    return [i for i in graph.input if i.name and i.name not in initializers]


def read_pb(path, value_info):
    """A test_data_set_N/{input,output}_K.pb as a numpy array, or None when
    the value it declares is not a tensor (not decoded: unsupported)."""
    if value_info.type.WhichOneof("value") != "tensor_type":
        return None
    tensor = TensorProto()
    with open(path, "rb") as f:
        tensor.ParseFromString(f.read())
    return numpy_helper.to_array(tensor)


def load_cases_from_disk(root):
    """The tests of a data/node directory (model.onnx and .pb files)."""
    cases = []
    for case_dir in sorted(glob.glob(os.path.join(root, "test_*"))):
        model_path = os.path.join(case_dir, "model.onnx")
        if not os.path.isfile(model_path):
            continue
        model = onnx.load(model_path)
        inputs, outputs = fed_inputs(model.graph), list(model.graph.output)
        data_sets = []
        set_dirs = glob.glob(os.path.join(case_dir, "test_data_set_*"))
        for set_dir in sorted(set_dirs, key=lambda d: int(d.rsplit("_", 1)[1])):
            ins = [read_pb(os.path.join(set_dir, f"input_{k}.pb"), vi)
                   for k, vi in enumerate(inputs)
                   if os.path.exists(os.path.join(set_dir, f"input_{k}.pb"))]
            outs = [read_pb(os.path.join(set_dir, f"output_{k}.pb"), vi)
                    for k, vi in enumerate(outputs)]
            data_sets.append((ins, outs))
        cases.append(Case(os.path.basename(case_dir), model, data_sets))
    return cases


def as_array(value):
    """A generated test's value as a numpy array (None if not a tensor)."""
    if isinstance(value, TensorProto):
        return numpy_helper.to_array(value)
    if isinstance(value, np.ndarray):
        return value
    if isinstance(value, np.generic):
        return np.asarray(value)
    return None  # a list (sequence), dict (map) or None (empty optional)


def load_generated_cases():
    """The tests onnx's backend test cases generate, as its backend runner
    loads them (about 10 s: every case computes its reference outputs).
    The cases' own numpy warnings (an intended inf or NaN) are silenced."""
    from onnx.backend.test.loader import load_model_tests  # noqa: PLC0415
    with warnings.catch_warnings(), np.errstate(all="ignore"), \
            contextlib.redirect_stdout(io.StringIO()):
        warnings.simplefilter("ignore")
        tests = load_model_tests(kind="node")
    cases = []
    for t in tests:
        data_sets = [([as_array(v) for v in ins], [as_array(v) for v in outs])
                     for ins, outs in t.data_sets]
        cases.append(Case(t.name, t.model, data_sets, t.rtol, t.atol))
    return sorted(cases, key=lambda c: c.name)


def load_cases(suite="node"):
    """Every test of the suite of the installed onnx (node, or the models
    of pytorch-converted or pytorch-operator), and where they came from."""
    if suite != "node":
        root = os.path.join(os.path.dirname(node_data_dir()), suite)
        return load_cases_from_disk(root), f"read from onnx/backend/test/data/{suite}"
    root = node_data_dir()
    if os.path.isdir(root):
        return load_cases_from_disk(root), "read from onnx/backend/test/data/node"
    return load_generated_cases(), \
        "generated by onnx.backend.test.case.node, as ONNX's backend runner does"


# ---- which operator a test tests --------------------------------------------

def domain_name(domain):
    return domain or "ai.onnx"


def squash(name):
    """An op type or a snake_case run of words, lower-cased without
    underscores, to match one against the other (LayerNormalization,
    layer_normalization -> layernormalization)."""
    return name.replace("_", "").lower()


def schema_ops():
    """Every operator ONNX defines: {squashed name: (domain, op type)},
    the default domain winning a tie."""
    ops = {}
    for s in sorted(onnx.defs.get_all_schemas_with_history(),
                    key=lambda s: s.domain != "", reverse=True):
        ops[squash(s.name)] = (domain_name(s.domain), s.name)
    return ops


def attribute_operators(cases):
    """{test name: (domain, op type)}. A function-expanded test
    (`X_expanded`, `X_expanded_verN`) tests the operator of X, whatever its
    nodes (test_clip_default_inbounds_expanded is one Identity). Any other
    one-node test tests its node's operator; any other test of several
    nodes, the operator its name starts with (`test_<snake case>`, the
    longest such prefix), looked for among its own nodes, then among every
    operator ONNX defines; failing all that, its first node's."""
    expanded = re.compile(r"_expanded(_ver\d+)?$")
    ops, rest = {}, []
    for case in cases:
        nodes = case.model.graph.node
        if len(nodes) == 1 and not expanded.search(case.name):
            ops[case.name] = (domain_name(nodes[0].domain), nodes[0].op_type)
        else:
            rest.append(case)
    every = schema_ops()
    for case in rest:
        base = expanded.sub("", case.name)
        if base != case.name and base in ops:
            ops[case.name] = ops[base]
            continue
        nodes = case.model.graph.node
        own = {squash(n.op_type): (domain_name(n.domain), n.op_type)
               for n in nodes}
        words = case.name[len("test_"):].split("_")
        found = None
        for candidates in (own, every):
            for k in range(len(words), 0, -1):
                found = candidates.get("".join(words[:k]).lower())
                if found:
                    break
            if found:
                break
        if not found and nodes:
            found = (domain_name(nodes[0].domain), nodes[0].op_type)
        ops[case.name] = found or ("ai.onnx", "(no node)")
    return ops


# ---- running one test -------------------------------------------------------

def type_problem(role, value_info):
    """Why Runnel cannot feed or fetch this graph input or output, or None."""
    kind = value_info.type.WhichOneof("value")
    if kind != "tensor_type":
        return f"{role} {value_info.name!r} is {TYPE_KINDS.get(kind, kind)}"
    elem = value_info.type.tensor_type.elem_type
    if elem in NO_NPY:
        return f"{role} {value_info.name!r} is {NO_NPY[elem]}"
    if elem not in RUNNEL_DTYPES:
        return (f"{role} {value_info.name!r} has dtype "
                f"{TensorProto.DataType.Name(elem)}, which Runnel lacks")
    return None


def last_line(proc):
    """What a failed command said, in one line: the last diagnostic line
    (`...error: ...`; Runnel follows its diagnostics with the source line
    and notes), else the last non-empty line, stderr first."""
    for text in (proc.stderr, proc.stdout):
        lines = [l.strip() for l in (text or "").splitlines() if l.strip()]
        errors = [l for l in lines if re.search(r"\berror:", l)]
        if errors or lines:
            return (errors or lines)[-1]
    return "(no output)"


def exit_text(code):
    if code < 0:
        try:
            return f"killed by {signal.Signals(-code).name}"
        except ValueError:
            return f"killed by signal {-code}"
    return f"exit status {code}"


def execute(args, cwd, log):
    """Runs a command in cwd with TIMEOUT; (CompletedProcess or None on a
    timeout, one-line description of a failure or None). Writes its
    output to cwd/log."""
    try:
        proc = subprocess.run(args, cwd=cwd, capture_output=True, text=True,
                              errors="replace", timeout=TIMEOUT, check=False)
    except subprocess.TimeoutExpired:
        return None, f"timed out after {TIMEOUT} s"
    with open(os.path.join(cwd, log), "w", encoding="utf-8") as f:
        f.write(f"$ {' '.join(args)}\n{proc.stdout}{proc.stderr}"
                f"[{exit_text(proc.returncode)}]\n")
    if proc.returncode != 0:
        return proc, f"{exit_text(proc.returncode)}: {last_line(proc)}"
    return proc, None


def read_header(path):
    """The script's {onnx name: runnel name} for inputs and for outputs."""
    names = {"input": {}, "output": {}}
    with open(path, encoding="utf-8", errors="replace") as f:
        for line in f:
            m = HEADER.match(line.strip())
            if m:
                names[m.group(1)][m.group(2)] = m.group(3)
    return names["input"], names["output"]


def fmt(x):
    return repr(x.item() if isinstance(x, np.generic) else x)


def compare(got, want, rtol, atol):
    """None when got matches the reference want as ONNX's backend runner
    checks it (shape, then dtype, then values; NaN equals NaN), and
    integers and booleans exactly; otherwise why not, in one line."""
    if got.shape != want.shape:
        return f"shape {got.shape}, expected {want.shape}"
    if got.dtype != want.dtype:
        return f"dtype {got.dtype}, expected {want.dtype}"
    floating = want.dtype.kind == "f"
    if floating:
        try:
            np.testing.assert_allclose(got, want, rtol=rtol, atol=atol)
            return None
        except AssertionError:
            pass
    elif np.array_equal(got, want):
        return None
    # Where and by how much (in f64): the worst element and the count.
    g, w = got.astype(np.float64), want.astype(np.float64)
    if floating:
        bad = ~np.isclose(g, w, rtol=rtol, atol=atol, equal_nan=True)
    else:
        bad = g != w
    err = np.abs(g - w)
    err = np.where(np.isnan(err), np.inf, err)
    err = np.where(bad, err, -1.0)
    at = np.unravel_index(int(np.argmax(err)), got.shape)
    where = f" at {list(int(i) for i in at)}" if got.ndim else ""
    tolerance = f" (rtol {rtol:g}, atol {atol:g})" if floating else ""
    return (f"{int(bad.sum())} of {got.size} values differ{tolerance}; "
            f"worst{where}: {fmt(got[at])}, expected {fmt(want[at])}")


def import_model(runnel, work, inputs, ins, set_dir):
    """`runnel import model.onnx -o model.rnl` in work. An input the
    importer asks for as a constant (a shape, axes, pads: initializers or
    Constant nodes in real models, fed inputs in the node tests; it says
    `--const NAME=FILE.npy`) is given to it so, with this data set's value,
    and the import tried again. (outcome, reason, {const input names}),
    outcome None when it succeeded; exit status 1 with "is not supported" is
    unsupported, any other failure an error."""
    index = {vi.name: k for k, vi in enumerate(inputs)}
    consts = {}  # input name -> its .npy, relative to work
    log = "import.log" if set_dir == "set_0" else f"{set_dir}/import.log"
    while True:
        args = [runnel, "import", "model.onnx", "-o", "model.rnl"]
        for name, path in consts.items():
            args += ["--const", f"{name}={path}"]
        proc, failure = execute(args, work, log)
        if not failure:
            return None, "", set(consts)
        if proc is None or proc.returncode != 1:
            return "error", f"import: {failure}", set(consts)
        said = proc.stderr + proc.stdout
        asked = CONST_HINT.search(said)
        name = asked and asked.group(1)
        if (name in index and name not in consts and ins[index[name]] is not None
                and not type_problem("input", inputs[index[name]])):
            path = f"{set_dir}/const_{index[name]}.npy"
            np.save(os.path.join(work, path), ins[index[name]],
                    allow_pickle=False)
            consts[name] = path
            continue
        lines = [l.strip() for l in said.splitlines() if "is not supported" in l]
        if lines:
            return "unsupported", lines[0], set(consts)
        return "error", f"import: {failure}", set(consts)


def run_case(case, runnel, work):
    """Imports, runs and checks one test in the empty folder work;
    (outcome, reason). The model is imported once, or once per data set
    when inputs went to the importer as constants."""
    graph = case.model.graph
    with open(os.path.join(work, "model.onnx"), "wb") as f:
        f.write(case.model.SerializeToString())
    inputs, outputs = fed_inputs(graph), list(graph.output)
    script = os.path.join(work, "model.rnl")
    consts = set()
    for n, (ins, outs) in enumerate(case.data_sets):
        if len(ins) != len(inputs) or len(outs) != len(outputs):
            return "error", (f"data set {n} has {len(ins)} inputs and "
                             f"{len(outs)} outputs; the graph {len(inputs)} "
                             f"and {len(outputs)}")
        set_dir = f"set_{n}"
        os.makedirs(os.path.join(work, set_dir, "in"))

        if n == 0 or consts:
            outcome, reason, consts = import_model(runnel, work, inputs, ins,
                                                   set_dir)
            if outcome:
                return outcome, reason
            if not os.path.isfile(script):
                return "error", "import: exit status 0 but no model.rnl"
            in_names, out_names = read_header(script)
            fed = [(k, vi) for k, vi in enumerate(inputs) if vi.name not in consts]
            for role, vis, names in (("input", [vi for _, vi in fed], in_names),
                                     ("output", outputs, out_names)):
                missing = [vi.name for vi in vis if vi.name not in names]
                if missing:
                    return "error", (f"import: no `# onnx-{role}: {missing[0]} "
                                     f"-> ...` line in the header")
            # Values that .npy feeds and fetches cannot carry.
            for role, vis in (("input", [vi for _, vi in fed]),
                              ("output", outputs)):
                for vi in vis:
                    problem = type_problem(role, vi)
                    if problem:
                        return "unsupported", problem
            fetches = list(dict.fromkeys(out_names[o.name] for o in outputs))

        # Run and compare.
        args = [runnel, "run", "model.rnl"]
        for k, vi in fed:
            path = f"{set_dir}/in/input_{k}.npy"
            np.save(os.path.join(work, path), ins[k], allow_pickle=False)
            args += ["--feed", f"{in_names[vi.name]}={path}"]
        for name in fetches:
            args += ["--fetch", name]
        args += ["--out", f"{set_dir}/out"]
        _, failure = execute(args, work, f"{set_dir}/run.log")
        if failure:
            return "error", f"run: {failure}"
        for k, (vi, want) in enumerate(zip(outputs, outs)):
            np.save(os.path.join(work, set_dir, f"want_{k}.npy"), want,
                    allow_pickle=False)
            got_path = os.path.join(work, set_dir, "out",
                                    out_names[vi.name] + ".npy")
            if not os.path.isfile(got_path):
                return "error", f"run: wrote no out/{out_names[vi.name]}.npy"
            got = np.load(got_path, allow_pickle=False)
            problem = compare(got, want, case.rtol, case.atol)
            if problem:
                where = f"data set {n}, " if len(case.data_sets) > 1 else ""
                return "fail", f"{where}output {vi.name!r}: {problem}"
    return "pass", (f"with --const {', '.join(sorted(consts))}" if consts
                    else "")


def run_test(case, op, runnel, keep):
    """run_case in a folder of its own (kept under keep when given); a
    Result. An exception in the harness's own work is an error too."""
    if keep:
        work = os.path.join(keep, case.name)
        shutil.rmtree(work, ignore_errors=True)
        os.makedirs(work)
        context = contextlib.nullcontext(work)
    else:
        context = tempfile.TemporaryDirectory(prefix="onnx_")
    with context as work:
        try:
            outcome, reason = run_case(case, runnel, work)
        except Exception as e:  # pylint: disable=broad-except
            outcome, reason = "error", f"harness: {type(e).__name__}: {e}"
    reason = " ".join(reason.split())  # one line
    return Result(case.name, op[0], op[1], outcome, reason)


# ---- the report -------------------------------------------------------------

def tally(results):
    """{(op, domain): Counter of outcomes}, and the Counter of them all."""
    per_op = collections.defaultdict(collections.Counter)
    total = collections.Counter()
    for r in results:
        per_op[(r.op, r.domain)][r.outcome] += 1
        total[r.outcome] += 1
    return per_op, total


def op_order(item):
    (op, domain), _ = item
    return (op.lower(), domain)


def unsupported_ops(results, per_op):
    """[(op, domain, reason)] of the operators all of whose tests are
    unsupported, with the reason the first of them gave."""
    first = {}
    for r in sorted(results, key=lambda r: r.name):
        first.setdefault((r.op, r.domain), r.reason)
    return [(op, domain, first[(op, domain)])
            for (op, domain), c in sorted(per_op.items(), key=op_order)
            if c["unsupported"] == sum(c.values())]


def totals_line(total):
    n = sum(total.values())
    return (f"{n} tests: {total['pass']} pass, {total['fail']} fail, "
            f"{total['unsupported']} unsupported, {total['error']} error")


def domain_lines(results):
    """One line per domain other than ai.onnx (ai.onnx.ml, the preview
    domains), counted apart from the default domain's."""
    by_domain = collections.defaultdict(collections.Counter)
    for r in results:
        by_domain[r.domain][r.outcome] += 1
    return [f"{d}: {totals_line(c)}" for d, c in sorted(by_domain.items())]


def print_report(results):
    per_op, total = tally(results)
    width = max([len("operator")] + [len(op) for op, _ in per_op])
    dwidth = max([len("domain")] + [len(d) for _, d in per_op])
    head = (f"{'operator':<{width}}  {'domain':<{dwidth}}  {'tests':>5}  "
            + "  ".join(f"{o:>11}" for o in OUTCOMES))
    print(head)
    print("-" * len(head))
    for (op, domain), c in sorted(per_op.items(), key=op_order):
        print(f"{op:<{width}}  {domain:<{dwidth}}  {sum(c.values()):>5}  "
              + "  ".join(f"{c[o]:>11}" for o in OUTCOMES))
    print("-" * len(head))
    print(f"total: {totals_line(total)}; {len(per_op)} operators, "
          f"{sum(1 for c in per_op.values() if c['pass'])} with a passing test")
    for line in domain_lines(results):
        print(f"  {line}")
    bad = [r for r in results if r.outcome in ("fail", "error")]
    if bad:
        print(f"\nfailures and errors ({len(bad)}):")
        for r in bad:
            print(f"  {r.name} ({r.op}): {r.outcome}: {r.reason}")


def write_markdown(path, results, source, selection):
    per_op, total = tally(results)
    # The page's hand-written part, up to the marker, is kept.
    preamble = ["# ONNX conformance", ""]
    if os.path.isfile(path):
        with open(path, encoding="utf-8") as f:
            text = f.read()
        if MARKER in text:
            preamble = [text.split(MARKER, 1)[0] + MARKER, "",
                        "## Conformance", ""]
    md = preamble
    md.append(
        f"`runnel import` against the node tests of ONNX {onnx.__version__} "
        f"({source}), written by "
        f"`scripts/onnx_conformance.py --runnel build/runnel --markdown "
        f"docs/onnx.md{selection}` (what `make conformance` runs) in the "
        f"environment build/venv/onnx (requirements/onnx.txt). Each test's "
        f"model is imported with `runnel import MODEL.onnx -o OUT.rnl` and "
        f"run with `runnel run` on each of its data sets (an input the "
        f"importer needs as a constant, such as a shape or axes, which the "
        f"node tests feed where real models have an initializer, is given to "
        f"it with `--const` instead), and every output is "
        f"compared with ONNX's reference as ONNX's backend runner compares "
        f"them: the same dtype and shape, and values within rtol {RTOL:g}, "
        f"atol {ATOL:g} "
        f"(`np.testing.assert_allclose`, NaN equal to NaN; integers and "
        f"booleans exactly). *Unsupported*: the importer said the operator, "
        f"an attribute or a dtype is not supported, or an input or output is "
        f"of a kind Runnel's feeds and fetches cannot carry (a sequence, map "
        f"or optional; strings, i16, u16, u32, u64, complex, the 8-, 6-, 4- "
        f"and 2-bit types; bf16, which Runnel's .npy files lack). "
        f"*Error*: any other failure of import or run (exit status, crash, "
        f"timeout of {TIMEOUT} s). Function-expanded tests (`X_expanded`) "
        f"count under X's operator.")
    md += ["", "### Totals", ""]
    md.append(f"- {totals_line(total)}.")
    consts = sum(1 for r in results if r.outcome == "pass" and r.reason)
    md.append(f"- {consts} of the passing tests gave the importer an input "
              f"as a constant (`--const`).")
    md.append(f"- {len(per_op)} operators, "
              f"{sum(1 for c in per_op.values() if c['pass'])} with at least "
              f"one passing test.")
    for line in domain_lines(results):
        md.append(f"- {line}.")
    md += ["", "### Per operator", "",
           "| Operator | Domain | Tests | Pass | Fail | Unsupported | Error |",
           "|---|---|--:|--:|--:|--:|--:|"]
    for (op, domain), c in sorted(per_op.items(), key=op_order):
        md.append(f"| {op} | {domain} | {sum(c.values())} | "
                  + " | ".join(str(c[o]) for o in OUTCOMES) + " |")
    unsupported = unsupported_ops(results, per_op)
    md += ["", "### Unsupported operators", ""]
    md.append(f"{len(unsupported)} operators all of whose tests are "
              f"unsupported, each with the reason its first test gave:")
    md.append("")
    for op, domain, reason in unsupported:
        md.append(f"- {op} ({domain}): {escape(reason)}")
    bad = [r for r in results if r.outcome in ("fail", "error")]
    md += ["", "### Failures and errors", ""]
    if not bad:
        md.append("None.")
    for r in bad:
        md.append(f"- `{r.name}` ({r.op}), {r.outcome}: {escape(r.reason)}")
    with open(path, "w", encoding="utf-8") as f:
        f.write("\n".join(md) + "\n")


# docs/onnx.md's generated part follows this line.
MARKER = "<!-- make conformance writes everything below this line -->"


def escape(text):
    """A reason as Markdown text: what it quotes stays literal."""
    return re.sub(r"([\\`*_\[\]<>|])", r"\\\1", text)


# ---- main -------------------------------------------------------------------

def read_list(path):
    """The test names in a --list file: one a line, `#` comments."""
    names = []
    with open(path, encoding="utf-8") as f:
        for line in f:
            line = line.split("#", 1)[0].strip()
            if line:
                names.append(line)
    return names


def run_suite(suite, args, runnel, loaded):
    """The results of one suite's selected tests, sorted by name, and where
    its tests came from (`loaded`: its cases, as load_cases gives them)."""
    cases, source = loaded
    ops = attribute_operators(cases)  # from every test, for the expanded ones
    if args.list:
        wanted = set(read_list(args.list))
        cases = [c for c in cases if c.name in wanted]
    if args.filter:
        pattern = re.compile(args.filter)
        cases = [c for c in cases if pattern.search(c.name)]
    if not cases:
        return [], source
    print(f"onnx {onnx.__version__}: {len(cases)} {suite} tests ({source}), "
          f"{args.jobs} at once", file=sys.stderr)
    results = []
    progress = sys.stderr.isatty()
    with concurrent.futures.ThreadPoolExecutor(max_workers=args.jobs) as pool:
        futures = [pool.submit(run_test, c, ops[c.name], runnel, args.keep)
                   for c in cases]
        for done, future in enumerate(concurrent.futures.as_completed(futures), 1):
            results.append(future.result())
            if progress:
                print(f"\r{done}/{len(cases)}", end="", file=sys.stderr,
                      flush=True)
    if progress:
        print(file=sys.stderr)
    results.sort(key=lambda r: r.name)
    return results, source


def append_models_markdown(path, suite, results, source):
    """A section for a suite of whole models: its totals, and each test
    that does not pass with its reason."""
    _, total = tally(results)
    md = ["", f"### The models of {suite}", "",
          f"The {len(results)} models under `onnx/backend/test/data/{suite}` "
          f"({source}), each run and compared as the node tests are: "
          f"{totals_line(total)}.", ""]
    for r in results:
        if r.outcome != "pass":
            md.append(f"- `{r.name}`, {r.outcome}: {escape(r.reason)}")
    with open(path, "a", encoding="utf-8") as f:
        f.write("\n".join(md) + "\n")


def main():
    parser = argparse.ArgumentParser(
        description="runnel import against ONNX's node tests")
    parser.add_argument("--runnel", required=True, help="the runnel binary")
    parser.add_argument("--filter", help="only tests whose name matches REGEX")
    parser.add_argument("--list", help="only the tests named in FILE")
    parser.add_argument("--markdown", help="write the report to OUT.md too")
    parser.add_argument("--jobs", type=int, default=os.cpu_count() or 1)
    parser.add_argument("--keep", help="keep each test's files in DIR/TEST")
    parser.add_argument("--expect-pass", action="store_true",
                        help="exit 1 unless every selected test passes")
    parser.add_argument("--suite", default="node",
                        choices=["node", "pytorch-converted", "pytorch-operator", "all"],
                        help="which of ONNX's backend test suites (all: the "
                             "node tests, then the two suites of models)")
    parser.add_argument("--passing",
                        help="write the names of the passing tests to FILE, "
                             "a line each, with their operator")
    args = parser.parse_args()
    runnel = os.path.abspath(args.runnel)
    if not os.access(runnel, os.X_OK):
        parser.error(f"{args.runnel} is not an executable")

    if args.keep:
        os.makedirs(args.keep, exist_ok=True)
    suites = (["node", "pytorch-converted", "pytorch-operator"]
              if args.suite == "all" else [args.suite])
    loaded = {suite: load_cases(suite) for suite in suites}
    if args.list:  # each listed test is in one of the suites
        names = {c.name for cases, _ in loaded.values() for c in cases}
        unknown = [n for n in read_list(args.list) if n not in names]
        if unknown:
            kind = "" if args.suite == "all" else f"{args.suite} "
            parser.error(f"{args.list}: no {kind}test named "
                         f"{', '.join(unknown)} in onnx {onnx.__version__}")
    runs = {suite: run_suite(suite, args, runnel, loaded[suite])
            for suite in suites}
    if not any(results for results, _ in runs.values()):
        parser.error("no test selected")
    results, source = runs[suites[0]]

    print_report(results)
    for suite in suites[1:]:
        print(f"\n{suite}:")
        print_report(runs[suite][0])
    if args.markdown:
        selection = "".join(
            f" --{flag} {value}" for flag, value in
            (("suite", args.suite != "node" and args.suite),
             ("list", args.list and os.path.relpath(args.list)),
             ("filter", args.filter and f"'{args.filter}'")) if value)
        write_markdown(args.markdown, results, source, selection)
        for suite in suites[1:]:
            append_models_markdown(args.markdown, suite, *runs[suite])
        print(f"wrote {args.markdown}", file=sys.stderr)
    results = [r for rs, _ in runs.values() for r in rs]
    if args.passing:
        with open(args.passing, "w", encoding="utf-8") as f:
            for r in results:
                if r.outcome == "pass":
                    f.write(f"{r.name} {r.op}\n")
    if args.expect_pass and any(r.outcome != "pass" for r in results):
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main())

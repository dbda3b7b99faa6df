"""What every benchmark in bench/ shares: running Runnel and its peers,
TensorFlow 2.21 and PyTorch 2.15 (requirements/bench.txt, in the
environment build/venv/bench), on the same workload, with the same thread
count, in the same invocation, honestly.

  - Each peer gets its best configuration. Every candidate setting (for
    PyTorch OpenMP's wait policy, torch.compile, channels_last; for
    TensorFlow its inter-op pool and XLA; where this machine sets
    OPENBLAS_CORETYPE/OPENBLAS_L2_SIZE, each once more with them unset) is
    tried, the fastest is kept per workload and peer, and printed.
  - Runnel and the peers alternate, round by round, the order rotating,
    because this machine's speed drifts.
  - Each side's median is reported, with the median of the per-round
    ratios Runnel / best peer of that round (below 1 Runnel is faster).
  - Where the work is arithmetic, the floor is printed beside them: the
    FLOPs of the workload divided by the f32 GEMM peak measured in the same
    run (the best of PyTorch's and Runnel's on a 1024^3 product, measured
    every round).
  - Every result is recorded (record()) for docs/performance.md.

A side is a command that prints lines `RESULT <workload> <seconds>` (one
unit of work: a step, an op, a product), or a Python function of the
configuration (None for Runnel) returning {workload: seconds}. Import this
module from bench/ scripts; run it as `python bench/peer.py --peak
--threads N` for PyTorch's GEMM peak alone.
"""
import json
import os
import signal
import statistics
import subprocess
import sys
import tempfile
import time

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(HERE)


def _bench_python():
    """The benchmark environment's python (TensorFlow 2.21, PyTorch 2.15;
    requirements/bench.txt), made by scripts/venv.sh on first use.
    RUNNEL_BENCH_PYTHON overrides it (a worktree using another's)."""
    if os.environ.get("RUNNEL_BENCH_PYTHON"):
        return os.environ["RUNNEL_BENCH_PYTHON"]
    return subprocess.run(["bash", os.path.join(ROOT, "scripts", "venv.sh"),
                           "bench"], check=True, stdout=subprocess.PIPE,
                          text=True).stdout.strip()


# The peers' sides import this module too, already inside the environment.
PYTHON = sys.executable if sys.prefix != sys.base_prefix else _bench_python()
# Environment variables a configuration sets; inherited values are dropped.
_KNOBS = ("OMP_NUM_THREADS", "OPENBLAS_NUM_THREADS", "OMP_WAIT_POLICY",
          "GOMP_SPINCOUNT", "MKL_NUM_THREADS", "KMP_BLOCKTIME",
          "TF_NUM_INTRAOP_THREADS", "TF_NUM_INTEROP_THREADS")
# Set on some machines for old OpenBLAS builds; a configuration may unset
# them (a value of None) when that makes the peer faster.
_OPENBLAS_FIXES = ("OPENBLAS_CORETYPE", "OPENBLAS_L2_SIZE")
PEAK_SHAPE = 1024  # the GEMM peak is measured on a PEAK_SHAPE^3 product


class Config:
    """One way to run a peer: environment settings (None: unset the
    variable) and script arguments, with a label for the report."""

    def __init__(self, env, args=(), label=""):
        self.env = dict(env)
        self.args = list(args)
        self.label = label

    def environ(self):
        e = {k: v for k, v in os.environ.items() if k not in _KNOBS}
        for k, v in self.env.items():
            if v is None:
                e.pop(k, None)
            else:
                e[k] = v
        return e

    def describe(self, threads=None):
        """The settings; with `threads`, the in-process thread count too."""
        parts = [f"{k}={v}" if v is not None else f"{k} unset"
                 for k, v in sorted(self.env.items())]
        if threads is not None:
            parts.append(f"{threads} threads")
        if self.label:
            parts.append(self.label)
        return ", ".join(parts) or "default"


def _with_openblas_variants(configs):
    """Each configuration as given and, where this machine sets the old-
    OpenBLAS variables, once more with both unset."""
    if not any(k in os.environ for k in _OPENBLAS_FIXES):
        return configs
    unset = {k: None for k in _OPENBLAS_FIXES}
    return configs + [Config(dict(c.env, **unset), c.args, c.label)
                      for c in configs]


def torch_configs(threads, variants=(("", ()),)):
    """PyTorch's candidates at `threads` threads: OpenMP's wait policy
    (passive, active) times the script's own variants, (label, extra
    arguments) pairs (torch.compile, channels_last, ...). The peer scripts
    call torch.set_num_threads(threads) themselves."""
    n = str(threads)
    base = {"OMP_NUM_THREADS": n, "OPENBLAS_NUM_THREADS": n,
            "MKL_NUM_THREADS": n}
    envs = [dict(base, OMP_WAIT_POLICY="PASSIVE"),
            dict(base, OMP_WAIT_POLICY="ACTIVE")]
    return _with_openblas_variants(
        [Config(e, args, label) for e in envs for label, args in variants])


def tf_configs(threads, variants=(("", ()),)):
    """TensorFlow's candidates: its intra-op pool at `threads` threads with
    an inter-op pool of 1 or `threads` (the scripts read --intra and
    --inter and call tf.config.threading), times the script's own variants
    (XLA through jit_compile, ...)."""
    inters = sorted({1, threads})
    out = []
    for inter in inters:
        for label, args in variants:
            out.append(Config(
                {"OMP_NUM_THREADS": str(threads)},
                ["--intra", str(threads), "--inter", str(inter)] + list(args),
                ", ".join(x for x in (f"inter-op {inter}", label) if x)))
    return _with_openblas_variants(out)


class Peer:
    """A peer system: its name, its side (a command to which a
    configuration's arguments are appended, or a function of the
    configuration returning {workload: seconds}) and its candidate
    configurations (torch_configs, tf_configs)."""

    def __init__(self, name, side, configs):
        self.name = name
        self.side = side
        self.configs = list(configs)


def torch_peer(script_args, threads, variants=(("", ()),)):
    """PyTorch 2.15 running `PYTHON script_args...` (a script printing
    RESULT lines), at its candidate configurations."""
    return Peer("PyTorch", [PYTHON] + list(script_args),
                torch_configs(threads, variants))


def tf_peer(script_args, threads, variants=(("", ()),)):
    """TensorFlow 2.21 running `PYTHON script_args...`."""
    return Peer("TensorFlow", [PYTHON] + list(script_args),
                tf_configs(threads, variants))


def parse_results(text):
    out = {}
    for line in text.splitlines():
        f = line.split()
        if len(f) == 3 and f[0] == "RESULT":
            out[f[1]] = float(f[2])
    return out


# How long one run of a peer's command may take (seconds), from
# RUNNEL_PEER_TIMEOUT: TensorFlow's cluster peer, after one of its servers
# refused a connection, has hung instead of failing, and held the whole
# benchmark with it.
PEER_TIMEOUT = float(os.environ.get("RUNNEL_PEER_TIMEOUT", "600"))


def run_bounded(cmd, env):
    """(exit code, stdout) of cmd, run in a session of its own; past
    PEER_TIMEOUT its whole process group is killed and the code is None."""
    proc = subprocess.Popen(cmd, env=env, stdout=subprocess.PIPE, text=True,
                            start_new_session=True)
    try:
        out, _ = proc.communicate(timeout=PEER_TIMEOUT)
        return proc.returncode, out
    except subprocess.TimeoutExpired:
        try:
            os.killpg(proc.pid, signal.SIGKILL)
        except ProcessLookupError:
            pass
        proc.communicate()
        return None, ""


def describe_exit(code):
    if code is None:
        return f"ran past {PEER_TIMEOUT:g} s and was killed"
    return f"exited {code}"


def run_side(side, config=None, attempts=3):
    """{workload: seconds} from a command (list) or a function. A command
    that fails is run again, up to `attempts` times in all, saying so: the
    peers' cluster harnesses crash now and then on their own (PyTorch's
    gloo at a process's exit: "terminate called without an active
    exception"; TensorFlow's servers refusing a connection), and one crash
    must not end the whole comparison."""
    if callable(side):
        return side(config)
    cmd = list(side) + (config.args if config else [])
    env = config.environ() if config else None
    for attempt in range(attempts):
        code, out = run_bounded(cmd, env)
        if code == 0:
            break
        if attempt + 1 < attempts:
            print(f"  (a run {describe_exit(code)}; running it again: "
                  f"{' '.join(cmd)})", file=sys.stderr)
    if code != 0:
        raise RuntimeError(f"{' '.join(cmd)} {describe_exit(code)} "
                           f"({attempts} attempts)")
    results = parse_results(out)
    if not results:
        raise RuntimeError(f"{' '.join(cmd)} printed no RESULT lines")
    return results


def tune(peer, trial_args=(), trials=2):
    """Tries each of `peer`'s configurations `trials` times (alternating),
    prints each one's best time per workload, and returns {workload: its
    fastest configuration}. A configuration that fails is reported and
    left out (XLA, torch.compile may refuse a workload)."""
    configs = peer.configs
    if len(configs) == 1:
        return None
    times = [dict() for _ in configs]
    failed = set()
    for _ in range(trials):
        for i, c in enumerate(configs):
            if i in failed:
                continue
            side = peer.side if callable(peer.side) else \
                list(peer.side) + list(trial_args)
            try:
                r = run_side(side, c)
            except RuntimeError as e:
                print(f"    {peer.name} {c.describe()}: failed ({e})")
                failed.add(i)
                continue
            for w, s in r.items():
                times[i][w] = min(s, times[i].get(w, s))
    ok = [i for i in range(len(configs)) if i not in failed]
    if not ok:
        raise RuntimeError(f"every {peer.name} configuration failed")
    workloads = list(times[ok[0]])
    print(f"  {peer.name} configurations tried (best of {trials} short "
          "trials):")
    best = {}
    for i in ok:
        print("    %-60s %s" % (configs[i].describe(), "  ".join(
            f"{w} {fmt_time(times[i][w])}" for w in workloads
            if w in times[i])))
        for w in workloads:
            if w in times[i] and (w not in best or times[i][w] < best[w][0]):
                best[w] = (times[i][w], i)
    return {w: configs[i] for w, (_, i) in best.items()}


def fmt_time(s):
    if s >= 1:
        return f"{s:.2f} s"
    if s >= 1e-3:
        return f"{s * 1e3:.2f} ms"
    return f"{s * 1e6:.3f} us"


class GemmPeak:
    """The f32 GEMM peak: the best GFLOP/s of PyTorch's (OpenBLAS, OpenMP
    passive) and Runnel's (matmul_bench in `build_dir`, when built) on a
    PEAK_SHAPE^3 product, measured once per round, so a burst of load from
    other processes during one measurement does not lower the floor."""

    def __init__(self, threads, build_dir=None):
        self.threads = threads
        binary = os.path.join(build_dir, "matmul_bench") if build_dir else ""
        self.binary = binary if os.access(binary, os.X_OK) else None
        self.peer = self.ours = 0.0

    def measure(self):
        flops = 2.0 * PEAK_SHAPE ** 3
        r = run_side([PYTHON, os.path.join(HERE, "peer.py"), "--peak",
                      "--threads", str(self.threads)],
                     torch_configs(self.threads)[0])
        self.peer = max(self.peer, flops / r["gemm"] / 1e9)
        if self.binary:
            r = run_side([self.binary, "--runnel-only", "--peak", "--threads",
                          str(self.threads)])
            self.ours = max(self.ours, flops / r["gemm"] / 1e9)

    def gflops(self):
        return max(self.peer, self.ours)

    def describe(self, rounds):
        parts = [f"PyTorch {self.peer:.0f}"] + (
            [f"Runnel {self.ours:.0f}"] if self.binary else [])
        return (f"{PEAK_SHAPE}^3 f32 GEMM peak {self.gflops():.0f} GFLOP/s, "
                f"best of {rounds} rounds (" + ", ".join(parts) + ")")


def compare(title, threads, runnel, peers, rounds, workloads,
            trial_args=(), flops=None, build_dir=None, unit="step"):
    """Tunes each peer, alternates `rounds` rounds and prints the report.

    peers: [Peer] (torch_peer, tf_peer); workloads: {name: description};
    flops: {name: FLOPs per unit} or None; runnel: a side; threads: None
    where the work is single-threaded. Each round runs Runnel and every
    peer (each at its fastest configuration per workload), the order
    rotating from round to round. The ratio is Runnel's time over the best
    peer's in the same round; its median over the rounds is reported, with
    each side's median. Every result is also recorded for
    docs/performance.md (record()). Returns ({workload: [Runnel's
    seconds]}, {peer name: {workload: [seconds]}}).
    """
    print(f"{title} ({threads} threads, {rounds} alternating rounds)"
          if threads else f"{title} ({rounds} alternating rounds)")
    chosen = {}
    for p in peers:
        c = tune(p, trial_args)
        chosen[p.name] = c or {w: p.configs[0] for w in workloads}
    peak = GemmPeak(threads, build_dir) if flops else None
    ours = {w: [] for w in workloads}
    theirs = {p.name: {w: [] for w in workloads} for p in peers}

    def run_ours():
        r = run_side(runnel)
        for w in workloads:
            ours[w].append(r[w])

    def runner(p):
        def run():
            groups = []  # the distinct configurations chosen, in order
            for w in workloads:
                if all(chosen[p.name][w] is not g for g in groups):
                    groups.append(chosen[p.name][w])
            for g in groups:
                r = run_side(p.side, g)
                for w in workloads:
                    if chosen[p.name][w] is g:
                        theirs[p.name][w].append(r[w])
        return run
    sides = [run_ours] + [runner(p) for p in peers]
    for k in range(rounds):
        for i in range(len(sides)):
            sides[(i + k) % len(sides)]()
        if peak:
            peak.measure()
        print("  round %d: " % (k + 1) + "; ".join(
            f"{w} Runnel {fmt_time(ours[w][-1])}, " + ", ".join(
                f"{p.name} {fmt_time(theirs[p.name][w][-1])}" for p in peers)
            for w in workloads))
        sys.stdout.flush()
    if peak:
        print("  " + peak.describe(rounds))
    for w, desc in workloads.items():
        r = statistics.median(ours[w])
        meds = {p.name: statistics.median(theirs[p.name][w]) for p in peers}
        ratios = [a / min(theirs[p.name][w][k] for p in peers)
                  for k, a in enumerate(ours[w])]
        best = min(meds, key=meds.get)
        ratio = statistics.median(ratios)
        line = (f"{desc}: Runnel {fmt_time(r)}, " + ", ".join(
            f"{n} {fmt_time(t)}" for n, t in meds.items()) +
            f" (medians); ratio {ratio:.3g} against the best peer "
            f"(median of per-round ratios, {min(ratios):.3g}-"
            f"{max(ratios):.3g})")
        floor = None
        if peak and flops.get(w):
            floor = flops[w] / (peak.gflops() * 1e9)
            line += (f"; floor {fmt_time(floor)} ({flops[w] / 1e9:.3g} GFLOP"
                     f" at {peak.gflops():.0f} GFLOP/s: Runnel at "
                     f"{floor / r:.0%} of it, {best} at "
                     f"{floor / meds[best]:.0%})")
        print(line)
        for p in peers:
            print(f"  {p.name} configuration: "
                  f"{chosen[p.name][w].describe(threads)}")
        record(title, desc, r, {p.name: (meds[p.name],
                                         chosen[p.name][w].describe(threads))
                                for p in peers}, ratio, floor, threads, unit)
    sys.stdout.flush()
    return ours, theirs


def record(title, workload, runnel, peers, ratio, floor=None, threads=None,
           unit="step", note=""):
    """Appends one result to $RUNNEL_BENCH_RESULTS (JSON lines; bench/
    run_all.sh sets it and bench/report.py turns it into
    docs/performance.md). peers: {name: (median seconds, configuration)};
    ratio: Runnel over the best peer (the median of per-round ratios)."""
    path = os.environ.get("RUNNEL_BENCH_RESULTS")
    if not path:
        return
    entry = {"bench": title, "workload": workload, "runnel": runnel,
             "peers": {n: {"time": t, "config": c}
                       for n, (t, c) in peers.items()},
             "ratio": ratio, "floor": floor, "threads": threads,
             "unit": unit, "note": note}
    with open(path, "a", encoding="utf-8") as fh:
        fh.write(json.dumps(entry) + "\n")


def drive_binary(title, argv, peer_script, workloads,
                 torch_variants=(("", ()),), tf_variants=(("", ()),),
                 **kwargs):
    """compare() for a C++ benchmark that handed itself over (bench/peer.h):
    argv is `--compare BINARY [--threads N] [--rounds N] ...`; the binary
    runs with --runnel-only; the peers are `peer_script --peer` (PyTorch)
    and `peer_script --peer-tf` (TensorFlow)."""
    binary = argv[argv.index("--compare") + 1]
    threads = threads_arg(argv)
    script = os.path.abspath(peer_script)
    peers = [torch_peer([script, "--peer", "--threads", str(threads)],
                        threads, torch_variants),
             tf_peer([script, "--peer-tf", "--threads", str(threads)],
                     threads, tf_variants)]
    return compare(
        title, threads, [binary, "--runnel-only", "--threads", str(threads)],
        peers, int_arg(argv, "--rounds", 6), workloads,
        build_dir=os.path.dirname(binary), **kwargs)


def run_with_metrics(cmd):
    """Runs `cmd` (a `runnel run` command line) with --metrics; returns its
    stdout and the `time` of each metrics line (one per `report` call,
    seconds since the run started)."""
    with tempfile.TemporaryDirectory() as tmp:
        metrics = os.path.join(tmp, "m.jsonl")
        r = subprocess.run(list(cmd) + ["--metrics", metrics],
                           stdout=subprocess.PIPE, text=True, check=True)
        with open(metrics, encoding="utf-8") as fh:
            times = [json.loads(line)["time"] for line in fh]
    return r.stdout, times


def run_example(build, example, threads, steps, timed_from, extra=()):
    """A `runnel run` of a language-model example: its validation bits per
    character (its `validation bpc` line) and seconds per step (from its
    metrics, from step `timed_from` on)."""
    out, times = run_with_metrics(
        [os.path.join(build, "runnel"), "run", example, "--threads",
         str(threads), "--arg", f"steps={steps}"] + list(extra))
    bpc = None
    for line in out.splitlines():
        if line.startswith("validation bpc "):
            bpc = float(line.split()[2])
    return bpc, step_time(times, timed_from)


def compare_twin_bpc(name, script, threads, steps, runnel_bpc, limit=0.03):
    """Trains a twin (`script --peer`, PyTorch at its first configuration)
    and Runnel (`runnel_bpc()`, its validation bpc) for `steps` steps each;
    prints both figures and returns 1 when they differ by more than
    `limit`, else 0."""
    print(f"{name}: {steps} training steps on each side, {threads} threads, "
          "validation on the whole held-out text")
    env = torch_configs(threads)[0]
    t = time.perf_counter()
    r = subprocess.run([PYTHON, script, "--peer", "--threads", str(threads),
                        "--steps", str(steps)], env=env.environ(),
                       stdout=subprocess.PIPE, text=True, check=True)
    twin = float(next(line.split()[1] for line in r.stdout.splitlines()
                      if line.startswith("BPC ")))
    twin_s = time.perf_counter() - t
    t = time.perf_counter()
    ours = runnel_bpc()
    ours_s = time.perf_counter() - t
    diff = abs(ours - twin)
    print(f"  validation bpc: Runnel {ours:.4f} ({ours_s:.0f} s), "
          f"PyTorch twin {twin:.4f} ({twin_s:.0f} s), difference "
          f"{diff:.4f} (limit {limit})")
    if diff > limit:
        print(f"  FAIL: the difference is above {limit}")
        return 1
    return 0


def step_time(stamps, timed_from):
    """Seconds per step from the end of step `timed_from` - 1 to the last
    of `stamps` (one time per step), so that warm-up does not count; None
    when there are too few steps."""
    steps = len(stamps)
    if steps <= timed_from + 1:
        return None
    return (stamps[-1] - stamps[timed_from - 1]) / (steps - timed_from)


def spawn_floor(runs=20):
    """Median seconds to start and reap an empty process (/bin/true)."""
    t = []
    for _ in range(runs):
        t0 = time.perf_counter()
        subprocess.run(["/bin/true"])
        t.append(time.perf_counter() - t0)
    return statistics.median(t)


def threads_arg(argv, fallback=2):
    for i, a in enumerate(argv[:-1]):
        if a == "--threads":
            return int(argv[i + 1])
    return fallback


def int_arg(argv, name, fallback):
    for i, a in enumerate(argv[:-1]):
        if a == name:
            return int(argv[i + 1])
    return fallback


def import_tf(argv, default_threads=None):
    """TensorFlow, quiet, with the thread pools tf_configs asks for
    (--intra, default --threads; --inter, default 1) set before any op."""
    os.environ.setdefault("TF_CPP_MIN_LOG_LEVEL", "2")
    import tensorflow as tf  # pylint: disable=import-outside-toplevel
    tf.config.threading.set_intra_op_parallelism_threads(
        int_arg(argv, "--intra", default_threads or threads_arg(argv)))
    tf.config.threading.set_inter_op_parallelism_threads(
        int_arg(argv, "--inter", 1))
    return tf


def tf_train_step(tf, model, opt, loss_fn, xla=False):
    """A Keras model's training step as one tf.function (XLA with `xla`):
    (x, y) -> loss, the gradients applied by `opt`."""
    @tf.function(jit_compile=xla)
    def step(x, y):
        with tf.GradientTape() as tape:
            loss = loss_fn(y, model(x, training=True))
        grads = tape.gradient(loss, model.trainable_variables)
        opt.apply_gradients(zip(grads, model.trainable_variables))
        return loss
    return step


def dispatch(main, torch_main, tf_main):
    """A harness's entry point: --peer-tf runs its TensorFlow side, --peer
    its PyTorch side, anything else the driver; exits with its status."""
    argv = sys.argv[1:]
    if "--peer-tf" in argv:
        sys.exit(tf_main(argv))
    if "--peer" in argv:
        sys.exit(torch_main(argv))
    sys.exit(main(argv))


def _peak_main():
    import torch  # pylint: disable=import-outside-toplevel
    torch.set_num_threads(threads_arg(sys.argv))
    n = PEAK_SHAPE
    a, b = torch.rand(n, n), torch.rand(n, n)
    for _ in range(3):
        torch.mm(a, b)
    t = []
    for _ in range(10):
        t0 = time.perf_counter()
        torch.mm(a, b)
        t.append(time.perf_counter() - t0)
    print(f"RESULT gemm {statistics.median(t):.9f}")


if __name__ == "__main__" and "--peak" in sys.argv:
    _peak_main()

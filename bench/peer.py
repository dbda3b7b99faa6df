"""What every benchmark in bench/ shares: running Runnel and its peer on the
same workload, with the same thread count, in the same invocation, honestly.

  - The peer gets its best configuration. PyTorch's OpenMP threads spin
    while waiting by default, and on a small machine they fight OpenBLAS's
    own threads (an MLP step swings from 2 to 33 ms). Each candidate setting
    is tried, the fastest is kept per workload, and the settings are printed.
  - Runnel and the peer alternate, round by round, each going first in turn,
    because this machine's speed drifts.
  - Each side's median is reported, with the median of the per-round ratios
    (Runnel / peer: below 1 Runnel is faster).
  - Where the work is arithmetic, the floor is printed beside them: the
    FLOPs of the workload divided by the f32 GEMM peak measured in the same
    run (the best of PyTorch's and Runnel's on a 1024^3 product, measured
    every round).

A side is a command that prints lines `RESULT <workload> <seconds>` (one
unit of work: a step, an op, a product), or a Python function of the
configuration (None for Runnel) returning {workload: seconds}. Import this module from bench/ scripts; run it as
`python3 bench/peer.py --peak --threads N` for the peer's GEMM peak alone.
"""
import json
import os
import statistics
import subprocess
import sys
import tempfile
import time

PYTHON = "/usr/bin/python3"  # Debian's, which has python3-torch
HERE = os.path.dirname(os.path.abspath(__file__))
# Environment variables a configuration sets; inherited values are dropped.
_KNOBS = ("OMP_NUM_THREADS", "OPENBLAS_NUM_THREADS", "OMP_WAIT_POLICY",
          "GOMP_SPINCOUNT", "MKL_NUM_THREADS")
PEAK_SHAPE = 1024  # the GEMM peak is measured on a PEAK_SHAPE^3 product


class Config:
    """One way to run the peer: environment settings and script arguments."""

    def __init__(self, env, args=(), label=""):
        self.env = dict(env)
        self.args = list(args)
        self.label = label

    def environ(self):
        e = {k: v for k, v in os.environ.items() if k not in _KNOBS}
        e.update(self.env)
        return e

    def describe(self, threads=None):
        """The settings; with `threads`, the in-process thread count too."""
        parts = [f"{k}={v}" for k, v in sorted(self.env.items())]
        if self.env and "OMP_WAIT_POLICY" not in self.env:
            parts.append("OMP_WAIT_POLICY unset")
        if threads is not None:
            parts.append(f"torch.set_num_threads({threads})")
        if self.label:
            parts.append(self.label)
        return ", ".join(parts)


def peer_configs(threads, variants=(("", ()),)):
    """The candidate configurations at `threads` threads: OpenMP's wait
    policy (passive, active) times the script's own variants, (label, extra
    arguments) pairs. The workers default to PASSIVE when the policy is
    unset, so OpenMP's default spin-waiting is never timed by accident."""
    n = str(threads)
    base = {"OMP_NUM_THREADS": n, "OPENBLAS_NUM_THREADS": n}
    envs = [dict(base, OMP_WAIT_POLICY="PASSIVE"),
            dict(base, OMP_WAIT_POLICY="ACTIVE")]
    return [Config(e, args, label) for e in envs for label, args in variants]


def parse_results(text):
    out = {}
    for line in text.splitlines():
        f = line.split()
        if len(f) == 3 and f[0] == "RESULT":
            out[f[1]] = float(f[2])
    return out


def run_side(side, config=None):
    """{workload: seconds} from a command (list) or a function."""
    if callable(side):
        return side(config)
    cmd = list(side) + (config.args if config else [])
    env = config.environ() if config else None
    r = subprocess.run(cmd, env=env, stdout=subprocess.PIPE, text=True)
    if r.returncode != 0:
        raise RuntimeError(f"{' '.join(cmd)} exited {r.returncode}")
    results = parse_results(r.stdout)
    if not results:
        raise RuntimeError(f"{' '.join(cmd)} printed no RESULT lines")
    return results


def tune(peer_cmd, configs, trial_args=(), trials=2):
    """Tries every configuration `trials` times (alternating), prints each
    one's best time per workload, and returns {workload: fastest config}."""
    best = {}  # workload -> (seconds, index)
    times = [dict() for _ in configs]
    for _ in range(trials):
        for i, c in enumerate(configs):
            r = run_side(peer_cmd if callable(peer_cmd) else
                         list(peer_cmd) + list(trial_args), c)
            for w, s in r.items():
                times[i][w] = min(s, times[i].get(w, s))
    workloads = list(times[0])
    print("  peer configurations tried (best of %d short trials):" % trials)
    for i, c in enumerate(configs):
        print("    %-66s %s" % (c.describe(), "  ".join(
            f"{w} {fmt_time(times[i][w])}" for w in workloads)))
        for w in workloads:
            if w not in best or times[i][w] < best[w][0]:
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
                     peer_configs(self.threads)[0])
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


def compare(title, threads, runnel, peer_cmd, rounds, workloads,
            variants=(("", ()),), trial_args=(), flops=None, build_dir=None,
            peer_name="PyTorch", sets_threads=True):
    """Tunes the peer, alternates `rounds` rounds and prints the report.

    workloads: {name: description}; flops: {name: FLOPs per unit} or None;
    runnel: a side; peer_cmd: the peer's command, to which a configuration's
    arguments and then `trial_args` (in the tuning trials) are appended;
    threads: None where the work is single-threaded; sets_threads: whether
    the peer calls torch.set_num_threads(threads).
    """
    print(f"{title} ({threads} threads, {rounds} alternating rounds)"
          if threads else f"{title} ({rounds} alternating rounds)")
    configs = peer_configs(threads, variants) if peer_name == "PyTorch" \
        else [Config({}, args, label) for label, args in variants]
    chosen = tune(peer_cmd, configs, trial_args) if len(configs) > 1 else \
        {w: configs[0] for w in workloads}
    peak = GemmPeak(threads, build_dir) if flops else None
    groups = []  # distinct chosen configs, in order
    for w in workloads:
        if all(chosen[w] is not g for g in groups):
            groups.append(chosen[w])
    ours = {w: [] for w in workloads}
    theirs = {w: [] for w in workloads}
    for k in range(rounds):
        def run_ours():
            r = run_side(runnel)
            for w in workloads:
                ours[w].append(r[w])

        def run_theirs():
            for g in groups:
                r = run_side(peer_cmd, g)
                for w in workloads:
                    if chosen[w] is g:
                        theirs[w].append(r[w])
        first, second = (run_ours, run_theirs) if k % 2 == 0 else \
            (run_theirs, run_ours)
        first()
        second()
        if peak:
            peak.measure()
        print("  round %d: " % (k + 1) + "; ".join(
            f"{w} Runnel {fmt_time(ours[w][-1])}, {peer_name} "
            f"{fmt_time(theirs[w][-1])}" for w in workloads))
        sys.stdout.flush()
    if peak:
        print("  " + peak.describe(rounds))
    for w, desc in workloads.items():
        r, p = statistics.median(ours[w]), statistics.median(theirs[w])
        ratios = [a / b for a, b in zip(ours[w], theirs[w])]
        line = (f"{desc}: Runnel {fmt_time(r)}, {peer_name} {fmt_time(p)} "
                f"(medians); ratio {statistics.median(ratios):.3g} "
                f"(median of per-round ratios, {min(ratios):.3g}-"
                f"{max(ratios):.3g})")
        if peak and flops.get(w):
            floor = flops[w] / (peak.gflops() * 1e9)
            line += (f"; floor {fmt_time(floor)} ({flops[w] / 1e9:.3g} GFLOP"
                     f" at {peak.gflops():.0f} GFLOP/s: Runnel at "
                     f"{floor / r:.0%} of "
                     f"it, {peer_name} at {floor / p:.0%})")
        print(line)
        print(f"  {peer_name} configuration: "
              f"{chosen[w].describe(threads if sets_threads else None)}"
              if peer_name == "PyTorch" else
              f"  {peer_name} configuration: {chosen[w].label or 'default'}")
    sys.stdout.flush()
    return ours, theirs


def drive_binary(title, argv, peer_script, workloads, **kwargs):
    """compare() for a C++ benchmark that handed itself over (bench/peer.h):
    argv is `--compare BINARY [--threads N] [--rounds N] ...`; the binary
    runs with --runnel-only, the peer is `peer_script --peer`."""
    binary = argv[argv.index("--compare") + 1]
    threads = threads_arg(argv)
    return compare(
        title, threads, [binary, "--runnel-only", "--threads", str(threads)],
        [PYTHON, os.path.abspath(peer_script), "--peer", "--threads",
         str(threads)], int_arg(argv, "--rounds", 6), workloads,
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

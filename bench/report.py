"""Writes docs/performance.md from the results a `make bench` run recorded
(bench/peer.py's record(): one JSON line per workload), with the machine,
the date and the peers' versions. Nothing in the page is typed by hand.

    /usr/bin/python3 bench/report.py RESULTS.jsonl OUT.md [FAILED ...]
        [--not-run NAME ...]

FAILED: the benchmarks that failed in the run, listed under the table;
--not-run: the benchmarks a partial run (single harnesses run by hand with
RUNNEL_BENCH_RESULTS set) left out, listed too.
"""
import datetime
import json
import os
import platform
import subprocess
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import peer  # noqa: E402  pylint: disable=wrong-import-position

PEERS = ("TensorFlow", "PyTorch")


def cpu_model():
    with open("/proc/cpuinfo", encoding="utf-8") as fh:
        for line in fh:
            if line.startswith("model name"):
                return line.split(":", 1)[1].strip()
    return platform.processor() or "unknown CPU"


def memory_gib():
    with open("/proc/meminfo", encoding="utf-8") as fh:
        for line in fh:
            if line.startswith("MemTotal"):
                return int(line.split()[1]) / 2 ** 20
    return 0


def peer_versions():
    code = ("import os; os.environ['TF_CPP_MIN_LOG_LEVEL'] = '3'; "
            "import tensorflow as tf, torch; "
            "print(tf.__version__, torch.__version__)")
    out = subprocess.run([peer.PYTHON, "-c", code], stdout=subprocess.PIPE,
                         stderr=subprocess.DEVNULL, text=True, check=True)
    tf_version, torch_version = out.stdout.split()
    return {"TensorFlow": tf_version, "PyTorch": torch_version}


def cell(entry, name):
    p = entry["peers"].get(name)
    if not p:
        return "-"
    return f"{peer.fmt_time(p['time'])} ({p['config']})"


def main(argv):
    results, out = argv[0], argv[1]
    rest = argv[2:]
    cut = rest.index("--not-run") if "--not-run" in rest else len(rest)
    failed, not_run = rest[:cut], rest[cut + 1:]
    with open(results, encoding="utf-8") as fh:
        entries = [json.loads(line) for line in fh if line.strip()]
    versions = peer_versions()
    now = datetime.datetime.now(datetime.timezone.utc)
    lines = [
        "# Performance against TensorFlow and PyTorch",
        "",
        "Written by `bench/report.py` (`make bench` runs it) from the "
        "run's own measurements; do not edit by hand.",
        "",
        f"- Date: {now:%Y-%m-%d %H:%M} UTC",
        f"- Machine: {cpu_model()}, {os.cpu_count()} cores, "
        f"{memory_gib():.0f} GiB, {platform.system()} {platform.release()}",
        f"- Peers: TensorFlow {versions['TensorFlow']} (tensorflow-cpu), "
        f"PyTorch {versions['PyTorch']} (`requirements/bench.txt`), each at "
        "the fastest of the configurations its harness tries (shown in "
        "brackets)",
        "- Each time is the median over alternating rounds (Runnel and the "
        "peers in turn, the order rotating); **ratio** is the median over "
        "the rounds of Runnel's time divided by the best peer's time in the "
        "same round: below 1, Runnel is faster. The floor is the "
        "workload's FLOPs at the f32 GEMM peak measured in the same run, "
        "where the work is arithmetic.",
        "",
        "| benchmark | workload | Runnel | TensorFlow | PyTorch | ratio | "
        "floor |",
        "|---|---|---|---|---|---|---|",
    ]
    for e in entries:
        ratio = f"**{e['ratio']:.3g}**" if e["ratio"] is not None else "-"
        floor = peer.fmt_time(e["floor"]) if e.get("floor") else "-"
        others = [f"against {n}: {peer.fmt_time(p['time'])} ({p['config']})"
                  for n, p in e["peers"].items() if n not in PEERS]
        workload = e["workload"] + "".join(
            f" ({x})" for x in [e.get("note")] + others if x)
        n = e.get("threads")
        threads = f", {n} thread{'s' if n != 1 else ''}" if n else ""
        lines.append(
            f"| {e['bench']}{threads} | {workload} | "
            f"{peer.fmt_time(e['runnel'])} | {cell(e, 'TensorFlow')} | "
            f"{cell(e, 'PyTorch')} | {ratio} | {floor} |")
    if failed:
        lines += ["", "Benchmarks that failed in this run (no rows above): " +
                  ", ".join(f"`{f}`" for f in failed) + "."]
    if not_run:
        lines += ["", "**A partial run**: these benchmarks were not run "
                  "this time: " + ", ".join(f"`{n}`" for n in not_run) +
                  ". `make bench` runs them all."]
    with open(out, "w", encoding="utf-8") as fh:
        fh.write("\n".join(lines) + "\n")
    print(f"wrote {out}: {len(entries)} workloads")


if __name__ == "__main__":
    main(sys.argv[1:])

"""Replicated parameter servers under faults (docs/cluster.md, "Replicated
parameter servers"): `runnel cluster tests/cluster/async.rnl --ps 2
--workers 2 --ps-replicas 2` trains while this harness kills (kill -9) or
pauses (SIGSTOP, then SIGCONT) replicas at random moments: the primary of a
ps task, its backup, again and again. After each run it checks what the
script itself asserts and prints: every worker finished, `global_step`
equals the steps the workers completed (no update lost, none doubled) and
the model fits, and the chief's checkpoints were written throughout
(each a consistent snapshot, with no warning). It times each fault's
recovery from the workers' notes
("the run went through ..."), which it reads as they come, and says
whether each is within the aim of 2 seconds (a figure, not a pass or a
fail: tests hold no timings; a run that does not go on within 15 s fails
as a hang). A script whose ps state a replica cannot copy (a queue) is
refused at its line.

    python3 tests/cluster/replica_test.py RUNNEL            # one round
    python3 tests/cluster/replica_test.py RUNNEL --rounds 5 # the table
    python3 tests/cluster/replica_test.py RUNNEL --sync     # synchronous
    python3 tests/cluster/replica_test.py RUNNEL --stale    # two at once

With --sync it trains `tests/cluster/sync.rnl` instead, with synchronous
replicas (`replicas = 2` of 2 workers), under the same faults, and checks
that each run ends with `global_step` and every variable bit-equal to a run
without faults: the chief's saved model, compared byte for byte.

With --stale it runs one case of two faults at once instead: ps 0's
primary stopped, then the backup that took over killed before it resumes.
The resumed replica's state lacks what the killed one acknowledged alone,
so it must not serve it: the task starts empty and the chief restores it
from the newest checkpoint (steps since then are redone, by design).

Every fault is injected once per round, the next once the victim of the
last holds the task's state again (two replicas survive one fault at a
time); the table gives, per fault, the times injected, the runs finished,
the steps lost, the recovery (median and worst) and the worst time until
the task had two replicas again.
"""
import argparse
import os
import random
import re
import signal
import subprocess
import sys
import tempfile
import threading
import time

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(os.path.dirname(HERE))
STEPS = 4000        # per worker: about 15 s of training
SYNC_STEPS = 1200   # synchronous steps: about 20 s
LIMIT = 120         # seconds a run may take: past it, a hang
RECOVERY_AIM = 2    # seconds from a fault to the workers' steps going on
FAULTS = ["kill primary", "kill backup", "pause primary 3 s",
          "pause backup 0.5 s"]


class Cluster:
    """One `runnel cluster` run, its output read (and timed) as it comes."""

    def __init__(self, runnel, seed, checkpoints, save=None, total=None):
        """Asynchronous training (async.rnl) with checkpoints, `STEPS` per
        worker or until global_step reaches `total`; or with `save`,
        synchronous training (sync.rnl) that saves its model there."""
        if total is not None:
            script = ["async.rnl", "--arg", f"total={total}",
                      "--checkpoint-every", "1000steps"]
        elif save is None:
            script = ["async.rnl", "--arg", f"steps={STEPS}",
                      "--checkpoint-every", "1000steps"]
        else:
            script = ["sync.rnl", "--arg", "replicas=2", "--arg",
                      f"steps={SYNC_STEPS}", "--arg", f"save={save}",
                      "--checkpoint-every", "300steps"]
        self.p = subprocess.Popen(
            [runnel, "cluster", os.path.join(HERE, script[0]), "--ps", "2",
             "--workers", "2", "--ps-replicas", "2", "--seed", str(seed),
             "--checkpoint-dir", checkpoints] + script[1:],
            stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True,
            start_new_session=True)  # its tasks: one group, killed together
        self.lines = []  # (time, line)
        self.lock = threading.Lock()
        self.reader = threading.Thread(target=self._read, daemon=True)
        self.reader.start()

    def _read(self):
        for line in self.p.stdout:
            with self.lock:
                self.lines.append((time.monotonic(), line.rstrip("\n")))

    def seen(self, pattern, since=0.0):
        with self.lock:
            return [(t, l) for t, l in self.lines
                    if t >= since and re.search(pattern, l)]

    def replica(self, task, index):
        """The pid of the process serving replica `index` of ps `task`
        (waiting up to 15 s: it may be restarting, slowly on a loaded
        machine)."""
        def flag(argv, name):
            return argv[argv.index(name) + 1] if name in argv else None
        for _ in range(150):
            out = subprocess.run(["pgrep", "-P", str(self.p.pid)],
                                 capture_output=True, text=True).stdout
            for pid in out.split():
                try:
                    with open(f"/proc/{pid}/cmdline", "rb") as f:
                        argv = f.read().decode().split("\0")
                except OSError:
                    continue
                if ("server" in argv and flag(argv, "--task") == str(task) and
                        flag(argv, "--replica") == str(index)):
                    return int(pid)
            time.sleep(0.1)
        raise AssertionError(f"no replica {index} of ps {task} is running")

    def wait(self):
        try:
            self.p.wait(timeout=LIMIT)
        except subprocess.TimeoutExpired:
            kill_group(self)
            self.p.wait()
            raise AssertionError(f"the run hung past {LIMIT} s:\n" +
                                 self.text())
        self.reader.join(timeout=5)
        return self.p.returncode

    def text(self):
        with self.lock:
            return "\n".join(l for _, l in self.lines)


# A worker's last line, with its global_step (async.rnl, sync.rnl).
RESULT = r"global.step.? (\d+)"


def training(cluster):
    """Whether the workers are still training (neither has printed its
    result)."""
    return not cluster.seen(RESULT)


def inject(cluster, fault, primary, rng):
    """Injects `fault` on a random ps task; `primary[task]` is the replica
    that serves it. Returns (task, victim replica, time injected)."""
    task = rng.randrange(2)
    victim = primary[task] if "primary" in fault else 1 - primary[task]
    pid = cluster.replica(task, victim)
    start = time.monotonic()
    if fault.startswith("kill"):
        os.kill(pid, signal.SIGKILL)
        if "primary" in fault:
            primary[task] = 1 - primary[task]
    else:
        seconds = float(fault.split()[2])
        os.kill(pid, signal.SIGSTOP)
        time.sleep(seconds)
        os.kill(pid, signal.SIGCONT)
        # A pause past the keepalive (1.5 s) makes the backup the primary.
        if "primary" in fault and seconds > 1.5:
            primary[task] = 1 - primary[task]
    return task, victim, start


def rejoined(cluster, task, victim, start, fault):
    """Seconds from the fault until its victim holds the task's state
    again (a backup with the primary's whole state), after a fault that
    took it out (a kill, or a pause that made the other the primary);
    None after one that did not, or when training ended first. The next
    fault waits for it: two replicas survive one fault at a time, and a
    primary that dies before the other caught up leaves none with the
    current state (the task is then restored from a checkpoint, not
    bit-equal)."""
    if fault.startswith("pause") and "primary" not in fault:
        return None
    deadline = time.monotonic() + 15
    pattern = (rf"^\[ps:{task}\.{victim}\] note: .* holds the primary's "
               "whole state")
    while time.monotonic() < deadline:
        back = cluster.seen(pattern, start)
        if back:
            return back[0][0] - start
        if not training(cluster):
            return None
        time.sleep(0.05)
    raise AssertionError(f"{fault}: replica {victim} of ps {task} did not "
                         "catch up within 15 s:\n" + cluster.text())


def recovery(cluster, start, fault):
    """Seconds from the fault to the first run that went through after it
    (0 when no run failed: nothing waited)."""
    deadline = time.monotonic() + 15
    while time.monotonic() < deadline:
        through = cluster.seen(r"note: the run went through", start)
        failed = cluster.seen(r"retrying the run once it is back", start)
        if through and len(through) >= len(failed) > 0:
            return max(t for t, _ in through) - start
        if not failed and time.monotonic() > start + 3:
            return 0.0
        time.sleep(0.05)
    raise AssertionError(f"{fault}: no run went through within 15 s:\n" +
                         cluster.text())


def one_run(runnel, faults, rng, seed, stats, reference=None):
    """One run under `faults`; with `reference` (the saved model of a run
    without faults), synchronous, and its model must equal that."""
    with tempfile.TemporaryDirectory() as checkpoints:
        save = None if reference is None else os.path.join(checkpoints,
                                                           "model.ckpt")
        cluster = Cluster(runnel, seed, checkpoints, save)
        try:
            text = faulted_run(cluster, faults, rng, stats,
                               STEPS if save is None else SYNC_STEPS // 2)
        finally:
            stop(cluster)
        # The chief's checkpoints went on through the faults, each a
        # consistent snapshot of the primaries.
        written = [f for f in os.listdir(checkpoints) if f.endswith(".ckpt")
                   and f.startswith("ckpt-")]
        assert written, "no checkpoint was written:\n" + text
        assert "may mix a step's updates" not in text, text
        if save is not None:
            with open(save, "rb") as f:
                same = f.read() == reference
            for fault in faults:
                stats[fault]["equal"] += same
            assert same, "the model differs from the run without faults:\n" \
                + text
        return text


def kill_group(cluster):
    """Kills `runnel cluster` and every task it started (none outlives a
    hung run)."""
    try:
        os.killpg(cluster.p.pid, signal.SIGKILL)
    except ProcessLookupError:
        pass


def stop(cluster):
    if cluster.p.poll() is None:
        cluster.p.send_signal(signal.SIGINT)  # stops every task
        try:
            cluster.p.wait(timeout=15)
        except subprocess.TimeoutExpired:
            pass
    kill_group(cluster)


def faulted_run(cluster, faults, rng, stats, steps):
    """Injects `faults` while the cluster trains, `steps` per worker."""
    primary = [0, 0]
    deadline = time.monotonic() + 30
    while len(cluster.seen(r"\(replica \d\) serving at")) < 4:
        assert time.monotonic() < deadline and cluster.p.poll() is None, \
            "the cluster did not start:\n" + cluster.text()
        time.sleep(0.05)
    time.sleep(1)  # the chief has made the primaries and set the state
    for fault in faults:
        time.sleep(rng.uniform(0.3, 1.2))
        if not training(cluster):
            break
        task, victim, start = inject(cluster, fault, primary, rng)
        stats[fault]["injected"] += 1
        took = recovery(cluster, start, fault)
        stats[fault]["recovery"].append(took)
        back = rejoined(cluster, task, victim, start, fault)
        if back is not None:
            stats[fault]["rejoin"].append(back)
        if took > RECOVERY_AIM:  # what happened meanwhile, for the reader
            print(f"{fault} on ps {task}: {took:.2f} s; the output then:")
            for t, line in cluster.seen("", start):
                if t <= start + took + 0.1:
                    print(f"  +{t - start:5.2f} s {line}")
    code = cluster.wait()
    text = cluster.text()
    # (A synchronous step is one global step for both workers' steps.)
    want = 2 * steps
    found = [int(m) for m in re.findall(RESULT, text)]
    finished = code == 0 and len(found) == 2
    for fault in faults:
        stats[fault]["runs"] += 1
        stats[fault]["finished"] += finished
        stats[fault]["lost"] += (want - min(found)) if found else want
    assert finished, f"the run failed ({code}):\n{text}"
    assert found == [want, want], f"global_step {found}, not {want}:\n{text}"
    return text


def stale_copy(runnel):
    """Two faults at once: ps 0's primary is stopped, the workers go on
    with its backup, which is killed before the stopped one resumes. The
    resumed replica's state lacks what the killed one acknowledged alone:
    it must not serve it. The task starts empty, the chief restores it from
    the newest checkpoint, and training reaches its target."""
    total = 6000
    with tempfile.TemporaryDirectory() as checkpoints:
        cluster = Cluster(runnel, 5, checkpoints, total=total)
        try:
            deadline = time.monotonic() + 60
            while not any(f.startswith("ckpt-") and f.endswith(".ckpt")
                          for f in os.listdir(checkpoints)):
                assert time.monotonic() < deadline and training(cluster), \
                    "no checkpoint was written:\n" + cluster.text()
                time.sleep(0.05)
            stopped = cluster.replica(0, 0)  # the first primary
            start = time.monotonic()
            os.kill(stopped, signal.SIGSTOP)
            try:
                while len(cluster.seen(r"note: the run went through",
                                       start)) < 2:
                    assert time.monotonic() < start + 15, \
                        "the workers did not go on:\n" + cluster.text()
                    time.sleep(0.05)
                os.kill(cluster.replica(0, 1), signal.SIGKILL)
                time.sleep(0.5)
            finally:
                os.kill(stopped, signal.SIGCONT)
            code = cluster.wait()
        finally:
            stop(cluster)
        text = cluster.text()
    assert code == 0, f"the run failed ({code}):\n{text}"
    assert re.search(r"note: no replica of /job:ps/task:0 holds its current "
                     r"state", text), text
    assert re.search(r"note: restored \d+ variable\(s\) from", text), text
    found = [int(m) for m in re.findall(RESULT, text)]
    assert len(found) == 2 and min(found) >= total, text
    for line in text.splitlines():
        if re.search(r"no replica of|restored \d+ variable|holds the "
                     r"primary's whole state \(replica \d, epoch [3-9]", line):
            print("  " + line)
    print("a stale copy does not serve: after two faults at once ps 0 "
          "started empty and was restored from its checkpoint")


def reference_model(runnel):
    """The saved model of a synchronous run without faults."""
    with tempfile.TemporaryDirectory() as tmp:
        save = os.path.join(tmp, "model.ckpt")
        cluster = Cluster(runnel, 0, tmp, save)
        code = cluster.wait()
        assert code == 0, cluster.text()
        with open(save, "rb") as f:
            return f.read()


def check_refused(runnel):
    """A queue on a replicated ps: refused at its line, nothing run."""
    r = subprocess.run(
        [runnel, "cluster", os.path.join(HERE, "queue.rnl"), "--ps", "1",
         "--workers", "2", "--ps-replicas", "2"],
        capture_output=True, text=True, timeout=LIMIT)
    assert r.returncode != 0, r.stdout + r.stderr
    out = r.stdout + r.stderr
    assert re.search(r"queue\.rnl:\d+:\d+: error: .*'queue' keeps state that "
                     r"a replicated parameter server does not copy", out), out
    print("a queue on a replicated ps is refused at its line")


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("runnel")
    ap.add_argument("--rounds", type=int, default=1)
    ap.add_argument("--seed", type=int, default=0)
    ap.add_argument("--sync", action="store_true",
                    help="synchronous replicas, checked bit-equal to a run "
                    "without faults")
    ap.add_argument("--stale", action="store_true",
                    help="only the two-faults-at-once run (stale_copy)")
    args = ap.parse_args()
    if args.stale:
        stale_copy(args.runnel)
        return
    rng = random.Random(args.seed)
    stats = {f: {"injected": 0, "runs": 0, "finished": 0, "lost": 0,
                 "equal": 0, "recovery": [], "rejoin": []} for f in FAULTS}
    reference = None
    if args.sync:
        reference = reference_model(args.runnel)
        print(f"the run without faults saved a model of {len(reference)} "
              "bytes")
    else:
        check_refused(args.runnel)
    for r in range(args.rounds):
        faults = FAULTS[:]
        rng.shuffle(faults)
        one_run(args.runnel, faults, rng, r, stats, reference)
        print(f"round {r + 1}: {', '.join(faults)}: both workers finished" +
              (", the model bit-equal to the run without faults"
               if args.sync else f", global_step {2 * STEPS}"))
    equal = " runs bit-equal |" if args.sync else ""
    print(f"| fault | injected | runs finished | steps lost |{equal} "
          "recovery (s), median | worst | two replicas again (s), worst |")
    print("|---|--:|--:|--:|" + ("--:|" if args.sync else "") +
          "--:|--:|--:|")
    for f in FAULTS:
        s = stats[f]
        same = f" {s['equal']} of {s['runs']} |" if args.sync else ""
        took = sorted(s["recovery"]) or [0]
        back = f"{max(s['rejoin']):.2f}" if s["rejoin"] else "-"
        print(f"| {f} | {s['injected']} | {s['finished']} of {s['runs']} | "
              f"{s['lost']} |{same} {took[len(took) // 2]:.2f} | "
              f"{took[-1]:.2f} | {back} |")
    worst = max((max(s["recovery"], default=0), f) for f, s in stats.items())
    print(f"worst recovery {worst[0]:.2f} s ({worst[1]}): the aim of "
          f"{RECOVERY_AIM} s is {'met' if worst[0] <= RECOVERY_AIM else 'NOT met'}")


if __name__ == "__main__":
    main()

"""Replicated parameter servers over a real network (docs/cluster.md,
"Replicated parameter servers"): every task of `tests/cluster/async.rnl`'s
cluster (2 ps with 2 replicas each, 2 workers) runs in its own network
namespace, on its own address of the project's test network (198.18.N.0/24,
the range set aside for testing networks, RFC 2544), joined by veth pairs
to a bridge that only these namespaces use; the spec is not loopback, so
every task takes the cluster's token. While the workers train, the harness
injects one fault per run: a partition of a primary or a backup (its link
down), SIGSTOP of a primary, kill -9 of a primary, a backup, a worker or
the chief (each of which it restarts, as `runnel cluster` would), latency
with jitter, and packet loss.

Latency and loss go through netfilter rather than `tc netem` (which this
machine's kernel lacks): in the victim's namespace, `iptables -m statistic
--mode random` drops the share of its packets the fault names, in and out,
and an `NFQUEUE` rule hands every packet it sends to `delay_queue.py`, which
holds each for the delay plus or minus the jitter.

The workers train until `global_step` reaches its target, each printing
"step done" after every step that completed (`--arg total=T`); a killed
worker starts again from the start of its script. After each run the
harness checks the invariants (a Jepsen-style check of the logs): both
workers finish, and `global_step` is at least the steps all runs of all
workers completed (no update lost) and at most that plus one per worker
killed (a step in flight when its worker died may have been applied: none
doubled). Every request loop is bounded, and the namespaces, links and
processes are removed at the end, also on failure.

Needs root (ip netns); without it, it says so and passes (CI runs as root).
Without iptables' NFQUEUE and statistic support it says so and leaves out
latency and loss.

    python3 tests/cluster/netns_test.py RUNNEL [--faults all|short]
                                        [--keep DIR]  # the task logs
"""
import argparse
import os
import random
import re
import shutil
import signal
import subprocess
import sys
import tempfile
import threading
import time

HERE = os.path.dirname(os.path.abspath(__file__))
TOTAL = 3000  # global_step the workers train to: 5 to 20 s
SLOW_TOTAL = 600  # under latency or loss, where a step takes 10 times longer
LIMIT = 180  # seconds a run may take: past it, a hang
PORT = 2222
SHORT = ["partition primary 5 s", "kill primary", "kill worker",
         "loss 10 %"]
ALL = ["partition primary 5 s", "partition primary 60 s",
       "partition backup 5 s", "pause primary 3 s", "kill primary",
       "kill backup", "kill worker", "kill chief"]
NETEM = ["delay 20 ms jitter 10 ms", "loss 1 %", "loss 10 %"]
VICTIM = {"primary": "ps0r0", "backup": "ps0r1", "worker": "w1",
          "chief": "w0"}


def sh(*cmd, check=True):
    r = subprocess.run(cmd, capture_output=True, text=True, timeout=30)
    if check and r.returncode != 0:
        raise RuntimeError(f"{' '.join(cmd)}: {r.stderr.strip()}")
    return r


class Network:
    """A bridge and one namespace per task, each with its own address."""
    made = 0

    def __init__(self, names):
        Network.made += 1
        tag = (os.getpid() % 10000) * 10 + Network.made % 10
        self.subnet = f"198.18.{tag % 250}"
        self.bridge = f"rnb{tag}"
        self.ns = {n: f"rn{tag}-{k}" for k, n in enumerate(names)}
        self.veth = {n: f"rv{tag}x{k}" for k, n in enumerate(names)}
        self.address = {n: f"{self.subnet}.{10 + k}"
                        for k, n in enumerate(names)}
        try:
            self._make(names)
        except BaseException:
            self.remove()
            raise

    def _make(self, names):
        sh("ip", "link", "add", self.bridge, "type", "bridge")
        sh("ip", "link", "set", self.bridge, "up")
        for n in names:
            ns, host, inner = self.ns[n], self.veth[n], self.veth[n] + "i"
            sh("ip", "netns", "add", ns)
            sh("ip", "link", "add", host, "type", "veth", "peer", "name",
               inner)
            sh("ip", "link", "set", inner, "netns", ns)
            sh("ip", "link", "set", host, "master", self.bridge, "up")
            sh("ip", "netns", "exec", ns, "ip", "addr", "add",
               f"{self.address[n]}/24", "dev", inner)
            sh("ip", "netns", "exec", ns, "ip", "link", "set", inner, "up")
            sh("ip", "netns", "exec", ns, "ip", "link", "set", "lo", "up")

    def exec(self, name):
        return ["ip", "netns", "exec", self.ns[name]]

    def link(self, name, up):
        sh("ip", "link", "set", self.veth[name], "up" if up else "down")

    def loss(self, name, percent):
        """Drops `percent` of the packets `name` sends and receives."""
        for chain in ("INPUT", "OUTPUT"):
            sh(*self.exec(name), "iptables", "-A", chain, "-s" if chain ==
               "INPUT" else "-d", f"{self.subnet}.0/24", "-m", "statistic",
               "--mode", "random", "--probability", str(percent / 100), "-j",
               "DROP")

    def delay(self, name, delay_ms, jitter_ms, log):
        """Delays every packet `name` sends to the cluster; returns the
        delaying process (the rule's bypass lets packets through
        undelayed until it is ready)."""
        sh(*self.exec(name), "iptables", "-A", "OUTPUT", "-d",
           f"{self.subnet}.0/24", "-j", "NFQUEUE", "--queue-num", "0",
           "--queue-bypass")
        p = subprocess.Popen(self.exec(name) + [
            sys.executable, os.path.join(HERE, "delay_queue.py"),
            "--delay-ms", str(delay_ms), "--jitter-ms", str(jitter_ms)],
            stdout=subprocess.PIPE, stderr=log, text=True)
        if p.stdout.readline().strip() != "ready":
            p.wait()
            raise RuntimeError(f"delay_queue.py failed (exit {p.returncode})")
        return p

    def remove(self):
        for n, ns in self.ns.items():
            sh("ip", "link", "del", self.veth[n], check=False)  # both ends
            sh("ip", "netns", "del", ns, check=False)
        sh("ip", "link", "del", self.bridge, check=False)


class Task:
    def __init__(self, net, name, argv, log):
        self.net, self.name, self.argv, self.log = net, name, argv, log
        self.start()

    def start(self):
        self.p = subprocess.Popen(self.net.exec(self.name) + self.argv,
                                  stdout=self.log, stderr=subprocess.STDOUT)

    def signal(self, sig):
        self.p.send_signal(sig)


def run_one(runnel, fault, tmp):
    """Trains under `fault`; returns the steps completed (`done`), the final
    global_step (`step`), the workers killed and the longest wait of a run.
    Raises on a hang or a worker that failed."""
    names = ["ps0r0", "ps0r1", "ps1r0", "ps1r1", "w0", "w1"]
    total = SLOW_TOTAL if fault in NETEM else TOTAL
    net = Network(names)
    tasks, helpers = {}, []
    try:
        a = {n: f"{net.address[n]}:{PORT}" for n in names}
        spec = os.path.join(tmp, "c.json")
        with open(spec, "w", encoding="utf-8") as f:
            f.write('{"ps": [["%s", "%s"], ["%s", "%s"]], "worker": ["%s", '
                    '"%s"]}\n' % tuple(a[n] for n in names))
        token = os.path.join(tmp, "token")
        with open(token, "w", encoding="utf-8") as f:
            f.write("netns-test-token\n")
        logs = {n: open(os.path.join(tmp, n + ".log"), "w+",
                        encoding="utf-8") for n in names}
        worker_kills = 0
        if fault in NETEM:  # the links are slow or lossy from the start
            inject(net, tasks, fault, helpers, logs["w0"])
        for n in names[:4]:
            tasks[n] = Task(net, n, [
                runnel, "server", "--cluster", spec, "--job", "ps", "--task",
                n[2], "--replica", n[4], "--token-file", token], logs[n])
        for n in names[4:]:
            tasks[n] = Task(net, n, [
                runnel, "run", os.path.join(HERE, "async.rnl"), "--cluster",
                spec, "--job", "worker", "--task", n[1], "--token-file",
                token, "--arg", f"total={total}"], logs[n])
        start = time.monotonic()
        if fault not in NETEM:
            # at a random moment after the chief has made the primaries and
            # set the state (about 1.5 s), while the workers train (4-10 s)
            time.sleep(random.uniform(2.0, 4.0))
            worker_kills = inject(net, tasks, fault, helpers, logs["w0"])
        deadline = time.monotonic() + LIMIT
        for n in names[4:]:
            left = max(1, deadline - time.monotonic())
            try:
                tasks[n].p.wait(timeout=left)
            except subprocess.TimeoutExpired as e:
                raise AssertionError(f"{fault}: {n} hung past {LIMIT} s") from e
        text = {n: (logs[n].seek(0), logs[n].read())[1] for n in names}
        steps = set()
        for n in names[4:]:
            m = re.search(r"global_step (\d+)$", text[n], re.M)
            assert tasks[n].p.returncode == 0 and m, \
                f"{fault}: {n} failed:\n{text[n]}"
            steps.add(int(m.group(1)))
        through = [float(x) for n in names[4:] for x in re.findall(
            r"went through ([\d.]+) s", text[n])]
        return {"done": sum(text[n].count("step done\n") for n in names[4:]),
                # the worker that ends last saw the other's steps too
                "step": max(steps), "kills": worker_kills,
                "seconds": time.monotonic() - start,
                "wait": max(through, default=0.0)}
    finally:
        for p in [t.p for t in tasks.values()] + helpers:
            if p.poll() is None:
                p.kill()
                p.wait()
        net.remove()


def inject(net, tasks, fault, helpers, log):
    """Injects `fault`; returns how many workers it killed."""
    words = fault.split()
    if words[0] == "delay":  # what the chief and ps 0's primary send
        for n in ("w0", "ps0r0"):
            helpers.append(net.delay(n, float(words[1]), float(words[4]), log))
    elif words[0] == "loss":  # ps 0's primary's packets, both ways
        net.loss("ps0r0", float(words[1]))
    elif words[0] == "partition":
        victim = VICTIM[words[1]]
        net.link(victim, False)
        time.sleep(float(words[2]))
        net.link(victim, True)
    elif words[0] == "pause":
        tasks["ps0r0"].signal(signal.SIGSTOP)
        time.sleep(float(words[2]))
        tasks["ps0r0"].signal(signal.SIGCONT)
    elif words[0] == "kill":
        victim = VICTIM[words[1]]
        tasks[victim].signal(signal.SIGKILL)
        tasks[victim].p.wait()
        time.sleep(0.5)
        tasks[victim].start()  # a replica rejoins as a backup
        return int(victim.startswith("w"))
    else:
        raise ValueError(fault)
    return 0


def lacks_netfilter():
    """Why latency and loss cannot be injected here, or None."""
    ns = f"rnq{os.getpid() % 100000}"
    sh("ip", "netns", "add", ns)
    try:
        for rule in (["-m", "statistic", "--mode", "random", "--probability",
                      "0.5", "-j", "DROP"],
                     ["-j", "NFQUEUE", "--queue-num", "0", "--queue-bypass"]):
            try:
                r = sh("ip", "netns", "exec", ns, "iptables", "-A", "OUTPUT",
                       "-d", "198.18.255.1", *rule, check=False)
            except FileNotFoundError:
                return "no iptables (make setup installs it)"
            if r.returncode:
                return f"iptables {' '.join(rule)}: {r.stderr.strip()}"
        return None
    finally:
        sh("ip", "netns", "del", ns, check=False)


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("runnel")
    ap.add_argument("--faults", default="short",
                    help="short, all, or one fault's name")
    ap.add_argument("--rounds", type=int, default=1,
                    help="times each fault is injected")
    ap.add_argument("--seed", type=int, default=1,
                    help="seeds the moments of the faults")
    ap.add_argument("--keep", metavar="DIR",
                    help="keep each run's task logs in DIR/ROUND-FAULT/")
    args = ap.parse_args()
    if os.geteuid() != 0 or sh("ip", "netns", "list", check=False).returncode:
        print("skipped: network namespaces need root")
        return
    runnel = os.path.abspath(args.runnel)
    random.seed(args.seed)
    faults = {"short": SHORT, "all": ALL + NETEM}.get(args.faults,
                                                      [args.faults])
    why = lacks_netfilter()
    if why:
        print(f"no latency or loss: {why}")
        faults = [f for f in faults if f not in NETEM]
    rows = {f: {"runs": 0, "finished": 0, "done": 0, "lost": 0,
                "doubled": 0, "wait": 0.0} for f in faults}
    failures = []
    for k in range(args.rounds):
        for fault in faults:
            row = rows[fault]
            row["runs"] += 1
            try:
                with tempfile.TemporaryDirectory() as tmp:
                    try:
                        r = run_one(runnel, fault, tmp)
                    finally:
                        if args.keep:
                            shutil.copytree(tmp, os.path.join(
                                args.keep, f"{k + 1}-{fault.replace(' ', '_')}"),
                                dirs_exist_ok=True)
            except AssertionError as e:
                failures.append(f"round {k + 1}: {e}")
                print(failures[-1], flush=True)
                continue
            row["finished"] += 1
            row["done"] += r["done"]
            row["lost"] += max(0, r["done"] - r["step"])
            row["doubled"] += max(0, r["step"] - r["done"] - r["kills"])
            row["wait"] = max(row["wait"], r["wait"])
            print(f"round {k + 1}, {fault}: {r['done']} steps completed, "
                  f"global_step {r['step']}, {r['kills']} worker(s) killed, "
                  f"longest wait {r['wait']:.2f} s, run {r['seconds']:.1f} s",
                  flush=True)
    print("\n| fault | times injected | runs finished | steps completed | "
          "steps lost | steps doubled | longest wait of a run (s) |")
    print("|---|--:|--:|--:|--:|--:|--:|")
    for fault, row in rows.items():
        print(f"| {fault} | {row['runs']} | {row['finished']} | {row['done']} "
              f"| {row['lost']} | {row['doubled']} | {row['wait']:.2f} |")
    bad = [f for f, row in rows.items() if row["lost"] or row["doubled"]]
    if failures or bad:
        sys.exit(f"{len(failures)} run(s) failed; steps lost or doubled "
                 f"under: {', '.join(bad) or 'none'}")


if __name__ == "__main__":
    main()

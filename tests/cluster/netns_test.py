"""Replicated parameter servers over a real network (docs/cluster.md,
"Replicated parameter servers"): every task of `tests/cluster/async.rnl`'s
cluster (2 ps with 2 replicas each, 2 workers) runs in its own network
namespace, on its own address of the project's test network (198.18.N.0/24,
the range set aside for testing networks, RFC 2544), joined by veth pairs
to a bridge that only these namespaces use; the spec is not loopback, so
every task takes the cluster's token. While the workers train, the harness
injects one fault per run: a partition of a primary or a backup (its link
down), SIGSTOP of a primary, kill -9 of a primary or a backup (which it
restarts, as `runnel cluster` would), and, where the kernel has `tc`'s
netem, latency with jitter and packet loss. After each run it checks what the
script asserts: both workers finish, `global_step` is exactly the steps
they completed. Every request loop is bounded, and the namespaces, links
and processes are removed at the end, also on failure.

Needs root (ip netns); without it, it says so and passes (CI runs as root).

    python3 tests/cluster/netns_test.py RUNNEL [--faults all|short]
"""
import argparse
import os
import re
import signal
import subprocess
import sys
import tempfile
import threading
import time

HERE = os.path.dirname(os.path.abspath(__file__))
STEPS = 1500
LIMIT = 180  # seconds a run may take: past it, a hang
PORT = 2222
SHORT = ["partition primary 5 s", "kill primary"]
ALL = ["partition primary 5 s", "partition primary 60 s",
       "partition backup 5 s", "pause primary 3 s", "kill primary",
       "kill backup"]
NETEM = ["delay 20ms jitter 10ms", "loss 1%", "loss 10%"]


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

    def netem(self, name, *rule):
        sh(*self.exec(name), "tc", "qdisc", "replace", "dev",
           self.veth[name] + "i", "root", "netem", *rule)

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
    names = ["ps0r0", "ps0r1", "ps1r0", "ps1r1", "w0", "w1"]
    net = Network(names)
    tasks = {}
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
        for n in names[:4]:
            tasks[n] = Task(net, n, [
                runnel, "server", "--cluster", spec, "--job", "ps", "--task",
                n[2], "--replica", n[4], "--token-file", token], logs[n])
        for n in names[4:]:
            tasks[n] = Task(net, n, [
                runnel, "run", os.path.join(HERE, "async.rnl"), "--cluster",
                spec, "--job", "worker", "--task", n[1], "--token-file",
                token, "--arg", f"steps={STEPS}"], logs[n])
        time.sleep(2.5)  # the chief has made the primaries and set the state
        inject(net, tasks, fault)
        deadline = time.monotonic() + LIMIT
        for n in names[4:]:
            left = max(1, deadline - time.monotonic())
            try:
                tasks[n].p.wait(timeout=left)
            except subprocess.TimeoutExpired as e:
                raise AssertionError(f"{fault}: {n} hung past {LIMIT} s") from e
        text = {n: (logs[n].seek(0), logs[n].read())[1] for n in names}
        for n in names[4:]:
            m = re.search(r"global_step (\d+)$", text[n], re.M)
            assert tasks[n].p.returncode == 0 and m, \
                f"{fault}: {n} failed:\n{text[n]}"
            assert int(m.group(1)) == 2 * STEPS, \
                f"{fault}: {n}: global_step {m.group(1)}, not {2 * STEPS}"
        through = [float(x) for n in names[4:] for x in re.findall(
            r"went through ([\d.]+) s", text[n])]
        return max(through, default=0.0)
    finally:
        for t in tasks.values():
            if t.p.poll() is None:
                t.p.kill()
                t.p.wait()
        net.remove()


def inject(net, tasks, fault):
    words = fault.split()
    if words[0] == "delay":  # on worker 0's link, the whole run
        net.netem("w0", "delay", words[1], words[3])
    elif words[0] == "loss":  # on ps 0's primary's link, the whole run
        net.netem("ps0r0", "loss", words[1])
    elif words[0] == "partition":
        victim = "ps0r0" if words[1] == "primary" else "ps0r1"
        net.link(victim, False)
        time.sleep(float(words[2]))
        net.link(victim, True)
    elif words[0] == "pause":
        tasks["ps0r0"].signal(signal.SIGSTOP)
        time.sleep(float(words[2]))
        tasks["ps0r0"].signal(signal.SIGCONT)
    elif words[0] == "kill":
        victim = "ps0r0" if words[1] == "primary" else "ps0r1"
        tasks[victim].signal(signal.SIGKILL)
        tasks[victim].p.wait()
        time.sleep(0.5)
        tasks[victim].start()  # rejoins as a backup
    else:
        raise ValueError(fault)


def has_netem():
    """Whether `tc qdisc ... netem` works here (a kernel module)."""
    ns = f"rnq{os.getpid() % 100000}"
    sh("ip", "netns", "add", ns)
    try:
        return sh("ip", "netns", "exec", ns, "tc", "qdisc", "add", "dev", "lo",
                  "root", "netem", "delay", "1ms", check=False).returncode == 0
    finally:
        sh("ip", "netns", "del", ns, check=False)


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("runnel")
    ap.add_argument("--faults", default="short",
                    help="short, all, or one fault's name")
    args = ap.parse_args()
    if os.geteuid() != 0 or sh("ip", "netns", "list", check=False).returncode:
        print("skipped: network namespaces need root")
        return
    runnel = os.path.abspath(args.runnel)
    faults = {"short": SHORT, "all": ALL + NETEM}.get(args.faults,
                                                      [args.faults])
    if not has_netem():
        print("no latency or loss: this kernel has no netem qdisc ('tc qdisc "
              "add ... netem': unknown qdisc kind)")
        faults = [f for f in faults if f not in NETEM]
    print("| fault | run finished | steps lost | longest wait of a run (s) |")
    print("|---|---|--:|--:|")
    for fault in faults:
        with tempfile.TemporaryDirectory() as tmp:
            recovery = run_one(runnel, fault, tmp)
        print(f"| {fault} | yes | 0 | {recovery:.2f} |", flush=True)


if __name__ == "__main__":
    main()

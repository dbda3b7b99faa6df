"""The cluster commands end to end (docs/cluster.md): a killed parameter
server makes a worker's run fail at its line instead of hanging, tokens are
required and checked, bad specs are named, and `runnel cluster` prefixes
output and exits with the failing worker's status.

    python3 tests/cluster/cli_test.py RUNNEL
"""
import os
import signal
import socket
import subprocess
import sys
import tempfile
import time

HERE = os.path.dirname(os.path.abspath(__file__))
LIMIT = 60  # seconds any command may take: past it, the test fails (a hang)


def free_ports(n):
    socks = [socket.socket() for _ in range(n)]
    for s in socks:
        s.bind(("127.0.0.1", 0))
    ports = [s.getsockname()[1] for s in socks]
    for s in socks:
        s.close()
    return ports


def write(path, text):
    with open(path, "w", encoding="utf-8") as f:
        f.write(text)
    return path


def spec(tmp, ps=1, workers=1, host="127.0.0.1"):
    ports = free_ports(ps + workers)
    jobs = {"ps": [f"{host}:{p}" for p in ports[:ps]],
            "worker": [f"{host}:{p}" for p in ports[ps:]]}
    body = ", ".join(f'"{j}": [' + ", ".join(f'"{a}"' for a in addrs) + "]"
                     for j, addrs in jobs.items())
    return write(os.path.join(tmp, "c.json"), "{" + body + "}\n")


def server(runnel, cluster, task=0, extra=()):
    p = subprocess.Popen([runnel, "server", "--cluster", cluster, "--job",
                          "ps", "--task", str(task), *extra],
                         stdout=subprocess.PIPE, stderr=subprocess.STDOUT,
                         text=True)
    line = p.stdout.readline()
    assert "serving at" in line, line
    return p


def run(args, **kw):
    return subprocess.run(args, capture_output=True, text=True, timeout=LIMIT,
                          **kw)


def check_killed_ps(runnel, tmp):
    cluster = spec(tmp)
    ps = server(runnel, cluster)
    worker = subprocess.Popen(
        [runnel, "run", os.path.join(HERE, "train_forever.rnl"), "--cluster",
         cluster, "--job", "worker", "--task", "0"],
        stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    assert worker.stdout.readline().strip() == "training"
    ps.send_signal(signal.SIGKILL)
    ps.wait()
    out, err = worker.communicate(timeout=LIMIT)
    assert worker.returncode == 1, (worker.returncode, err)
    assert "train_forever.rnl:9:25: error: /job:ps/task:0 unreachable (" in err, err
    print("killed ps: the worker's run failed at its line:", err.splitlines()[0])


def check_never_up(runnel, tmp):
    cluster = spec(tmp)  # nobody serves ps:0
    r = run([runnel, "run", os.path.join(HERE, "train_forever.rnl"),
             "--cluster", cluster, "--job", "worker", "--task", "0"])
    assert r.returncode == 1, r
    assert ":7:1: error: /job:ps/task:0 unreachable (" in r.stderr, r.stderr
    print("ps never up:", r.stderr.splitlines()[0])


def check_token(runnel, tmp):
    cluster = spec(tmp)
    token = write(os.path.join(tmp, "token"), "s3cret\n")
    ps = server(runnel, cluster, extra=["--token-file", token])
    script = os.path.join(HERE, "train_forever.rnl")
    worker = [runnel, "run", script, "--cluster", cluster, "--job", "worker",
              "--task", "0"]
    try:
        r = run(worker)
        assert r.returncode == 1, r
        assert "/job:ps/task:0 refused the request: a request without this " \
               "cluster's token" in r.stderr, r.stderr
        wrong = write(os.path.join(tmp, "wrong"), "guess\n")
        r = run(worker + ["--token-file", wrong])
        assert "refused the request" in r.stderr, r.stderr
        # With the token it trains (stopped after its first line).
        p = subprocess.Popen(worker + ["--token-file", token],
                             stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                             text=True)
        assert p.stdout.readline().strip() == "training"
        p.kill()
        p.wait()
    finally:
        ps.kill()
        ps.wait()
    # A spec beyond loopback needs a token on every task.
    far = spec(tmp, host="10.1.2.3")
    r = run([runnel, "server", "--cluster", far, "--job", "ps", "--task", "0"])
    assert r.returncode == 1 and "every task needs --token-file" in r.stderr, r
    print("tokens: refused without, accepted with")


def check_killed_sync_worker(runnel, tmp):
    """Synchronous replicas (replicas = 2 of 2 workers): kill -9 one worker
    mid-training and the other still finishes, alone, with every step."""
    cluster = spec(tmp, ps=1, workers=2)
    ps = server(runnel, cluster)
    script = os.path.join(HERE, "sync.rnl")
    workers = [subprocess.Popen(
        [runnel, "run", script, "--cluster", cluster, "--job", "worker",
         "--task", str(i), "--arg", "steps=3000"],
        stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
        for i in range(2)]
    try:
        assert workers[1].stdout.readline().strip() == "training"
        workers[1].send_signal(signal.SIGKILL)
        workers[1].wait()
        out, err = workers[0].communicate(timeout=LIMIT)
        assert workers[0].returncode == 0, (out, err)
        assert "global steps 3000" in out, out
    finally:
        for p in workers + [ps]:
            p.kill()
            p.wait()
    print("sync replicas: a killed worker stops counting:", out.splitlines()[-1])


def check_spec_errors(runnel, tmp):
    script = os.path.join(HERE, "train_forever.rnl")
    bad = write(os.path.join(tmp, "bad.json"), '{"worker": ["127.0.0.1:1", 7]}')
    r = run([runnel, "run", script, "--cluster", bad, "--job", "worker",
             "--task", "0"])
    assert r.returncode == 1, r
    assert r.stderr == f'error: {bad}: "worker"[1]: needs a "host:port" ' \
                       'string\n', r.stderr
    good = spec(tmp)
    r = run([runnel, "run", script, "--cluster", good, "--job", "worker",
             "--task", "3"])
    assert "the cluster spec's job 'worker' has no task 3 (it has 1)" in \
        r.stderr, r.stderr
    r = run([runnel, "run", script, "--cluster", good])
    assert r.returncode == 2 and "needs --cluster FILE --job NAME --task N" \
        in r.stderr, r
    print("spec errors name the file and the field")


def check_launcher(runnel, tmp):
    script = write(os.path.join(tmp, "fail.rnl"), """
let me = task()
print("hello from", me.index)
assert(me.index == 0, "worker 1 fails")
""")
    r = run([runnel, "cluster", script, "--ps", "1", "--workers", "2"])
    assert r.returncode == 1, r
    assert "[worker:0] hello from 0" in r.stdout, r.stdout
    assert "[worker:1] hello from 1" in r.stdout, r.stdout
    assert "[worker:1] " in r.stderr and "worker 1 fails" in r.stderr, r.stderr
    assert "[cluster] worker:1 exited with status 1" in r.stderr, r.stderr
    print("cluster: prefixed output, the failing worker's status")


def main():
    runnel = sys.argv[1]
    with tempfile.TemporaryDirectory() as tmp:
        check_spec_errors(runnel, tmp)
        check_launcher(runnel, tmp)
        check_token(runnel, tmp)
        check_killed_ps(runnel, tmp)
        check_killed_sync_worker(runnel, tmp)
        check_never_up(runnel, tmp)


if __name__ == "__main__":
    main()

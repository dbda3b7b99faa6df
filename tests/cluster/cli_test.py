"""The cluster commands end to end (docs/cluster.md): a killed parameter
server makes a worker's run fail at its line instead of hanging, tokens are
required and checked, bad specs are named, and `runnel cluster` prefixes
output and exits with the failing worker's status.

    python3 tests/cluster/cli_test.py RUNNEL
"""
import os
import re
import signal
import socket
import struct
import subprocess
import sys
import tempfile
import threading
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


def child(launcher, *words, tries=50):
    """The pid of the launcher's child whose command line has `words`
    (waiting up to 5 s for it: it may be restarting)."""
    for _ in range(tries - 1):
        try:
            return child(launcher, *words, tries=1)
        except AssertionError:
            time.sleep(0.1)
    out = subprocess.run(["pgrep", "-P", str(launcher.pid)],
                         capture_output=True, text=True).stdout.split()
    seen = []
    for pid in out:
        try:
            with open(f"/proc/{pid}/cmdline", "rb") as f:
                argv = f.read().decode().split("\0")
        except OSError:
            continue
        if all(w in argv for w in words):
            return int(pid)
        seen.append(argv)
    raise AssertionError(f"no task {words} under the launcher: {seen}")


def check_recovery(runnel, tmp):
    """kill -9 of the ps, then of a worker, under `runnel cluster
    --restart`: the workers wait for the ps and go on, the chief restores it
    from the newest checkpoint, the worker rejoins, and training reaches the
    exact answer."""
    ckpt = os.path.join(tmp, "ckpt")
    p = subprocess.Popen(
        [runnel, "cluster", os.path.join(HERE, "recover.rnl"), "--ps", "1",
         "--workers", "2", "--restart", "--checkpoint-dir", ckpt,
         "--checkpoint-every", "200steps", "--arg", "steps=20000"],
        stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    err_lines = []  # stderr as it comes, for the latches below
    seen = threading.Condition()

    def read_stderr():
        for line in p.stderr:
            with seen:
                err_lines.append(line)
                seen.notify_all()

    def wait_stderr(text):
        with seen:
            if not seen.wait_for(lambda: any(text in l for l in err_lines),
                                 timeout=LIMIT):
                raise AssertionError(f"no {text!r}: {''.join(err_lines)}")

    reader = threading.Thread(target=read_stderr, daemon=True)
    reader.start()
    try:
        while "[worker:0] training" not in p.stdout.readline():
            pass
        # Once the first checkpoint is written, the ps dies ...
        deadline = time.time() + LIMIT
        while not (os.path.isdir(ckpt) and
                   any(n.endswith(".ckpt") for n in os.listdir(ckpt))):
            assert time.time() < deadline, "no checkpoint was written"
            time.sleep(0.05)
        os.kill(child(p, "server", "ps"), signal.SIGKILL)
        # ... and once it is back and restored, a worker.
        wait_stderr("[worker:0] note: restored ")
        os.kill(child(p, "run", "--task", "1"), signal.SIGKILL)
        out = p.stdout.read()
        p.wait(timeout=3 * LIMIT)
        reader.join(timeout=LIMIT)
        err = "".join(err_lines)
    finally:
        p.kill()
        p.wait()
    assert p.returncode == 0, (out, err)
    assert "ps:0 was killed by signal 9" in err, err
    assert "worker:1 was killed by signal 9" in err, err
    assert "retrying the run once it is back" in err, err
    assert "[worker:0] note: restored " in err, err  # the empty ps
    for k in (0, 1):  # the last steps of the two may overlap by one
        assert re.search(rf"\[worker:{k}\] {k} global step 2000[01] ", out), out
    print("recovery: ps and worker killed, restarted, restored; both finish")


def check_checkpoint_dir(runnel, tmp):
    """--checkpoint-dir on one machine: a run that stops at step 50 and
    one resumed to 100 end where a straight run to 100 does; --keep prunes;
    a corrupt newest checkpoint is skipped for the one before."""
    script = write(os.path.join(tmp, "resume.rnl"), """
import optim
input x: f32[?, 2]
var w = [[0.5], [-0.5]]
let train = optim.sgd(mean(square(x @ w - 1.0)), lr = 0.01)
loop n = 0 while int(run global_step()) < arg("until", 50) {
    run train with {x: [[1.0, 2.0]]}
    n + 1
}
print(run global_step(), run w)
""")
    ckpt = os.path.join(tmp, "resume")
    first = run([runnel, "run", script, "--checkpoint-dir", ckpt,
                 "--checkpoint-every", "20steps", "--keep", "2"])
    assert first.returncode == 0, first
    assert sorted(os.listdir(ckpt)) == ["ckpt-40.ckpt", "ckpt-50.ckpt"], \
        os.listdir(ckpt)
    resumed = run([runnel, "run", script, "--checkpoint-dir", ckpt, "--arg",
                   "until=100"])
    straight = run([runnel, "run", script, "--arg", "until=100"])
    assert "restoring 2 variable(s) from" in resumed.stderr, resumed.stderr
    assert resumed.stdout == straight.stdout, (resumed.stdout, straight.stdout)
    with open(os.path.join(ckpt, "ckpt-100.ckpt"), "r+b") as f:
        f.seek(100)
        f.write(b"garbage")
    again = run([runnel, "run", script, "--checkpoint-dir", ckpt, "--arg",
                 "until=100"])
    assert "warning: skipping" in again.stderr, again.stderr
    assert "ckpt-50.ckpt (global step 50)" in again.stderr, again.stderr
    assert again.stdout == straight.stdout, (again.stdout, straight.stdout)
    print("checkpoint dir: resumed equals straight,", straight.stdout.strip())


def read_scalars(path):
    """{name: value} of a checkpoint's scalar tensors (docs/checkpoints.md)."""
    with open(path, "rb") as f:
        data = f.read()
    assert data[:8] == b"\x89RNLCKPT", path
    count = struct.unpack_from("<I", data, 12)[0]
    formats = {3: "<f", 4: "<d", 7: "<i", 8: "<q"}
    at, out = 40, {}
    for _ in range(count):
        length = struct.unpack_from("<I", data, at)[0]
        name = data[at + 4:at + 4 + length].decode()
        at += 4 + length
        dtype, rank = struct.unpack_from("<II", data, at)
        at += 8 + 8 * rank
        offset = struct.unpack_from("<Q", data, at)[0]
        at += 20  # offset, size, CRC-32
        if rank == 0 and dtype in formats:
            out[name] = struct.unpack_from(formats[dtype], data, offset)[0]
    return out


def check_consistent_snapshots(runnel, tmp, replicas=0, workers=2):
    """Training on 2 ps: every step adds 1 to a (ps:0) and 1 to b (ps:1),
    and the chief checkpoints every few steps meanwhile; each checkpoint
    holds whole steps, so a == b == global_step in all of them (without the
    freeze, some of them mix a step's updates). Asynchronous, or with
    synchronous replicas and a backup worker (replicas < workers), where
    the chief's runs do not pace the global steps and the checkpoint holds
    the barrier instead."""
    script = write(os.path.join(tmp, f"snapshot{replicas}.rnl"), """
import optim
device "/job:ps/task:0" { var a = 0.0 }
device "/job:ps/task:1" { var b = 0.0 }
let train = optim.sgd(-(a + b), lr = 1.0, replicas = arg("replicas", 0))
for i in 0..arg("steps", 600) { run train }
""")
    ckpt = os.path.join(tmp, f"snapshots{replicas}")
    r = run([runnel, "cluster", script, "--ps", "2", "--workers",
             str(workers), "--arg", f"replicas={replicas}",
             "--checkpoint-dir", ckpt, "--checkpoint-every", "10steps",
             "--keep", "100000"])
    assert r.returncode == 0, r
    assert "may mix a step's updates" not in r.stderr, r.stderr
    files = sorted(os.listdir(ckpt))
    assert len(files) > 5, files
    for name in files:
        v = read_scalars(os.path.join(ckpt, name))
        assert v["a"] == v["b"] == v["global_step"], (name, v)
    final = read_scalars(os.path.join(ckpt, max(
        files, key=lambda f: int(f[len("ckpt-"):-len(".ckpt")]))))
    how = (f"synchronous training ({replicas} of {workers} workers)"
           if replicas else "asynchronous training")
    print(f"consistent snapshots: {len(files)} checkpoints during {how}, "
          f"a == b == global_step in each; last {final}")


def check_launcher_interrupt(runnel, tmp):
    """Ctrl-C (SIGINT) to `runnel cluster` stops every task and exits 130,
    leaving no process behind."""
    p = subprocess.Popen(
        [runnel, "cluster", os.path.join(HERE, "train_forever.rnl"), "--ps",
         "1", "--workers", "2"],
        stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    while "training" not in p.stdout.readline():
        pass
    tasks = subprocess.run(["pgrep", "-P", str(p.pid)], capture_output=True,
                           text=True).stdout.split()
    assert len(tasks) == 3, tasks
    p.send_signal(signal.SIGINT)
    out, err = p.communicate(timeout=LIMIT)
    assert p.returncode == 130, (p.returncode, err)
    assert "[cluster] interrupted: stopping every task" in err, err
    for pid in tasks:
        assert not os.path.exists(f"/proc/{pid}"), f"task {pid} still runs"
    print("cluster: Ctrl-C stops every task, exit 130")


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
        check_checkpoint_dir(runnel, tmp)
        check_consistent_snapshots(runnel, tmp)
        check_consistent_snapshots(runnel, tmp, replicas=2, workers=3)
        check_launcher(runnel, tmp)
        check_launcher_interrupt(runnel, tmp)
        check_token(runnel, tmp)
        check_killed_ps(runnel, tmp)
        check_killed_sync_worker(runnel, tmp)
        check_recovery(runnel, tmp)
        check_never_up(runnel, tmp)


if __name__ == "__main__":
    main()

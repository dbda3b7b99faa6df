#!/usr/bin/python3
"""Drives `runnel` (no arguments: the REPL) through a pseudo-terminal.

usage: repl_test.py PATH/TO/runnel

Each step waits at most 10 s for its expected output; the whole test is
limited to 60 s by an alarm, so a failure never hangs.
"""
import os
import pty
import re
import select
import shutil
import signal
import sys
import tempfile
import termios
import time

RUNNEL = sys.argv[1]
STEP_TIMEOUT = 60.0  # generous: a loaded 2-core machine may be slow


class Repl:
    def __init__(self, history):
        env = dict(os.environ)
        env["RUNNEL_HISTORY"] = history
        env["TERM"] = "xterm"
        env.pop("EDITRC", None)
        env["HOME"] = os.path.dirname(history)  # no ~/.editrc
        env["TMPDIR"] = os.path.dirname(history)  # :graph's pictures
        pid, fd = pty.fork()
        if pid == 0:
            os.execve(RUNNEL, [RUNNEL], env)
        self.pid, self.fd = pid, fd
        self.buf = b""

    def send(self, data):
        os.write(self.fd, data.encode() if isinstance(data, str) else data)

    def wait_raw(self, what):
        """Waits until libedit has put the terminal in raw mode (the pty's
        master reports the slave's modes): a key sent before that would
        meet the canonical line discipline instead (a ^D would be eaten)."""
        deadline = time.time() + STEP_TIMEOUT
        while termios.tcgetattr(self.fd)[3] & termios.ICANON:
            if time.time() > deadline:
                fail(f"{what}: the terminal never left canonical mode")
            time.sleep(0.01)

    def expect(self, pattern, what):
        """Reads until `pattern` (a regex over the output so far, from the
        last match on) appears; fails the test after STEP_TIMEOUT."""
        regex = re.compile(pattern.encode() if isinstance(pattern, str) else pattern)
        deadline = time.time() + STEP_TIMEOUT
        while True:
            m = regex.search(self.buf)
            if m:
                self.buf = self.buf[m.end():]
                return m
            left = deadline - time.time()
            if left <= 0:
                fail(f"{what}: no {pattern!r} within {STEP_TIMEOUT}s; "
                     f"output so far:\n{self.buf.decode(errors='replace')}")
            r, _, _ = select.select([self.fd], [], [], left)
            if r:
                try:
                    data = os.read(self.fd, 4096)
                except OSError:
                    data = b""
                if not data:
                    fail(f"{what}: the REPL ended; output:\n"
                         f"{self.buf.decode(errors='replace')}")
                self.buf += data

    def wait_exit(self, what):
        deadline = time.time() + STEP_TIMEOUT
        while time.time() < deadline:
            try:
                r, _, _ = select.select([self.fd], [], [], 0.1)
                if r:
                    self.buf += os.read(self.fd, 4096)
            except OSError:
                pass
            pid, status = os.waitpid(self.pid, os.WNOHANG)
            if pid:
                return os.waitstatus_to_exitcode(status)
        fail(f"{what}: the REPL did not exit; output:\n"
             f"{self.buf.decode(errors='replace')}")


def fail(message):
    print("FAIL:", message)
    sys.exit(1)


def main():
    signal.alarm(60)
    tmp = tempfile.mkdtemp(prefix="runnel-repl-")
    history = os.path.join(tmp, "history")

    r = Repl(history)
    r.expect(r">>> ", "first prompt")

    # An expression prints its value; `let` prints nothing.
    r.send("1 + 2\r")
    r.expect(r"\r\n3\r\n>>> ", "1 + 2")
    r.send("let t = [1.0, 2.0, 3.0] * 2\r")
    r.expect(r">>> ", "let")
    r.send("t\r")
    r.expect(r"\[2(\.0)?, 4(\.0)?, 6(\.0)?\]\r\n>>> ", "a tensor's values")

    # A multi-line def continues on '...' lines.
    r.send("def twice(a) {\r")
    r.expect(r"\.\.\. ", "continuation prompt")
    r.send("  a * 2\r")
    r.expect(r"\.\.\. ", "second continuation prompt")
    r.send("}\r")
    r.expect(r">>> ", "def done")
    r.send("twice(21)\r")
    r.expect(r"\r\n42\r\n>>> ", "calling the def")

    # A syntax error is reported and the session goes on.
    r.send("1 + )\r")
    r.expect(r"error", "syntax error")
    r.expect(r">>> ", "prompt after a syntax error")

    # :help NAME: a builtin's signature and its op's doc.
    r.send(":help sum\r")
    r.expect(r"sum\(x, axis = none, keepdims = false\)", ":help sum signature")
    r.expect(r"The sum over `axis`", ":help sum doc")
    r.expect(r">>> ", "prompt after :help sum")
    r.send(":help no_such_thing\r")
    r.expect(r"no builtin, op or function named 'no_such_thing'", ":help of an unknown name")
    r.expect(r">>> ", "prompt after :help of an unknown name")
    # :help of a stdlib function, its module not imported: the signature
    # and the doc comment above its def.
    r.send(":help nn.dense\r")
    r.expect(r"def dense\(x, units, act = none, init = glorot_uniform, bias = true\)",
             ":help nn.dense signature")
    r.expect(r"stdlib/nn.rnl:\d+", ":help nn.dense place")
    r.expect(r"A fully connected layer", ":help nn.dense doc")
    r.expect(r">>> ", "prompt after :help nn.dense")
    r.send(":help optim.adamw\r")
    r.expect(r"def adamw\(loss = none, lr = 0.001, beta1 = 0.9, beta2 = 0.999, eps = 1e-8, "
             r"weight_decay = 0.01, vars = \[\], replicas = 0, grads = none, "
             r"reduce = none\)",
             ":help optim.adamw signature, its two lines joined")
    r.expect(r"decoupled", ":help optim.adamw doc")
    r.expect(r">>> ", "prompt after :help optim.adamw")
    r.send(":help nn._axis\r")
    r.expect(r"no builtin, op or function named 'nn._axis'", ":help of a private function")
    r.expect(r">>> ", "prompt after :help of an unknown name")

    # :vars lists the defined names.
    r.send(":vars\r")
    r.expect(r"\nt: ", ":vars lists t")
    r.expect(r"twice: ", ":vars lists twice")
    r.expect(r">>> ", "prompt after :vars")

    # :devices lists the devices runs are placed on.
    r.send(":devices\r")
    r.expect(r"/cpu:0  /job:localhost/task:0/device:cpu:0, \d+ intra-op threads",
             ":devices lists /cpu:0")
    r.expect(r">>> ", "prompt after :devices")

    # Tab completion: a defined name and a builtin.
    r.send("let counter_value = 7\r")
    r.expect(r">>> ", "let counter_value")
    r.send("counter_v\t")
    # The line is redrawn with cursor moves: the completed rest shows up
    # after the typed prefix; that the name then evaluates proves it.
    r.expect(r"counter_v[\s\S]*alue", "completing a defined name")
    r.send("\r")
    r.expect(r"\r\n7\r\n>>> ", "the completed name evaluates")
    r.send("log_so\t")
    r.expect(r"log_so[\s\S]*ftmax", "completing a builtin")
    r.send("\x03")  # abandon it: Ctrl-C on a partial line
    r.expect(r"\^C\r\n>>> ", "fresh prompt after Ctrl-C")
    r.send("1 + 1\r")
    r.expect(r"\r\n2\r\n>>> ", "the session after Ctrl-C on a line")

    # Ctrl-C during a long host loop interrupts it; the session goes on.
    # The loop says when it is under way, so Ctrl-C cannot arrive before it.
    r.send("loop i = 0 while i < 1000000000 { if i == 1000 { print(\"loop\" + \"ing\") }; i + 1 }\r")
    r.expect(r"\r\nlooping", "the loop has started")
    r.send("\x03")
    r.expect(r"interrupted", "interrupting a host loop")
    r.expect(r">>> ", "prompt after the interruption")
    r.send("1 + 1\r")
    r.expect(r"\r\n2\r\n>>> ", "the session after an interruption")

    # Ctrl-C during a long `run` (4000 chained 512x512 matmuls, seconds of
    # work) stops the executor between kernels; the session goes on.
    r.send("input big: f32[512, 512]\r")
    r.expect(r">>> ", "declaring an input")
    r.send("let m = debug_print(big, \"chain started\")\r")
    r.expect(r">>> ", "binding m")
    r.send("for i in 0..4000 { m = tanh(m @ big) }\r")
    r.expect(r">>> ", "building a long chain")
    r.send("let slow = run m with {big: ones([512, 512]) * 0.001}\r")
    r.expect(r"\r\nchain started", "the run has started")
    r.send("\x03")
    r.expect(r"error: interrupted", "interrupting a run")
    r.expect(r">>> ", "prompt after interrupting a run")
    r.send("1 + 1\r")
    r.expect(r"\r\n2\r\n>>> ", "the session after interrupting a run")

    # Module members complete after `name.`; :load runs a file in the session.
    module = os.path.join(tmp, "mod.rnl")
    with open(module, "w") as f:
        f.write("def helper_fn(x) = x + 1\nlet loaded_value = 40\n")
    r.send(f'import "{module}" as mod\r')
    r.expect(r">>> ", "import")
    r.send("mod.help\t")
    r.expect(r"mod\.help[\s\S]*er_fn", "completing a module member")
    r.send("(1)\r")
    r.expect(r"\r\n2\r\n>>> ", "the completed member runs")
    r.send(f":load {module}\r")
    r.expect(r">>> ", ":load")
    r.send("helper_fn(loaded_value)\r")
    r.expect(r"\r\n41\r\n>>> ", "names from :load")

    # :graph writes a picture and prints its path; :plot draws a metrics log.
    # (A fresh session first: Graphviz takes minutes over the 8000-node
    # chain above.)
    r.send(":reset\r")
    r.expect(r"a fresh graph and session\r\n>>> ", ":reset")
    r.send("input x: f32[?, 3]\r")
    r.expect(r">>> ", "an input")
    r.send('scope "layer" { let h = relu(x @ ones([3, 2])) }\r')
    r.expect(r">>> ", "a scoped layer")
    r.send(":graph list\r")
    r.expect(r"nodes", ":graph list")
    r.expect(r">>> ", "prompt after :graph list")
    r.send(":graph dot\r")
    r.expect(r"digraph runnel", ":graph dot")
    r.expect(r">>> ", "prompt after :graph dot")
    metrics = os.path.join(tmp, "m.jsonl")
    with open(metrics, "w") as f:
        f.write('{"report": 1, "step": 0, "loss": 2.0}\n'
                '{"report": 2, "step": 1, "loss": 1.0}\n')
    for command, picture in ((f":plot {metrics}", "curves.svg"),
                             (":graph", "graph.svg")):
        r.send(command + "\r")
        m = r.expect(r"wrote (\S+)\r\n", command)
        path = m.group(1).decode()
        if not path.endswith(picture):
            fail(f"{command} wrote {path}, want a {picture}")
        with open(path) as f:
            if "<svg" not in f.read():
                fail(f"{command}: {path} is not an SVG")
        r.expect(r">>> ", f"prompt after {command}")

    # Ctrl-D on an empty line exits with status 0. (The prompt is written
    # just before libedit puts the terminal in raw mode.)
    r.wait_raw("Ctrl-D")
    r.send("\x04")
    status = r.wait_exit("Ctrl-D")
    if status != 0:
        fail(f"Ctrl-D: exit status {status}")

    with open(history) as f:
        saved = f.read()
    if "twice" not in saved:
        fail(f"history not saved in $RUNNEL_HISTORY:\n{saved}")

    # A second session sees the history (Up arrow recalls the last entry).
    r = Repl(history)
    r.expect(r">>> ", "second session prompt")
    r.wait_raw("Up arrow")
    r.send("\x1b[A")
    r.expect(r":graph", "history recalled in a second session")
    r.send("\r")
    r.expect(r"wrote \S*graph\.svg", "the recalled entry runs")
    r.expect(r">>> ", "prompt after the recalled entry")
    r.send("\x1b[A\x1b[A")
    r.expect(r"plot \S*m\.jsonl", "going further back in history")
    r.send("\x03")
    r.expect(r"\^C\r\n>>> ", "abandoning the recalled entry")
    r.send("1 + 1\r")
    r.expect(r"\r\n2\r\n>>> ", "the second session evaluates")
    r.send(":reset\r")
    r.expect(r">>> ", "prompt after :reset")
    r.send(":quit\r")
    status = r.wait_exit(":quit")
    if status != 0:
        fail(f":quit: exit status {status}")
    shutil.rmtree(tmp)
    print("PASS")


if __name__ == "__main__":
    main()

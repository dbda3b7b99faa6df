"""`runnel lsp` latency: hover on a 5,000-line script right after a change.

Generates (bench/gen_check_scripts.py) a 5,000-line script that builds a
large graph, opens it in `runnel lsp` over stdio as an editor does, then,
each round, sends one incremental change (a character typed into the last
line) and at once a hover on a tensor near the end, and times from sending
the change to receiving the hover. The server answers it from the newest
finished check, mapped through the edit, while it checks the new text in
the background; the time until that check is done (the change's
diagnostics published) is measured too.
Also: the first open (parse + check + diagnostics) and a hover with no
change in between. Median and 90th percentile of the rounds; aim: hover
after a change under 50 ms. No peer: neither TensorFlow nor PyTorch has a
language server that knows shapes; Python's servers do not run the model.

  python3 bench/lsp_bench.py BUILD_DIR [--lines 5000] [--rounds 30]
"""
import json
import os
import pathlib
import statistics
import subprocess
import sys
import tempfile
import time

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import peer  # noqa: E402  (results recorded as every benchmark's)

build = sys.argv[1] if len(sys.argv) > 1 and not sys.argv[1].startswith("-") else "build-release"
lines, rounds = 5000, 30
args = sys.argv[2:]
for i, a in enumerate(args):
    if a == "--lines":
        lines = int(args[i + 1])
    if a == "--rounds":
        rounds = int(args[i + 1])
runnel = os.path.join(build, "runnel")
here = pathlib.Path(__file__).resolve().parent
tmp = pathlib.Path(tempfile.mkdtemp())
subprocess.run([sys.executable, str(here / "gen_check_scripts.py"), str(tmp / "big"),
                str(lines)], check=True)
path = tmp / "big.rnl"
text = path.read_text()
uri = path.as_uri()
nlines = text.count("\n")

proc = subprocess.Popen([runnel, "lsp"], stdin=subprocess.PIPE, stdout=subprocess.PIPE)
next_id = 0


def send(obj):
    body = json.dumps(obj).encode()
    proc.stdin.write(b"Content-Length: %d\r\n\r\n" % len(body) + body)
    proc.stdin.flush()


def receive():
    length = None
    while True:
        line = proc.stdout.readline()
        if line in (b"\r\n", b"\n"):
            break
        if line.lower().startswith(b"content-length:"):
            length = int(line.split(b":")[1])
    return json.loads(proc.stdout.read(length))


def request(method, params):
    global next_id
    next_id += 1
    send({"jsonrpc": "2.0", "id": next_id, "method": method, "params": params})
    while True:
        m = receive()
        if m.get("id") == next_id and "method" not in m:
            return m


def wait_for(method):
    while True:
        m = receive()
        if m.get("method") == method:
            return m


request("initialize", {"capabilities": {}})
send({"jsonrpc": "2.0", "method": "initialized", "params": {}})
t0 = time.perf_counter()
send({"jsonrpc": "2.0", "method": "textDocument/didOpen",
      "params": {"textDocument": {"uri": uri, "languageId": "runnel", "version": 1,
                                  "text": text}}})
diags = wait_for("textDocument/publishDiagnostics")
open_s = time.perf_counter() - t0
assert diags["params"]["diagnostics"] == [], diags["params"]["diagnostics"][:2]

# A tensor near the end: the last `let` name.
all_lines = text.splitlines()
target = max(i for i, l in enumerate(all_lines) if l.startswith("let "))
hover_pos = {"line": target, "character": 4}
last = len(all_lines) - 1
end_char = len(all_lines[last])
doc = {"uri": uri}

after_change, still = [], []
for r in range(rounds):
    # Type a space at the end of the last line, or take it back.
    if r % 2 == 0:
        change = {"range": {"start": {"line": last, "character": end_char},
                            "end": {"line": last, "character": end_char}}, "text": " "}
    else:
        change = {"range": {"start": {"line": last, "character": end_char},
                            "end": {"line": last, "character": end_char + 1}}, "text": ""}
    t0 = time.perf_counter()
    send({"jsonrpc": "2.0", "method": "textDocument/didChange",
          "params": {"textDocument": {"uri": uri, "version": r + 2},
                     "contentChanges": [change]}})
    h = request("textDocument/hover", {"textDocument": doc, "position": hover_pos})
    after_change.append(time.perf_counter() - t0)
    value = h["result"]["contents"]["value"]
    assert "f32[" in value, value
    t0 = time.perf_counter()
    request("textDocument/hover", {"textDocument": doc, "position": hover_pos})
    still.append(time.perf_counter() - t0)

# How long until a change is checked: its diagnostics published.
checked = []
for r in range(5):
    version = 1000 + r
    change = {"range": {"start": {"line": last, "character": end_char},
                        "end": {"line": last, "character": end_char + (r % 2)}},
              "text": " " if r % 2 == 0 else ""}
    t0 = time.perf_counter()
    send({"jsonrpc": "2.0", "method": "textDocument/didChange",
          "params": {"textDocument": {"uri": uri, "version": version},
                     "contentChanges": [change]}})
    while wait_for("textDocument/publishDiagnostics")["params"].get("version") != version:
        pass
    checked.append(time.perf_counter() - t0)

request("shutdown", None)
send({"jsonrpc": "2.0", "method": "exit"})
proc.wait(timeout=30)


def p90(xs):
    return sorted(xs)[int(0.9 * (len(xs) - 1))]


med = statistics.median(after_change)
print(f"== lsp: hover on a {nlines}-line script ({rounds} rounds)")
print(f"  first open (parse + check + diagnostics): {peer.fmt_time(open_s)}")
print(f"  hover right after a change: median {peer.fmt_time(med)}, "
      f"p90 {peer.fmt_time(p90(after_change))}")
print(f"  hover, nothing changed:     median {peer.fmt_time(statistics.median(still))}")
print(f"  a change checked (its diagnostics published): median "
      f"{peer.fmt_time(statistics.median(checked))}")
print(f"  hover text: {value.splitlines()[1]}")
print(f"  aim: hover after a change under 50 ms: {'met' if med < 0.05 else 'NOT met'}")
peer.record("lsp", f"hover after a change, {nlines} lines", med, {}, None,
            unit="hover", note="no peer: none has a shape-aware language server")

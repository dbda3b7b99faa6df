"""What a placed run shows (docs/devices.md): `runnel run --trace` writes a
Chrome/Perfetto trace with a track per device and one for the host, and
`runnel graph --placed` colours the graph by device and marks the edges
that cross devices.

    python3 tests/placed/outputs_test.py RUNNEL
"""
import json
import os
import subprocess
import sys
import tempfile

HERE = os.path.dirname(os.path.abspath(__file__))
SCRIPT = os.path.join(HERE, "devices.rnl")


def check_trace(runnel, tmp):
    path = os.path.join(tmp, "trace.json")
    subprocess.run([runnel, "run", SCRIPT, "--devices", "cpu=2", "--trace",
                    path, "--trace-runs", "3..5"], check=True)
    with open(path, encoding="utf-8") as f:
        trace = json.load(f)
    events = trace["traceEvents"]
    tracks = {e["tid"]: e["args"]["name"] for e in events
              if e.get("name") == "thread_name"}
    assert sorted(tracks.values()) == ["/cpu:0", "/cpu:1", "host"], tracks
    spans = [e for e in events if e["ph"] == "X"]
    host = [e for e in spans if tracks[e["tid"]] == "host"]
    assert [e["name"] for e in host] == ["run 3", "run 4", "run 5"], host
    assert all(e["args"]["detail"].startswith("devices.rnl:") or
               "devices.rnl:" in e["args"]["detail"] for e in host), host
    for device in ("/cpu:0", "/cpu:1"):
        kernels = [e for e in spans if tracks[e["tid"]] == device]
        assert kernels, f"no kernel events on {device}"
        assert all(e["dur"] >= 0 for e in kernels)
        # Every kernel ran inside one of the traced runs.
        for k in kernels:
            assert any(h["ts"] <= k["ts"] and k["ts"] + k["dur"] <=
                       h["ts"] + h["dur"] + 1 for h in host), k
    print(f"trace: {len(spans)} events on {len(tracks)} tracks")


def check_placed_graph(runnel, tmp):
    out = subprocess.run([runnel, "graph", SCRIPT, "--devices", "cpu=2",
                          "--placed", "-o", "-"], check=True,
                         stdout=subprocess.PIPE, text=True).stdout
    assert "on /cpu:0" in out and "on /cpu:1" in out, out[:2000]
    assert out.count('xlabel="send/recv"') >= 2, "no cut edges drawn"
    print(f"graph --placed: {out.count('send/recv')} cut edges")


def main():
    runnel = os.path.abspath(sys.argv[1])
    with tempfile.TemporaryDirectory() as tmp:
        check_trace(runnel, tmp)
        check_placed_graph(runnel, tmp)


if __name__ == "__main__":
    main()

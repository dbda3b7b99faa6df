"""Every op the examples and benchmarks use has a GPU kernel (docs/gpu.md,
Kernels), but for the ones that belong on the host. Needs no GPU, only a
build with CUDA (`runnel ops --json` lists each op's GPU kernel dtypes);
without CUDA it exits 77 (ctest's skip), saying so.

Each script's graph is `runnel graph FILE --depth 99 --soft-placement` (the
graph `check` builds, every scope opened; DOT labels end with the op), so
a new op in an example, or a GPU kernel removed, fails this test with the
op and the scripts that use it.

    examples_covered.py RUNNEL SCRIPT...
"""
import json
import re
import subprocess
import sys

# Ops that run on the host whatever the device: the feeds, the queues and
# their readers, and the shape arithmetic the kernels read on the host.
HOST = {"placeholder", "placeholder_with_default", "queue", "enqueue_many",
        "dequeue_many", "queue_close", "read_idx", "range", "shape_of",
        "size"}

LABEL = re.compile(r'label="[^"]*\\n([a-z_0-9]+)"')


def main(argv):
    runnel, scripts = argv[0], argv[1:]
    ops = json.loads(subprocess.run([runnel, "ops", "--json"], check=True,
                                    stdout=subprocess.PIPE,
                                    text=True).stdout)["ops"]
    on_gpu = {op["name"] for op in ops if op.get("gpu_kernel_dtypes")}
    if "matmul" not in on_gpu:
        print("no GPU kernels: this build has no CUDA (RUNNEL_CUDA is off)")
        return 77
    users = {}
    for script in scripts:
        r = subprocess.run([runnel, "graph", script, "--depth", "99",
                            "--soft-placement"], stdout=subprocess.PIPE,
                           stderr=subprocess.PIPE, text=True, check=False)
        if r.returncode != 0:
            sys.exit(f"runnel graph {script} failed:\n{r.stderr}")
        found = set(LABEL.findall(r.stdout))
        if not found:
            sys.exit(f"runnel graph {script}: no ops found in its DOT")
        for op in found:
            users.setdefault(op, []).append(script)
    missing = sorted(op for op in users if op not in on_gpu | HOST)
    print(f"{len(users)} ops in {len(scripts)} scripts; "
          f"{len(missing)} without a GPU kernel")
    for op in missing:
        print(f"  {op}: {', '.join(users[op])}")
    return 1 if missing else 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))

"""TensorFlow's side of bench/cluster_transfer.py, on loopback: two
tf.distribute.Server processes, a parameter server holding an MB-megabyte
f32 variable (/job:ps/task:0) and a worker (this process, joined to the
cluster with tf.config.experimental_connect_to_cluster) whose tf.function
reads the variable and sums it on the worker, so each call moves the
variable over gRPC.

    python tf_transfer_peer.py MB STEPS [--intra N] [--inter M]

Prints RESULT fetch <seconds per fetch-and-sum>, then RESULT sum <seconds
per sum of a worker-local variable of that size>. `--ps SPEC` runs the
parameter server (started by the worker, ended when the worker ends).
"""
import json
import os
import subprocess
import sys
import time

os.environ.setdefault("TF_CPP_MIN_LOG_LEVEL", "2")
sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import peer  # noqa: E402  pylint: disable=wrong-import-position
from cluster_peer import free_port  # noqa: E402  pylint: disable=wrong-import-position


def per_call(f, steps):
    """Seconds per call of f over `steps` calls, after 3 warm-up calls."""
    for _ in range(3):
        f().numpy()
    t = time.perf_counter()
    for _ in range(steps):
        f().numpy()
    return (time.perf_counter() - t) / steps


def worker(argv):
    mb, steps = int(argv[0]), int(argv[1])
    spec = {"ps": [f"127.0.0.1:{free_port()}"],
            "worker": [f"127.0.0.1:{free_port()}"]}
    ps = subprocess.Popen([sys.executable, os.path.abspath(__file__),
                           "--ps", json.dumps(spec)] + argv[2:])
    try:
        tf = peer.import_tf(argv, 1)
        tf.config.experimental_connect_to_cluster(
            tf.train.ClusterSpec(spec), job_name="worker", task_index=0)
        n = mb * 262144
        with tf.device("/job:ps/task:0"):
            remote = tf.Variable(tf.zeros([n]))
        with tf.device("/job:worker/task:0"):
            local = tf.Variable(tf.zeros([n]))

        def summed(var):
            @tf.function
            def f():
                with tf.device("/job:worker/task:0"):
                    return tf.reduce_sum(var)
            return f
        print(f"RESULT fetch {per_call(summed(remote), steps):.9f}")
        print(f"RESULT sum {per_call(summed(local), steps):.9f}", flush=True)
    finally:
        ps.kill()
        ps.wait()


def ps_main(argv):
    tf = peer.import_tf(argv, 1)
    spec = json.loads(argv[argv.index("--ps") + 1])
    tf.distribute.Server(tf.train.ClusterSpec(spec), job_name="ps",
                         task_index=0).join()


if __name__ == "__main__":
    if "--ps" in sys.argv:
        ps_main(sys.argv[1:])
    else:
        worker(sys.argv[1:])

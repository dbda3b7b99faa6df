"""TensorFlow's side of bench/cluster_bench.py, on loopback; the processes
are this script again (--role), the servers killed at the end:

    tf_cluster_peer.py --only null1,async2,sync2,... --threads N
        --intra I --inter J [--inner K] [--collective RING|AUTO] [--trial]
        null<W>: W client processes each connect to a ps task
            (tf.distribute.Server; tf.config.experimental_connect_to_cluster)
            and call a tf.function whose assign_add runs on a variable on
            /job:ps/task:0, TensorFlow's own cross-task call; RESULT
            null<W> <median s per step of the clients>. The clients set
            up one after another (each connects once the one before has
            warmed up), then time together: on a slow machine, clients
            connecting at once made the ps drop every connection.
        async<W>: ParameterServerStrategy: one ps and W worker servers, a
            ClusterCoordinator in this process scheduling the Fashion MLP's
            Adam step (784-256-128-10, batch 128 from a per-worker dataset),
            K steps per scheduled function; RESULT async<W> <s per worker
            step, all workers together>.
        sync<W>: MultiWorkerMirroredStrategy, W worker processes (TF_CONFIG),
            a tf.function running K steps of strategy.run each, the
            collective implementation RING or AUTO; RESULT sync<W> <s per
            worker step, all workers together>.
        --trial runs a fifth of the steps (peer.tune's trials).

Servers get at least 2 inter-op threads: with 1, a ParameterServerStrategy
worker deadlocks (its step waits on the dataset iterator's op).
"""
import json
import os
import socket
import statistics
import subprocess
import sys
import tempfile
import time

os.environ.setdefault("TF_CPP_MIN_LOG_LEVEL", "2")
HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, HERE)
import cluster_peer  # noqa: E402  pylint: disable=wrong-import-position
import peer  # noqa: E402  pylint: disable=wrong-import-position

TIMEOUT = 600  # seconds any process of a workload may run


def threading(tf, argv):
    tf.config.threading.set_intra_op_parallelism_threads(
        peer.int_arg(argv, "--intra", peer.threads_arg(argv, 1)))
    tf.config.threading.set_inter_op_parallelism_threads(
        peer.int_arg(argv, "--inter", 1))


def mlp(tf):
    """The Fashion MLP and its Adam optimizer, built (in the strategy's
    scope when called inside one)."""
    layers = tf.keras.layers
    model = tf.keras.Sequential([
        tf.keras.Input((784,)), layers.Dense(256, activation="relu"),
        layers.Dense(128, activation="relu"), layers.Dense(10)])
    opt = tf.keras.optimizers.Adam(1e-3)
    opt.build(model.trainable_variables)
    return model, opt


def batch(tf):
    return (tf.random.uniform((128, 784), seed=1),
            tf.random.uniform((128,), 0, 10, tf.int32, seed=2))


def train_step(tf, model, opt, scale):
    """One replica's Adam step on (x, y); the loss summed over the batch
    and divided by `scale` (the global batch)."""
    loss_fn = tf.keras.losses.SparseCategoricalCrossentropy(
        from_logits=True, reduction="sum")

    def step(x, y):
        with tf.GradientTape() as tape:
            loss = loss_fn(y, model(x, training=True)) / scale
        grads = tape.gradient(loss, model.trainable_variables)
        opt.apply_gradients(zip(grads, model.trainable_variables))
        return loss
    return step


def spawn(role, argv, spec, task, env=None):
    return subprocess.Popen(
        [sys.executable, os.path.abspath(__file__), "--role", role, "--spec",
         json.dumps(spec), "--task", str(task)] + argv,
        stdout=subprocess.PIPE, text=True, env=env)


def gather(procs, servers=()):
    """The values `procs` print on RESULT lines once all have exited; then
    kills `servers` (which never exit by themselves)."""
    try:
        out = []
        for p in procs:
            text, _ = p.communicate(timeout=TIMEOUT)
            if p.returncode != 0:
                gone = [s.returncode for s in servers if s.poll() is not None]
                raise RuntimeError(
                    f"a task exited {p.returncode}" +
                    (f" (servers had exited: {gone})" if gone else ""))
            out += [float(line.split()[2]) for line in text.splitlines()
                    if line.startswith("RESULT ")]
        return out
    finally:
        for p in list(procs) + list(servers):
            if p.poll() is None:
                p.kill()
            p.wait()


def addresses(n):
    return [f"127.0.0.1:{cluster_peer.free_port()}" for _ in range(n)]


def await_listening(spec, jobs, seconds=300):
    """Waits until every task of `jobs` in `spec` accepts connections: a
    client that connects first fails (\"Connection refused\") while a
    server still imports TensorFlow, which takes seconds on a busy
    machine."""
    deadline = time.monotonic() + seconds
    for job in jobs:
        for address in spec.get(job, []):
            host, port = address.rsplit(":", 1)
            while True:
                try:
                    socket.create_connection((host, int(port)), 1).close()
                    break
                except OSError:
                    if time.monotonic() > deadline:
                        raise RuntimeError(f"{address} never listened")
                    time.sleep(0.05)


def await_file(path, seconds=300):
    """Waits until `path` exists (another process of the workload makes
    it)."""
    deadline = time.monotonic() + seconds
    while not os.path.exists(path):
        if time.monotonic() > deadline:
            raise RuntimeError(f"{path} never appeared")
        time.sleep(0.02)


# ---- the processes ----------------------------------------------------------

def server_role(argv, spec, job, task):
    """A ps or ParameterServerStrategy worker task, serving until killed."""
    import tensorflow as tf  # pylint: disable=import-outside-toplevel
    config = tf.compat.v1.ConfigProto(
        intra_op_parallelism_threads=peer.int_arg(argv, "--intra", 1),
        inter_op_parallelism_threads=max(2, peer.int_arg(argv, "--inter", 1)))
    tf.distribute.Server(tf.train.ClusterSpec(spec), job, task,
                         protocol="grpc", config=config).join()


def null_role(argv, spec, steps):
    """A client timing assign_add on the ps's variable. Each client names
    itself (job clientN): under the default name, /job:localhost/task:0,
    two clients' contexts on the ps crossed (one's variable handle met
    the other's, "Cannot update variable with shape [0]"), or the ps
    dialled the other client's address ("Connection refused")."""
    import tensorflow as tf  # pylint: disable=import-outside-toplevel
    threading(tf, argv)
    await_listening(spec, ["ps"])
    task = peer.int_arg(argv, "--task", 0)
    sync = argv[argv.index("--sync") + 1]
    if task > 0:
        await_file(os.path.join(sync, f"ready{task - 1}"))
    tf.config.experimental_connect_to_cluster(
        tf.train.ClusterSpec(spec), job_name=f"client{task}")
    with tf.device("/job:ps/task:0"):
        counter = tf.Variable(0.0)

    @tf.function
    def bump():
        return counter.assign_add(1.0)
    for _ in range(10):
        bump().numpy()
    with open(os.path.join(sync, f"ready{task}"), "w", encoding="utf-8"):
        pass
    for i in range(peer.int_arg(argv, "--clients", 1)):
        await_file(os.path.join(sync, f"ready{i}"))
    t = time.perf_counter()
    for _ in range(steps):
        bump().numpy()
    cluster_peer.result("null", (time.perf_counter() - t) / steps)


def mwms_role(argv, steps):
    """A MultiWorkerMirroredStrategy worker (its task from TF_CONFIG),
    printing its steps per second."""
    import tensorflow as tf  # pylint: disable=import-outside-toplevel
    threading(tf, argv)
    comm = tf.distribute.experimental.CommunicationImplementation
    collective = argv[argv.index("--collective") + 1] \
        if "--collective" in argv else "RING"
    strategy = tf.distribute.MultiWorkerMirroredStrategy(
        communication_options=tf.distribute.experimental.CommunicationOptions(
            implementation=getattr(comm, collective)))
    inner = peer.int_arg(argv, "--inner", 1)
    with strategy.scope():
        model, opt = mlp(tf)
    x, y = batch(tf)
    step = train_step(tf, model, opt, 128 * strategy.num_replicas_in_sync)

    @tf.function
    def steps_fn():
        loss = 0.0
        for _ in tf.range(inner):
            loss = strategy.run(step, args=(x, y))
        return strategy.reduce("SUM", loss, axis=None)
    calls = max(1, steps // inner)
    for _ in range(max(1, 10 // inner)):
        steps_fn().numpy()
    t = time.perf_counter()
    for _ in range(calls):
        steps_fn()
    steps_fn().numpy()  # waits for the last call
    cluster_peer.result("rate", (calls + 1) * inner / (time.perf_counter() - t))


# ---- the workloads ------------------------------------------------------------

def tf_run(kind, workers, steps, argv):
    """One workload in TensorFlow: seconds per step (null) or per worker
    step."""
    args = argv + ["--steps", str(steps)]
    if kind == "null":
        spec = {"ps": addresses(1)}
        ps = spawn("ps", args, spec, 0)
        with tempfile.TemporaryDirectory() as sync:
            clients = [spawn("null", args + ["--sync", sync, "--clients",
                                             str(workers)], spec, i)
                       for i in range(workers)]
            return statistics.median(gather(clients, [ps]))
    if kind == "sync":
        spec = {"worker": addresses(workers)}
        procs = [spawn("mwms", args, spec, i, env=dict(
            os.environ, TF_CONFIG=json.dumps(
                {"cluster": spec, "task": {"type": "worker", "index": i}})))
                 for i in range(workers)]
        return cluster_peer.per_worker_step(gather(procs))
    # (--ps N: the variables round-robin over N ps tasks.)
    spec = {"ps": addresses(peer.int_arg(argv, "--ps", 1)),
            "worker": addresses(workers), "chief": addresses(1)}
    servers = [spawn(job, args, spec, i) for job in ("ps", "worker")
               for i in range(len(spec[job]))]
    try:
        return ps_strategy(argv, spec, workers, steps)
    finally:
        gather([], servers)


def ps_strategy(argv, spec, workers, steps):
    """ParameterServerStrategy's seconds per worker step, coordinated from
    this process (the chief)."""
    import tensorflow as tf  # pylint: disable=import-outside-toplevel
    threading(tf, argv)
    await_listening(spec, ["ps", "worker"])
    resolver = tf.distribute.cluster_resolver.SimpleClusterResolver(
        tf.train.ClusterSpec(spec), task_type="chief", task_id=0,
        rpc_layer="grpc")
    strategy = tf.distribute.experimental.ParameterServerStrategy(resolver)
    coordinator = tf.distribute.experimental.coordinator.ClusterCoordinator(
        strategy)
    inner = peer.int_arg(argv, "--inner", 1)
    with strategy.scope():
        model, opt = mlp(tf)
    data = iter(coordinator.create_per_worker_dataset(
        lambda: tf.data.Dataset.from_tensors(batch(tf)).repeat()))
    step = train_step(tf, model, opt, 128)

    @tf.function
    def steps_fn(it):
        loss = 0.0
        for _ in tf.range(inner):
            loss = strategy.run(step, args=next(it))
        return loss
    calls = max(1, steps // inner) * workers
    for _ in range(max(1, 10 // inner) * workers):
        coordinator.schedule(steps_fn, args=(data,))
    coordinator.join()
    t = time.perf_counter()
    for _ in range(calls):
        coordinator.schedule(steps_fn, args=(data,))
    coordinator.join()
    return (time.perf_counter() - t) / (calls * inner)


def main(argv):
    if "--role" not in argv:
        cluster_peer.peer_main(argv, tf_run)
        return
    role = argv[argv.index("--role") + 1]
    spec = json.loads(argv[argv.index("--spec") + 1])
    steps = peer.int_arg(argv, "--steps", 1)
    if role == "null":
        null_role(argv, spec, steps)
    elif role == "mwms":
        mwms_role(argv, steps)
    else:
        server_role(argv, spec, role, peer.int_arg(argv, "--task", 0))


if __name__ == "__main__":
    main(sys.argv[1:])

"""Distributed MXNet (Gluon) training on scikit-learn's bundled digits, one script for every MXJob role.

The controller injects the ``DMLC_*`` variables (role, scheduler address, server and worker counts) and MXNet's
parameter-server layer (ps-lite) reads them. Scheduler and Server pods need no code of their own: when
``DMLC_ROLE`` is ``scheduler`` or ``server``, ``import mxnet`` itself starts that ps-lite node, serves until every
worker has shut its kvstore down, and then exits the process with status 0 (``mxnet/kvstore/kvstore_server.py``),
whatever the workers' own exit statuses turn out to be. Only Workers run the training below. If any process dies
mid-job, the others block forever: ps-lite never gives up on a missing peer.

Environment:
  EPOCHS        passes over each worker's shard (default 10; tests use fewer)
  MIN_ACCURACY  final test accuracy below which a worker exits 1 (default 0.9)
  KVSTORE       kvstore type (default ``dist_sync``; ``local`` runs a single process without a scheduler)

Two switches show the controller's restart policies on a real job (the project's tests use them):
  FAIL_WORKER_ID      the worker with this DMLC_WORKER_ID exits 1 at start: a permanent failure fails the job
  CRASH_ONCE_MARKER   a file path: worker 0 SIGKILLs itself (exit 137, retryable under ``ExitCode``) if the file
                      does not exist yet, after creating it; its replacement finds the file and trains
Both act before MXNet is imported (so before the kvstore exists: no other process has seen the worker yet).
"""

from __future__ import annotations

import os
import signal
import sys
import traceback


def inject_faults() -> None:
    worker_id = os.environ.get("DMLC_WORKER_ID", "")
    if os.environ.get("FAIL_WORKER_ID") == worker_id:
        print(f"worker {worker_id} exits 1 (FAIL_WORKER_ID)", flush=True)
        sys.exit(1)
    marker = os.environ.get("CRASH_ONCE_MARKER")
    if marker and worker_id == "0" and not os.path.exists(marker):
        with open(marker, "w") as f:
            f.write("crashed once\n")
        print("worker 0 kills itself with SIGKILL (CRASH_ONCE_MARKER)", flush=True)
        os.kill(os.getpid(), signal.SIGKILL)


if __name__ == "__main__":
    inject_faults()   # before MXNet's import, seconds of CPU a worker that fails at start has no use for

# Must stay the first third-party import: on a Scheduler or Server this import never returns, so nothing after it
# (scikit-learn included) is loaded there.
import mxnet as mx  # noqa: E402
import numpy as np  # noqa: E402
from mxnet import autograd, gluon  # noqa: E402
from sklearn.datasets import load_digits  # noqa: E402

BATCH_SIZE = 32
SEED = 42


def load_data() -> tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray]:
    """The same train/test split on every worker: the dataset ships with scikit-learn and the shuffle is seeded."""
    digits = load_digits()
    features = (digits.data / 16.0).astype(np.float32)  # pixel values are 0..16
    labels = digits.target.astype(np.float32)
    order = np.random.default_rng(SEED).permutation(len(labels))
    n_test = len(labels) // 4
    test, train = order[:n_test], order[n_test:]
    return features[train], labels[train], features[test], labels[test]


def shard(features: np.ndarray, labels: np.ndarray, rank: int, num_workers: int) -> tuple[np.ndarray, np.ndarray]:
    """Equal-sized contiguous shards. dist_sync waits for a push from every worker at each step, so all workers must
    take exactly the same number of steps: a worker with one batch more would block forever."""
    size = len(labels) // num_workers
    return features[rank * size : (rank + 1) * size], labels[rank * size : (rank + 1) * size]


def accuracy(net: gluon.Block, features: mx.nd.NDArray, labels: np.ndarray) -> float:
    predicted = net(features).argmax(axis=1).asnumpy()
    return float((predicted == labels).mean())


def train(kvstore: str, epochs: int) -> float:
    """Train and return the final test accuracy. The kvstore lives only inside this function, so it is freed (and
    ps-lite shut down cleanly: a final barrier with the other workers, the Scheduler and the Servers) when it
    returns, before the interpreter starts tearing itself down."""
    kv = mx.kv.create(kvstore)
    print(f"worker rank {kv.rank} of {kv.num_workers} ({kvstore})", flush=True)

    x_train, y_train, x_test, y_test = load_data()
    x_shard, y_shard = shard(x_train, y_train, kv.rank, kv.num_workers)
    x_test_nd = mx.nd.array(x_test)

    # Seeded so every worker builds the same initial weights; the Trainer pulls rank 0's values from the servers anyway.
    mx.random.seed(SEED)
    net = gluon.nn.HybridSequential()
    net.add(gluon.nn.Dense(64, activation="relu", in_units=64), gluon.nn.Dense(10, in_units=64))
    net.initialize(mx.init.Xavier())
    net.hybridize()
    # With a dist kvstore the servers apply the updates (update_on_kvstore) to the sum of the workers' gradients.
    trainer = gluon.Trainer(net.collect_params(), "sgd", {"learning_rate": 0.1, "momentum": 0.9}, kvstore=kv)
    loss_fn = gluon.loss.SoftmaxCrossEntropyLoss()

    rng = np.random.default_rng(SEED + kv.rank)
    steps = len(y_shard) // BATCH_SIZE  # whole batches only: a smaller last batch would change the servers' scaling
    final = 0.0
    for epoch in range(1, epochs + 1):
        order = rng.permutation(len(y_shard))
        for step in range(steps):
            batch = order[step * BATCH_SIZE : (step + 1) * BATCH_SIZE]
            data, label = mx.nd.array(x_shard[batch]), mx.nd.array(y_shard[batch])
            with autograd.record():
                loss = loss_fn(net(data), label)
            loss.backward()
            trainer.step(BATCH_SIZE)
        final = accuracy(net, x_test_nd, y_test)
        print(f"epoch {epoch} test-accuracy {final:.3f}", flush=True)
    return final


def main() -> int:
    epochs = int(os.environ.get("EPOCHS", "10"))
    min_accuracy = float(os.environ.get("MIN_ACCURACY", "0.9"))
    final = train(os.environ.get("KVSTORE", "dist_sync"), epochs)
    print(f"final test accuracy {final:.3f} after {epochs} epochs", flush=True)
    if final < min_accuracy:
        print(f"final test accuracy {final:.3f} is below {min_accuracy}", file=sys.stderr, flush=True)
        return 1
    return 0


if __name__ == "__main__":
    try:
        status = main()
    except BaseException:
        traceback.print_exc()
        sys.stdout.flush()
        sys.stderr.flush()
        # Not sys.exit: a normal exit frees the kvstore, whose final ps-lite barrier waits for the other workers, and
        # they are blocked waiting for this worker's next push. The process would hang instead of failing.
        os._exit(1)
    sys.exit(status)

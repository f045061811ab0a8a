"""The benchmarks' kubelet: every new pod is reported Running at once, as a kubelet would (the status
``tests/kubelet_sim.py`` writes), and the pods of jobs whose name starts with ``--finish-prefix`` Succeeded.

    python -m hack.bench.kubelet --kubeconfig F [--finish-prefix done-] [--threads 4]

Its own process, so its writes load the API server as a node's would, and never the controller's nor the driver's
interpreter. Runs until SIGTERM/SIGINT.
"""

from __future__ import annotations

import argparse
import logging
import signal
import sys
import threading
from typing import Any

from hack.bench.common import NAMESPACE, client_for
from mxjob_controller.core.child_writes import WritePool
from mxjob_controller.kube.timefmt import now_rfc3339
from mxjob_controller.runtime.client import PODS, ApiError
from mxjob_controller.runtime.informer import SharedInformer
from tests.kubelet_sim import finished_status, running_status

JOB_LABEL = "training.kubeflow.org/job-name"
log = logging.getLogger("bench-kubelet")


def main(argv: list[str]) -> int:
    parser = argparse.ArgumentParser(prog="python -m hack.bench.kubelet")
    parser.add_argument("--kubeconfig", required=True)
    parser.add_argument("--finish-prefix", default="done-")
    parser.add_argument("--threads", type=int, default=4)
    args = parser.parse_args(argv)
    logging.basicConfig(level=logging.INFO, format="%(asctime)s %(levelname)s %(threadName)s %(message)s")
    stop = threading.Event()
    for sig in (signal.SIGTERM, signal.SIGINT):
        signal.signal(sig, lambda *_: stop.set())
    client = client_for(args.kubeconfig, component="bench-kubelet")
    pool = WritePool("bench-kubelet-writes", args.threads).start()

    def report(pod: dict[str, Any]) -> None:
        meta = pod["metadata"]
        containers = (pod.get("spec") or {}).get("containers") or []
        done = ((meta.get("labels") or {}).get(JOB_LABEL) or "").startswith(args.finish_prefix)
        status = finished_status(containers, now_rfc3339()) if done else running_status(containers, now_rfc3339())
        try:
            client.patch(PODS, meta["name"], {"status": status}, meta["namespace"], subresource="status")
        except ApiError as e:   # deleted meanwhile: nothing to report
            log.info("pod %s: %s", meta["name"], e)

    def on_add(pod: dict[str, Any]) -> None:
        if ((pod.get("status") or {}).get("phase") or "Pending") == "Pending" and \
                not (pod.get("metadata") or {}).get("deletionTimestamp"):
            pool.submit(lambda: report(pod))

    informer = SharedInformer(client, PODS, namespace=NAMESPACE)
    informer.add_handler(on_add=on_add)
    informer.start()
    try:
        if not informer.wait_for_cache_sync(60):
            log.error("pod cache did not sync")
            return 1
        log.info("kubelet helper ready")
        while not stop.wait(1.0):
            pass
    finally:
        informer.stop(5)
        pool.stop(5)
        client.close()
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))

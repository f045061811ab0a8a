"""The embedded cluster's kubelet and scheduler share one pod informer (issue 48): the server serves one watch of
pods for both, both act on it (a pod is bound and then run), and the scheduler stopping leaves the kubelet's pods
flowing (only its owner, the cluster, stops the informer)."""

from __future__ import annotations

import pytest

from tests.local_support import local_cluster, script_pod
from tests.support import wait_for

pytestmark = pytest.mark.slow


PODS = "/api/v1/namespaces/default/pods"


def _pod_watchers(cluster) -> int:
    return sum(1 for w in cluster.server.store.watchers() if w.key.endswith("pods"))


def _phase(kube, name: str) -> str | None:
    reply = kube.get(f"{PODS}/{name}")
    return (reply.body.get("status") or {}).get("phase") if reply.ok else None


def test_the_kubelet_and_the_scheduler_share_one_pod_watch(tmp_path):
    with local_cluster(tmp_path) as (cluster, kube, _kubectl):
        assert cluster.pods is not None
        assert cluster.kubelet._pods is cluster.pods and cluster.scheduler._pods is cluster.pods
        wait_for(lambda: _pod_watchers(cluster) == 1, timeout=10, what="one pod watch open")
        assert kube.post(PODS, script_pod("shared", "import time; time.sleep(60)")).ok
        wait_for(lambda: _phase(kube, "shared") == "Running", timeout=30, what="the pod bound and Running")
        assert _pod_watchers(cluster) == 1


def test_the_scheduler_stopping_leaves_the_kubelet_its_pods(tmp_path):
    with local_cluster(tmp_path) as (cluster, kube, _kubectl):
        scheduler = cluster.scheduler
        assert scheduler is not None and scheduler.stop(5.0)
        cluster.scheduler = None
        pod = script_pod("placed", "import time; time.sleep(60)")
        pod["spec"]["nodeName"] = cluster.options.kubelet_options.node_name   # no scheduler needed
        assert kube.post(PODS, pod).ok
        wait_for(lambda: _phase(kube, "placed") == "Running", timeout=30, what="the kubelet ran the bound pod")
        assert _pod_watchers(cluster) == 1

"""pod_worker.py's pure rules: which new versions of a pod wake its worker's thread."""

from __future__ import annotations

import copy

from mxjob_controller.local.kubelet.pod_worker import _decides_differently

POD = {"apiVersion": "v1", "kind": "Pod",
       "metadata": {"name": "p", "namespace": "default", "uid": "u1", "resourceVersion": "10",
                    "labels": {"app": "a"}},
       "spec": {"nodeName": "local", "restartPolicy": "Never", "terminationGracePeriodSeconds": 30,
                "containers": [{"name": "main", "image": "python", "command": ["sleep", "1"]}]},
       "status": {"phase": "Pending"}}


def _changed(change) -> dict:
    pod = copy.deepcopy(POD)
    change(pod)
    return pod


def test_the_echo_of_a_status_write_does_not_wake_the_worker() -> None:
    echo = _changed(lambda p: (p["status"].update(phase="Running"), p["metadata"].update(resourceVersion="11")))
    assert not _decides_differently(POD, echo)


def test_labels_and_annotations_wait_for_the_next_start() -> None:
    relabelled = _changed(lambda p: p["metadata"].update(labels={"app": "b"}, annotations={"x": "y"}))
    assert not _decides_differently(POD, relabelled)


def test_a_deletion_or_its_grace_wakes_the_worker() -> None:
    deleted = _changed(lambda p: p["metadata"].update(deletionTimestamp="2026-12-04T00:00:00Z",
                                                       deletionGracePeriodSeconds=30))
    assert _decides_differently(POD, deleted)
    shorter = _changed(lambda p: p["metadata"].update(deletionTimestamp="2026-12-04T00:00:00Z",
                                                       deletionGracePeriodSeconds=0))
    assert _decides_differently(deleted, shorter)


def test_a_spec_change_wakes_the_worker() -> None:
    deadline = _changed(lambda p: p["spec"].update(activeDeadlineSeconds=5))
    assert _decides_differently(POD, deadline)

"""A pod's binding and status writes share what they leave of the stored pod, and never change a stored version.

The kubelet's status merge patches (``pods/NAME/status``) keep the stored spec (``PodStrategy.status_write_shares``:
shared with the patch's target and with the version stored), and a binding keeps the spec's containers and
volumes (``kinds/pods._bound_copy``); the store copies the shared parts' JSON from the bytes of the version they
replace (``storage/json_parts.encode_stored``). A 1,000-peer MXJob's pod carries 65 KB of ``MX_CONFIG`` there.
These tests hold that the versions share those parts, that the answers and every stored version are the bytes of
encoding them whole, and that a status write's spec changes are still dropped (and warned about) as before.
"""

from __future__ import annotations

import json

from mxjob_controller.local.apiserver.builtin import PODS as POD_TYPE
from mxjob_controller.local.apiserver.storage.watch import encode_json

PODS_KEY = POD_TYPE.storage_key
PODS = "/api/v1/namespaces/default/pods"
OKEY = ("default", "p")


def _pod() -> dict:
    config = json.dumps({"cluster": {"worker": [{"url": f"big-worker-{i}", "port": 9091} for i in range(200)]},
                         "task": {"type": "worker", "index": 0}}, separators=(",", ":"))
    return {"apiVersion": "v1", "kind": "Pod", "metadata": {"name": "p", "labels": {"a": "b"}},
            "spec": {"containers": [{"name": "c", "image": "img:1", "env": [{"name": "MX_CONFIG", "value": config}],
                                     "resources": {"requests": {"cpu": "1m", "memory": "1Mi"}}}],
                     "volumes": [{"name": "v", "emptyDir": {}}], "restartPolicy": "Never"}}


def _running(uid: str, i: int) -> dict:
    when = f"2026-12-03T10:00:0{i}Z"
    return {"metadata": {"uid": uid}, "status": {
        "phase": "Running", "conditions": [{"type": "Ready", "status": "True", "lastProbeTime": None,
                                            "lastTransitionTime": when}],
        "hostIP": "127.0.0.1", "podIP": "10.1.0.1", "startTime": when,
        "containerStatuses": [{"name": "c", "image": "img:1", "imageID": "", "ready": True, "started": True,
                               "restartCount": i, "state": {"running": {"startedAt": when}}, "lastState": {}}]}}


def test_bindings_and_status_patches_share_the_stored_spec_and_leave_every_stored_version_as_it_was(apiserver, kube):
    key = PODS_KEY
    created = kube.post(PODS, _pod())
    assert created.status == 201, created.body
    uid = created.body["metadata"]["uid"]
    versions = [apiserver.store.get(key, OKEY)]

    def stored() -> None:
        versions.append(apiserver.store.get(key, OKEY))

    bound = kube.post(f"{PODS}/p/binding", {"apiVersion": "v1", "kind": "Binding", "metadata": {"name": "p"},
                                            "target": {"kind": "Node", "name": "n1"}})
    assert bound.status == 201, bound.body
    stored()
    for i in range(3):
        reply = kube.request("PATCH", f"{PODS}/p/status", body=_running(uid, i),
                             content_type="application/merge-patch+json")
        assert reply.status == 200, reply.body
        assert reply.body["spec"] == versions[0].obj["spec"] | {"nodeName": "n1"}
        assert reply.body["status"]["containerStatuses"][0]["restartCount"] == i
        assert reply.body["status"]["qosClass"] == "Burstable"
        assert reply.body == json.loads(apiserver.store.get(key, OKEY).raw)
        stored()
    # A spec change and an unknown field in a status patch: warned about, the stored spec kept as it was.
    reply = kube.request("PATCH", f"{PODS}/p/status", content_type="application/merge-patch+json",
                         body={"spec": {"restartPolicy": "Always", "bogus": 1,
                                        "containers": [{"name": "c", "image": "other:2"}]},
                               "status": {"phase": "Running", "message": "m"}})
    assert reply.status == 200, reply.body
    assert reply.headers.get("warning") == '299 - "unknown field \\"spec.bogus\\""'
    assert reply.body["spec"] == versions[1].obj["spec"] and reply.body["status"]["message"] == "m"
    stored()
    reply = kube.request("PATCH", f"{PODS}/p/status", content_type="application/merge-patch+json",
                         body={"spec": {"bogus": 2}, "status": {"message": "n"}}, query={"fieldValidation": "Strict"})
    assert reply.status == 422 and "spec.bogus" in reply.body["message"], reply.body
    # The spec's own update (tolerations may be added) makes a new spec; the status writes after share it.
    tolerations = versions[-1].obj["spec"]["tolerations"] + [{"key": "k", "operator": "Exists"}]
    assert kube.patch(f"{PODS}/p", {"spec": {"tolerations": tolerations}}).status == 200
    stored()
    assert kube.request("PATCH", f"{PODS}/p/status", body=_running(uid, 5),
                        content_type="application/merge-patch+json").status == 200
    stored()
    assert kube.delete(f"{PODS}/p").status == 200   # bound: graceful, a version with deletionTimestamp
    stored()

    for entry in versions:
        assert encode_json(entry.obj) == entry.raw, entry.rv
    specs = [entry.obj["spec"] for entry in versions]
    assert specs[0].get("nodeName") is None and specs[1]["nodeName"] == "n1"
    assert specs[1] is not specs[0] and specs[1]["containers"] is specs[0]["containers"]
    assert specs[1]["volumes"] is specs[0]["volumes"]
    assert all(s is specs[1] for s in specs[2:6])     # one spec, until the main resource changed it
    assert specs[6] is not specs[1] and len(specs[6]["tolerations"]) == len(specs[1]["tolerations"]) + 1
    assert specs[7] is specs[6] and specs[8] is specs[6]
    assert [e.obj["status"]["containerStatuses"][0]["restartCount"] for e in versions[2:5]] == [0, 1, 2]
    assert versions[0].obj["status"] == {"phase": "Pending", "qosClass": "Burstable"}
    assert versions[-1].obj["metadata"]["deletionTimestamp"] and "deletionTimestamp" not in versions[-2].obj["metadata"]

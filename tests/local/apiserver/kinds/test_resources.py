"""Each kind the embedded server serves, through the official client: leases, events, pod logs, cluster-scoped
custom resources, categories."""

from tests.crds import widget_crd
from tests.support import pod

LEASES = "/apis/coordination.k8s.io/v1/namespaces/kube-system/leases"
CRDS = "/apis/apiextensions.k8s.io/v1/customresourcedefinitions"


def test_lease_lifecycle(kube):
    lease = {"apiVersion": "coordination.k8s.io/v1", "kind": "Lease", "metadata": {"name": "leader"},
             "spec": {"holderIdentity": "a", "leaseDurationSeconds": 15,
                      "acquireTime": "2026-01-01T00:00:00.000000Z", "renewTime": "2026-01-01T00:00:00.000000Z",
                      "leaseTransitions": 0}}
    created = kube.post(LEASES, lease)
    assert created.status == 201
    body = created.body
    body["spec"]["holderIdentity"] = "b"
    body["spec"]["leaseTransitions"] = 1
    assert kube.put(f"{LEASES}/leader", body).body["spec"]["holderIdentity"] == "b"
    stale = created.body
    stale["spec"]["holderIdentity"] = "c"
    assert kube.put(f"{LEASES}/leader", stale).status == 409  # the loser of an election race
    assert kube.delete(f"{LEASES}/leader").ok


def test_lease_durations_are_validated(kube):
    lease = {"metadata": {"name": "bad"}, "spec": {"leaseDurationSeconds": 0, "leaseTransitions": -1}}
    reply = kube.post(LEASES, lease)
    assert reply.status == 422
    assert [(c["field"], c["message"]) for c in reply.body["details"]["causes"]] == [
        ("spec.leaseDurationSeconds", "Invalid value: 0: must be greater than 0"),
        ("spec.leaseTransitions", "Invalid value: -1: must be greater than or equal to 0")]


def test_pod_log_without_a_node_is_empty(kube):
    """kube-apiserver has no node to ask for an unscheduled pod's log: it answers 200 with nothing."""
    kube.post("/api/v1/namespaces/default/pods", pod("p"))
    reply = kube.get("/api/v1/namespaces/default/pods/p/log")
    assert (reply.status, reply.body) == (200, None)
    assert kube.get("/api/v1/namespaces/default/pods/p/log", container="other").status == 400
    assert kube.get("/api/v1/namespaces/default/pods/ghost/log").status == 404


def test_cluster_scoped_custom_resources(kube):
    assert kube.post(CRDS, widget_crd(scope="Cluster")).status == 201
    w = {"apiVersion": "example.com/v1", "kind": "Widget", "metadata": {"name": "global"}, "spec": {"size": 1}}
    reply = kube.post("/apis/example.com/v1/widgets", w)
    assert reply.status == 201
    assert "namespace" not in reply.body["metadata"]
    assert kube.get("/apis/example.com/v1/widgets/global").ok
    assert kube.get("/apis/example.com/v1/namespaces/default/widgets/global").status == 404


def test_categories_make_kubectl_get_all_include_custom_resources(kubectl, kube):
    kube.post(CRDS, widget_crd())
    kube.post("/apis/example.com/v1/namespaces/default/widgets",
              {"apiVersion": "example.com/v1", "kind": "Widget", "metadata": {"name": "w"}, "spec": {"size": 1}})
    kube.post("/api/v1/namespaces/default/pods", pod("p"))
    names = kubectl.ok("get", "all", "-o", "name").split()
    assert "widget.example.com/w" in names
    assert "pod/p" in names


def test_events_are_stored_and_listed_by_involved_object(kubectl, kube):
    p = kube.post("/api/v1/namespaces/default/pods", pod("p")).body
    event = {"metadata": {"name": "p.1"}, "type": "Normal", "reason": "Scheduled", "message": "assigned",
             "count": 1, "source": {"component": "test"},
             "involvedObject": {"kind": "Pod", "name": "p", "namespace": "default", "uid": p["metadata"]["uid"],
                                "apiVersion": "v1"}}
    assert kube.post("/api/v1/namespaces/default/events", event).status == 201
    out = kubectl.ok("describe", "pod", "p")
    assert "Scheduled" in out and "assigned" in out

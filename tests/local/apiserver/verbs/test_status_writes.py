"""A custom resource's status writes share the stored spec between versions, and never change a stored one.

A status merge patch of a custom resource neither copies the stored object's parts other than metadata and status
into its patch target nor into the object it stores (``verbs/write._patched``, ``strategy._old_with``): the
status strategy keeps them as stored, and a stored object is never changed. These tests hold both: the versions
share their spec, and every version a status write left is, at the end, the bytes it was stored as.
"""

from __future__ import annotations

from mxjob_controller.local.apiserver.storage.watch import encode_json
from tests.crds import WIDGETS, widget, widget_crd

CRDS = "/apis/apiextensions.k8s.io/v1/customresourcedefinitions"
KEY, OKEY = "example.com/widgets", ("default", "w")


def _status(kube, body, **query):
    return kube.patch(f"{WIDGETS}/w/status", body, **query)


def test_status_patches_share_the_stored_spec_and_leave_every_stored_version_as_it_was(apiserver, kube):
    assert kube.post(CRDS, widget_crd()).status == 201
    assert kube.post(WIDGETS, widget("w", size=3)).status == 201
    versions = [apiserver.store.get(KEY, OKEY)]

    def stored() -> None:
        versions.append(apiserver.store.get(KEY, OKEY))

    for i in range(4):   # the first's walk leaves the spec as it was (trusted then), the others skip it
        reply = _status(kube, {"status": {"phase": f"p{i}", "done": i}})
        assert reply.status == 200, reply.body
        assert reply.body["status"] == {"phase": f"p{i}", "done": i} and reply.body["spec"] == {"size": 3}
        stored()
    # A spec change and an unknown field in a status patch: warned about, the stored spec kept as it was.
    reply = _status(kube, {"spec": {"size": 9, "bogus": 1}, "status": {"phase": "x"}})
    assert reply.status == 200, reply.body
    assert reply.headers.get("warning") == '299 - "unknown field \\"spec.bogus\\""'
    assert reply.body["spec"] == {"size": 3}
    stored()
    reply = _status(kube, {"spec": {"bogus": 2}, "status": {"phase": "y"}}, fieldValidation="Strict")
    assert reply.status == 422 and "spec.bogus" in reply.body["message"]
    reply = _status(kube, {"status": {"phase": "z"}}, fieldValidation="Strict")
    assert reply.status == 200, reply.body
    stored()
    # The main resource's write changes the spec; status writes share the new one.
    assert kube.patch(f"{WIDGETS}/w", {"spec": {"size": 4}}).status == 200
    stored()
    for i in range(3):
        assert _status(kube, {"status": {"phase": f"q{i}"}}).status == 200
        stored()

    # The CRD loses a field the stored spec has: a status write walks (and prunes) its copy of the spec, never the
    # stored one, which the status strategy keeps.
    assert kube.patch(WIDGETS + "/w", {"spec": {"color": "red"}}).status == 200
    stored()
    crd = kube.get(f"{CRDS}/widgets.example.com").body
    del crd["spec"]["versions"][0]["schema"]["openAPIV3Schema"]["properties"]["spec"]["properties"]["color"]
    assert kube.put(f"{CRDS}/widgets.example.com", crd).status == 200
    reply = _status(kube, {"status": {"phase": "r"}})
    assert reply.status == 200, reply.body
    assert reply.body["spec"] == {"size": 4, "color": "red"}
    stored()

    for entry in versions:
        assert encode_json(entry.obj) == entry.raw, entry.rv
    specs = [entry.obj["spec"] for entry in versions]
    assert specs[1] is specs[0] and specs[6] is specs[0]     # one spec, until the main resource changed it
    assert specs[7] == {"size": 4} and all(s is specs[7] for s in specs[8:11])
    assert [entry.obj["status"].get("phase") for entry in versions[8:11]] == ["q0", "q1", "q2"]

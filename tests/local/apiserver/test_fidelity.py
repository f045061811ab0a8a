"""Where the embedded API server answers as kube-apiserver 1.32 does (issue 18, point 4): quantities stored
canonically, Go's decode errors, each namespace's default ServiceAccount and root CA, quotas and limit ranges,
exact-version lists, exec/attach/port-forward, JSON patch failures, ``/metrics`` and verbose health checks."""

from __future__ import annotations

import time
from pathlib import Path

import pytest

from mxjob_controller.local.apiserver.server import APIServer, ServerOptions
from tests.support import Kube, Kubectl

# Each test starts the embedded API server or a process of its own (no server fixture).
pytestmark = pytest.mark.integration

PODS = "/api/v1/namespaces/default/pods"


def pod(name: str, containers: list[dict] | None = None, **spec: object) -> dict:
    return {"apiVersion": "v1", "kind": "Pod", "metadata": {"name": name},
            "spec": {"containers": containers or [{"name": "c", "image": "busybox"}], **spec}}


def wait_for(check, timeout: float = 5.0):
    deadline = time.monotonic() + timeout
    while True:
        value = check()
        if value or time.monotonic() > deadline:
            return value
        time.sleep(0.02)


# --- 1. quantities --------------------------------------------------------------------------------------------

def test_quantities_of_builtin_kinds_are_stored_canonically(kube: Kube):
    resources = {"requests": {"cpu": "0.1", "memory": "1.5Gi", "example.com/gpu": 1e3},
                 "limits": {"cpu": "1000m", "memory": "1536Mi", "example.com/gpu": "1e3"}}
    created = kube.post(PODS, pod("q", [{"name": "c", "image": "busybox", "resources": resources}]))
    assert created.status == 201, created.body
    got = created.body["spec"]["containers"][0]["resources"]
    assert got == {"requests": {"cpu": "100m", "memory": "1536Mi", "example.com/gpu": "1k"},
                   "limits": {"cpu": "1", "memory": "1536Mi", "example.com/gpu": "1e3"}}
    assert kube.get(f"{PODS}/q").body["spec"]["containers"][0]["resources"] == got
    half = kube.post("/api/v1/namespaces/default/resourcequotas", {
        "apiVersion": "v1", "kind": "ResourceQuota", "metadata": {"name": "rq"},
        "spec": {"hard": {"cpu": 0.5, "pods": "10", "memory": "2048Mi"}}})
    assert half.status == 201, half.body
    assert half.body["spec"]["hard"] == {"cpu": "500m", "pods": "10", "memory": "2Gi"}


# --- 2. decode errors -----------------------------------------------------------------------------------------

def test_a_string_where_an_int32_is_expected_is_kubes_decode_error(kube: Kube, kubectl: Kubectl):
    bad = pod("bad", [{"name": "c", "image": "busybox", "ports": [{"containerPort": "abc"}]}])
    reply = kube.post(PODS, bad)
    assert reply.status == 400
    assert reply.body["reason"] == "BadRequest"
    assert reply.body["message"] == ('Pod in version "v1" cannot be handled as a Pod: json: cannot unmarshal string '
                                     "into Go struct field ContainerPort.spec.containers.ports.containerPort of "
                                     "type int32")
    listed = kube.post(PODS, pod("bad", [{"name": "c", "image": "busybox", "ports": [80]}]))
    assert listed.body["message"].endswith("json: cannot unmarshal number into Go struct field "
                                           "Container.spec.containers.ports of type v1.ContainerPort")
    cm = kube.post("/api/v1/namespaces/default/configmaps",
                   {"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": "c"}, "data": {"port": 80}})
    assert cm.body["message"] == ('ConfigMap in version "v1" cannot be handled as a ConfigMap: json: cannot '
                                  "unmarshal number into Go struct field ConfigMap.data of type string")
    quantity = kube.post(PODS, pod("bad", [{"name": "c", "image": "busybox",
                                            "resources": {"limits": {"cpu": "lots"}}}]))
    assert quantity.status == 400
    assert quantity.body["message"] == ('Pod in version "v1" cannot be handled as a Pod: quantities must match the '
                                        "regular expression '^([+-]?[0-9.]+)([eEinumkKMGTP]*[-+]?[0-9]*)$'")
    applied = kubectl.run("apply", "-f", "-", input=(
        "apiVersion: v1\nkind: Pod\nmetadata: {name: bad}\n"
        "spec: {containers: [{name: c, image: busybox, ports: [{containerPort: abc}]}]}\n"))
    assert applied.returncode != 0
    assert ("json: cannot unmarshal string into Go struct field ContainerPort.spec.containers.ports.containerPort "
            "of type int32") in applied.stderr


# --- 3. the default ServiceAccount and kube-root-ca.crt -------------------------------------------------------

def test_every_namespace_gets_its_default_service_account(kube: Kube, kubectl: Kubectl):
    kubectl.ok("apply", "-f", "-", input="apiVersion: v1\nkind: Namespace\nmetadata: {name: team}\n")
    for ns in ("default", "kube-system", "kube-public", "team"):
        assert wait_for(lambda ns=ns: kube.get(f"/api/v1/namespaces/{ns}/serviceaccounts/default").ok), ns
    assert kubectl.ok("get", "sa", "-n", "team", "-o", "name") == "serviceaccount/default\n"
    kubectl.ok("delete", "sa", "default", "-n", "team")
    assert wait_for(lambda: kube.get("/api/v1/namespaces/team/serviceaccounts/default").ok)
    # Without TLS there is no CA to publish.
    assert kube.get("/api/v1/namespaces/team/configmaps/kube-root-ca.crt").status == 404


def test_kube_root_ca_is_published_in_every_namespace_with_tls(tmp_path):
    with APIServer(ServerOptions(tls=True)) as api:
        kube = Kube.of(api)
        try:
            kube.post("/api/v1/namespaces", {"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": "team"}})
            ca = Path(api.ca_file).read_text()
            for ns in ("default", "kube-system", "kube-public", "team"):
                path = f"/api/v1/namespaces/{ns}/configmaps/kube-root-ca.crt"
                assert wait_for(lambda path=path: kube.get(path).ok), ns
                assert kube.get(path).body["data"] == {"ca.crt": ca}
            path = "/api/v1/namespaces/team/configmaps/kube-root-ca.crt"
            assert kube.patch(path, {"data": {"ca.crt": "mine"}}).ok
            assert wait_for(lambda: kube.get(path).body["data"] == {"ca.crt": ca})
            assert kube.delete(path).ok
            assert wait_for(lambda: kube.get(path).ok)
        finally:
            kube.close()


# --- 4. resource quotas and limit ranges ----------------------------------------------------------------------

def test_describe_namespace_prints_quotas_and_limit_ranges(kube: Kube, kubectl: Kubectl):
    # kube 1.32's whole output for a fresh namespace, header included
    assert kubectl.ok("describe", "ns", "default") == (
        "Name:         default\n"
        "Labels:       kubernetes.io/metadata.name=default\n"
        "Annotations:  <none>\n"
        "Status:       Active\n"
        "\n"
        "No resource quota.\n"
        "\n"
        "No LimitRange resource.\n")
    assert kube.post("/api/v1/namespaces/default/limitranges", {
        "apiVersion": "v1", "kind": "LimitRange", "metadata": {"name": "lr"},
        "spec": {"limits": [{"type": "Container", "default": {"cpu": "500m"}}]}}).status == 201
    bad = kube.post("/api/v1/namespaces/default/resourcequotas", {
        "apiVersion": "v1", "kind": "ResourceQuota", "metadata": {"name": "rq"}, "spec": {"hard": "x"}})
    assert bad.status == 400
    assert kubectl.ok("get", "limits", "-o", "name") == "limitrange/lr\n"
    described = kubectl.ok("describe", "ns", "default")
    assert "\n\nNo resource quota.\n\nResource Limits\n" in described, described
    assert described.endswith(" Container  cpu       -    -    500m             500m           -\n"), described
    assert kube.delete("/api/v1/namespaces/default/limitranges/lr").ok


# --- 5. resourceVersionMatch=Exact ----------------------------------------------------------------------------

def test_exact_list_is_the_list_at_that_version(apiserver: APIServer, kube: Kube):
    assert kube.post(PODS, pod("a")).status == 201
    rv = kube.get(PODS).body["metadata"]["resourceVersion"]
    assert kube.post(PODS, pod("b")).status == 201
    assert kube.delete(f"{PODS}/a", gracePeriodSeconds=0).ok
    exact = kube.get(PODS, resourceVersion=rv, resourceVersionMatch="Exact")
    assert exact.status == 200
    assert [p["metadata"]["name"] for p in exact.body["items"]] == ["a"]
    assert exact.body["metadata"]["resourceVersion"] == rv
    assert [p["metadata"]["name"] for p in kube.get(PODS, resourceVersion=rv).body["items"]] == ["b"]
    apiserver.store.compact()
    gone = kube.get(PODS, resourceVersion=rv, resourceVersionMatch="Exact")
    assert (gone.status, gone.body["reason"]) == (410, "Expired")
    assert gone.body["message"] == "The resourceVersion for the provided list is too old."
    missing = kube.get(PODS, resourceVersionMatch="Exact")
    assert missing.status == 422
    assert missing.body["message"] == ('ListOptions.meta.k8s.io "" is invalid: resourceVersionMatch: Forbidden: '
                                       "resourceVersionMatch is forbidden unless resourceVersion is provided")


@pytest.mark.parametrize("match", ["NotOlderThan", None])
def test_not_older_than_lists_the_current_state_of_a_version_reached(kube: Kube, match: str | None):
    """``NotOlderThan`` (or a ``resourceVersion`` alone, which kube reads the same way): the current list, at a
    version not older than the one asked, and one that is not a version a 400 (unfixed: the list, as if it
    were). A version the server has not reached is waited for (storage/test_not_older_than.py)."""
    assert kube.post(PODS, pod("a")).status == 201
    rv = int(kube.get(PODS).body["metadata"]["resourceVersion"])
    assert kube.post(PODS, pod("b")).status == 201
    extra = {"resourceVersionMatch": match} if match else {}
    listed = kube.get(PODS, resourceVersion=rv, **extra)
    assert listed.status == 200 and [p["metadata"]["name"] for p in listed.body["items"]] == ["a", "b"]
    assert int(listed.body["metadata"]["resourceVersion"]) > rv
    for bad_rv in ("abc", "-1", str(1 << 64)):   # a uint64, or no version
        bad = kube.get(PODS, resourceVersion=bad_rv, **extra)
        assert bad.status == 400 and bad.body["message"] == f'invalid resource version "{bad_rv}"'
    assert kube.get(PODS, resourceVersion="0", **extra).status == 200   # Any


# --- 6. exec, attach, port-forward ----------------------------------------------------------------------------

def test_exec_attach_and_port_forward_answer_as_kube(apiserver: APIServer, kube: Kube, kubectl: Kubectl,
                                                     tmp_path: Path):
    assert kube.post(PODS, pod("p")).status == 201
    proc = kubectl.run("exec", "p", "--", "true")
    assert proc.stderr.strip() == "Error from server (BadRequest): pod p does not have a host assigned"
    proc = kubectl.run("exec", "p", "-c", "nope", "--", "true")
    assert proc.stderr.strip() == "Error from server (BadRequest): container nope is not valid for pod p"
    assert kube.post(PODS, pod("n", nodeName="local")).status == 201
    proc = kubectl.run("exec", "n", "--", "true")
    assert proc.stderr.strip() == 'error: unable to upgrade connection: container not found ("c")'
    status = {"phase": "Running", "containerStatuses": [{
        "name": "c", "image": "busybox", "imageID": "", "ready": True, "restartCount": 0,
        "state": {"running": {"startedAt": "2024-01-01T00:00:00Z"}}}]}
    assert apiserver.rest.update_status(apiserver.resource_for({"apiVersion": "v1", "kind": "Pod"}),
                                        ("default", "n"), status, "kubelet")
    proc = kubectl.run("exec", "n", "--", "true")
    assert proc.stderr.strip() == ("Error from server (BadRequest): the local kubelet does not support exec: pod n "
                                   "runs its containers as local processes (use kubectl logs to see their output)")
    local = "runs its containers as local processes"
    copied = kubectl.run("cp", "n:/etc/hostname", str(tmp_path / "hostname"))   # kubectl cp is an exec of tar
    assert copied.stderr == ("Error from server (BadRequest): the local kubelet does not support exec: pod n "
                             f"{local} (use kubectl logs to see their output)\n")
    # port-forward is served (tests/local/apiserver/kinds/test_port_forward.py); a pod no kubelet started has no
    # address to forward to
    forwarded = kubectl.run("port-forward", "pod/n", "0:80", timeout=10)
    assert forwarded.stderr == ("error: error upgrading connection: pod n has no IP address yet (status.podIP): the "
                                "local kubelet has not started it\n")
    pending = kubectl.run("port-forward", "pod/p", "0:80", timeout=10)   # kubectl's own check, as against kube
    assert pending.stderr == "error: unable to forward port because pod is not running. Current status=Pending\n"
    reply = kube.post(f"{PODS}/n/attach", None, container="c", stdout="true")
    assert (reply.status, reply.body["message"]) == (400, "the local kubelet does not support attach: pod n runs "
                                                          "its containers as local processes (use kubectl logs to "
                                                          "see their output)")
    assert kube.post(f"{PODS}/zz/exec", None).status == 404
    forward = kube.post(f"{PODS}/p/portforward", None)
    assert (forward.status, forward.body["message"]) == (400, "pod p does not have a host assigned")


# --- 7. JSON patch test failures ------------------------------------------------------------------------------

def test_failed_json_patch_test_is_kubes_generic_invalid_with_empty_details(kube: Kube, kubectl: Kubectl):
    """kube-apiserver answers a JSON patch that does not apply with NewGenericServerResponse(422, ..., false):
    the generic message, empty details (no UnexpectedServerResponse cause), so kubectl prints only that."""
    kube.post("/api/v1/namespaces/default/configmaps",
              {"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": "c"}, "data": {"a": "1"}})
    reply = kube.patch("/api/v1/namespaces/default/configmaps/c", [{"op": "test", "path": "/data/a", "value": "2"}],
                       content_type="application/json-patch+json")
    assert reply.status == 422
    assert reply.body["message"] == "the server rejected our request due to an error in our request"
    assert reply.body["reason"] == "Invalid"
    assert reply.body["details"] == {}
    out = kubectl.run("patch", "configmap", "c", "--type", "json",
                      "-p", '[{"op":"test","path":"/data/a","value":"2"}]')
    assert out.returncode != 0
    assert "The request is invalid: the server rejected our request due to an error in our request" in out.stderr


# --- 8. /metrics ----------------------------------------------------------------------------------------------

def test_metrics(kube: Kube):
    kube.post(PODS, pod("m"))
    kube.get(PODS)
    kube.get(f"{PODS}/m")
    text = kube.request("GET", "/metrics", accept="text/plain").body
    assert ('apiserver_request_total{code="201",component="apiserver",dry_run="",group="",resource="pods",'
            'scope="namespace",subresource="",verb="POST",version="v1"} 1') in text
    assert ('apiserver_request_total{code="200",component="apiserver",dry_run="",group="",resource="pods",'
            'scope="namespace",subresource="",verb="LIST",version="v1"} 1') in text
    assert ('apiserver_request_total{code="200",component="apiserver",dry_run="",group="",resource="pods",'
            'scope="resource",subresource="",verb="GET",version="v1"} 1') in text
    assert 'apiserver_storage_objects{resource="pods"} 1\n' in text
    assert 'apiserver_storage_objects{resource="namespaces"} 4\n' in text
    assert 'apiserver_current_inflight_requests{request_kind="readOnly"} 1\n' in text
    assert "# TYPE apiserver_request_total counter\n" in text


def test_metrics_are_authorized_as_a_non_resource_url():
    with APIServer(ServerOptions(authorization="RBAC")) as api:
        anonymous = Kube(api.url)
        bot = Kube(api.url, token=api.issue_user_token("bot"))
        watcher = Kube(api.url, token=api.issue_user_token("prometheus", ("system:monitoring",)))
        try:
            assert anonymous.request("GET", "/metrics", accept="*/*").body["message"] == \
                'forbidden: User "system:anonymous" cannot get path "/metrics"'
            assert bot.request("GET", "/metrics", accept="*/*").status == 403
            assert watcher.request("GET", "/metrics", accept="*/*").status == 200
            assert anonymous.request("GET", "/readyz", accept="*/*").body == "ok"
        finally:
            for k in (anonymous, bot, watcher):
                k.close()


# --- 9. health checks -----------------------------------------------------------------------------------------

@pytest.mark.parametrize("name", ["readyz", "livez", "healthz"])
def test_verbose_health_checks(kube: Kube, name: str):
    text = kube.request("GET", f"/{name}", query={"verbose": ""}, accept="*/*").body
    lines = text.splitlines()
    assert lines[0] == "[+]ping ok"
    assert "[+]etcd ok" in lines
    assert ("[+]shutdown ok" in lines) == (name == "readyz")
    assert lines[-1] == f"{name} check passed"
    assert kube.request("GET", f"/{name}/ping", accept="*/*").body == "ok"
    excluded = kube.request("GET", f"/{name}", query={"verbose": "", "exclude": "etcd"}, accept="*/*").body
    assert "[+]etcd excluded: ok" in excluded.splitlines()
    missing = kube.request("GET", f"/{name}/nope", accept="*/*")
    assert (missing.status, missing.body) == (404, "404 page not found\n")


@pytest.mark.parametrize(("body", "detail"), [
    (pod("x") | {"spec": {"containers": {"name": "c"}}},
     "json: cannot unmarshal object into Go struct field PodSpec.spec.containers of type []v1.Container"),
    ({"apiVersion": "v1", "kind": "Pod", "metadata": {"name": "x", "labels": ["a"]}},
     "json: cannot unmarshal array into Go struct field ObjectMeta.metadata.labels of type map[string]string"),
    ({"apiVersion": "v1", "kind": "Pod", "metadata": {"name": 5}},
     "json: cannot unmarshal number into Go struct field ObjectMeta.metadata.name of type string"),
])
def test_wrong_json_types_are_go_decode_errors(kube: Kube, body: dict, detail: str):
    reply = kube.post(PODS, body)
    assert (reply.status, reply.body["message"]) == (400, f'Pod in version "v1" cannot be handled as a Pod: {detail}')

"""The real kubectl against the embedded API server: create, get, get -w, wait, patch, delete, and the exact
messages users see for conflicts, missing objects and duplicates. Validation stays on (never --validate=false)."""

import subprocess
import threading

import yaml

from tests.crds import widget_crd
from tests.support import wait_for

WIDGET_YAML = """\
apiVersion: example.com/v1
kind: Widget
metadata:
  name: w1
spec:
  size: 3
"""


def _install_crd(kubectl, tmp_path):
    path = tmp_path / "crd.yaml"
    path.write_text(yaml.safe_dump(widget_crd()))
    out = kubectl.ok("create", "-f", str(path))
    assert out.strip() == "customresourcedefinition.apiextensions.k8s.io/widgets.example.com created"
    kubectl.ok("wait", "--for", "condition=established", "crd/widgets.example.com", "--timeout=10s")


def test_create_crd_and_custom_resource_from_yaml(kubectl, tmp_path):
    _install_crd(kubectl, tmp_path)
    (tmp_path / "w.yaml").write_text(WIDGET_YAML)
    assert kubectl.ok("create", "-f", str(tmp_path / "w.yaml")).strip() == "widget.example.com/w1 created"
    got = kubectl.json("get", "widgets", "w1")
    assert got["spec"] == {"size": 3}
    assert kubectl.ok("get", "wg", "-o", "name").split() == ["widget.example.com/w1"]
    dup = kubectl.run("create", "-f", str(tmp_path / "w.yaml"))
    assert dup.returncode == 1
    assert dup.stderr.strip() == ('Error from server (AlreadyExists): error when creating "'
                                  f'{tmp_path / "w.yaml"}": widgets.example.com "w1" already exists')


def test_not_found_message(kubectl):
    proc = kubectl.run("get", "configmap", "missing")
    assert proc.returncode == 1
    assert proc.stderr.strip() == 'Error from server (NotFound): configmaps "missing" not found'


CONFIGMAP = "apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: {name}\ndata:\n  a: '{a}'\n"


def test_conflict_message(kubectl, tmp_path):
    kubectl.ok("create", "-f", "-", input=CONFIGMAP.format(name="c", a=1))
    stale = kubectl.json("get", "configmap", "c")
    kubectl.ok("patch", "configmap", "c", "--type", "merge", "-p", '{"data":{"a":"2"}}')
    stale["data"] = {"a": "3"}
    path = tmp_path / "stale.yaml"
    path.write_text(yaml.safe_dump(stale))
    proc = kubectl.run("replace", "-f", str(path))
    assert proc.returncode == 1
    assert proc.stderr.strip() == (
        f'Error from server (Conflict): error when replacing "{path}": Operation cannot be fulfilled on '
        'configmaps "c": the object has been modified; please apply your changes to the latest version and '
        "try again")


def test_patch_merge_and_delete(kubectl, tmp_path):
    _install_crd(kubectl, tmp_path)
    (tmp_path / "w.yaml").write_text(WIDGET_YAML)
    kubectl.ok("create", "-f", str(tmp_path / "w.yaml"))
    out = kubectl.ok("patch", "widget", "w1", "--type", "merge", "-p", '{"spec":{"size":5,"color":"red"}}')
    assert out.strip() == "widget.example.com/w1 patched"
    assert kubectl.json("get", "widget", "w1")["spec"] == {"size": 5, "color": "red"}
    assert kubectl.ok("delete", "-f", str(tmp_path / "w.yaml")).strip() == 'widget.example.com "w1" deleted'
    assert kubectl.run("get", "widget", "w1").returncode == 1


def test_get_watch_sees_changes(kubectl):
    kubectl.ok("create", "-f", "-", input=CONFIGMAP.format(name="watched", a=1))
    proc = kubectl.popen("get", "configmaps", "-w", "-o", "jsonpath={.metadata.name}={.data.a}{\"\\n\"}",
                         "--request-timeout=20s")
    lines: list[str] = []

    def read():
        assert proc.stdout is not None
        for line in proc.stdout:
            lines.append(line.strip())

    reader = threading.Thread(target=read, name="kubectl-watch-reader", daemon=True)
    reader.start()
    try:
        wait_for(lambda: "watched=1" in lines, timeout=15, what="the initial state")
        kubectl.ok("patch", "configmap", "watched", "--type", "merge", "-p", '{"data":{"a":"2"}}')
        kubectl.ok("create", "-f", "-", input=CONFIGMAP.format(name="second", a=9))
        wait_for(lambda: "watched=2" in lines and "second=9" in lines, timeout=15, what="the changes")
    finally:
        proc.terminate()
        try:
            proc.wait(10)
        except subprocess.TimeoutExpired:
            proc.kill()


def test_wait_for_a_condition_and_for_delete(kubectl, kube, tmp_path):
    _install_crd(kubectl, tmp_path)
    (tmp_path / "w.yaml").write_text(WIDGET_YAML)
    kubectl.ok("create", "-f", str(tmp_path / "w.yaml"))
    waiter = kubectl.popen("wait", "--for", "condition=Ready", "widget/w1", "--timeout=20s")
    kube.patch("/apis/example.com/v1/namespaces/default/widgets/w1/status",
               {"status": {"conditions": [{"type": "Ready", "status": "True"}]}})
    out, err = waiter.communicate(timeout=25)
    assert waiter.returncode == 0, err
    assert out.strip() == "widget.example.com/w1 condition met"
    deleter = kubectl.popen("wait", "--for", "delete", "widget/w1", "--timeout=20s")
    kube.delete("/apis/example.com/v1/namespaces/default/widgets/w1")
    out, err = deleter.communicate(timeout=25)
    assert deleter.returncode == 0, err
    # kubectl prints nothing when the object was already gone by the time it looked.
    assert out.strip() in ("widget.example.com/w1 condition met", "")


def test_namespaced_create_from_stdin_and_describe(kubectl):
    kubectl.ok("create", "-f", "-", input="apiVersion: v1\nkind: Namespace\nmetadata:\n  name: team-a\n")
    manifest = "apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: from-stdin\ndata:\n  k: v\n"
    assert kubectl.ok("create", "-n", "team-a", "-f", "-", input=manifest).strip() == "configmap/from-stdin created"
    out = kubectl.ok("describe", "configmap", "from-stdin", "-n", "team-a")
    assert "Name:" in out and "from-stdin" in out and "team-a" in out
    assert kubectl.json("get", "configmap", "from-stdin", "-n", "team-a")["data"] == {"k": "v"}

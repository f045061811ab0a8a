"""The audit log: a record of every request (verb, resource, namespace, name, user agent, code, time spent),
queryable in-process, bounded in memory, and written as JSON lines when asked (also by ``local up``)."""

from __future__ import annotations

import json
import re
import subprocess
import sys
import time
from dataclasses import fields
from pathlib import Path

import pytest

from mxjob_controller.local.apiserver.http.audit import AuditRecord
from mxjob_controller.local.apiserver.http.faults import FaultRule
from mxjob_controller.local.apiserver.server import APIServer, ServerOptions
from tests.support import Kube, configmap, wait_for

# Each test starts the embedded API server or a process of its own (no server fixture).
pytestmark = pytest.mark.integration

NS = "default"
CMS = f"/api/v1/namespaces/{NS}/configmaps"


def test_every_request_is_recorded_with_what_it_was_and_how_it_ended(apiserver):
    kube = Kube(apiserver.url, user_agent="audit-tests/1.0")
    started = time.time()
    try:
        kube.post(CMS, configmap("c"))
        kube.get(f"{CMS}/c")
        kube.get(f"{CMS}/missing")
        kube.get(CMS, labelSelector="app=x")
        list(kube.watch(CMS, timeout=20, timeoutSeconds=1))
        kube.put(f"{CMS}/c", configmap("c", {"a": "b"}))  # (support.Kube.patch sends urllib3's user agent)
        kube.put(f"{CMS}/c/status", configmap("c"))
        kube.delete(f"{CMS}/c")
        kube.get("/version")
    finally:
        kube.close()
    records = wait_for(lambda: len(apiserver.audit.records(user_agent="audit-tests")) == 9
                       and apiserver.audit.records(user_agent="audit-tests"), timeout=10)
    assert [(r.verb, r.name, r.code) for r in records] == [
        ("create", "", 201), ("get", "c", 200), ("get", "missing", 404), ("list", "", 200), ("watch", "", 200),
        ("update", "c", 200), ("update", "c", 404), ("delete", "c", 200), ("get", "", 200)]
    create, watch, update, version = records[0], records[4], records[6], records[8]
    assert (create.method, create.path, create.group, create.version, create.resource, create.namespace) == (
        "POST", CMS, "", "v1", "configmaps", NS)
    assert update.subresource == "status"
    assert version.resource == "" and version.path == "/version"
    assert watch.elapsed >= 0.9, "a watch is recorded when it ends, with the time it was open"
    assert all(r.user_agent == "audit-tests/1.0" for r in records)
    assert all(started - 1 <= r.time <= time.time() for r in records)
    assert [r.time for r in records] == sorted(r.time for r in records)
    assert apiserver.audit.records(user_agent="audit-tests", verb="get", code=404)[0].name == "missing"
    assert [r.verb for r in apiserver.audit.records(user_agent="audit-tests", resource="configmaps", name="c")] == \
        ["get", "update", "update", "delete"]


def test_kubectl_and_injected_faults_are_recorded(apiserver, kubectl):
    apiserver.faults.add(FaultRule(verb="list", resource="pods", code=500, count=1))
    kubectl.run("get", "pods")
    records = wait_for(lambda: apiserver.audit.records(user_agent="kubectl", resource="pods"), timeout=10)
    assert records[0].code == 500 and records[0].verb == "list"
    assert apiserver.audit.records(user_agent="kubectl", verb="get", resource="")  # discovery, first


def test_memory_is_bounded():
    with APIServer(ServerOptions(audit_capacity=10)) as server:
        kube = Kube(server.url)
        try:
            for i in range(25):
                kube.get(f"{CMS}/n{i}")
        finally:
            kube.close()
        records = wait_for(lambda: (r := server.audit.records()) and r[-1].name == "n24" and r, timeout=10)
        assert [r.name for r in records] == [f"n{i}" for i in range(15, 25)]
        server.audit.clear()
        assert server.audit.records() == []


def test_json_lines_file(tmp_path: Path):
    path = tmp_path / "audit.jsonl"
    with APIServer(ServerOptions(audit_log=str(path))) as server:
        kube = Kube(server.url, user_agent="jsonl-tests")
        try:
            kube.post(CMS, configmap("c"))
            kube.get(f"{CMS}/nope")
        finally:
            kube.close()
        wait_for(lambda: len(server.audit.records(user_agent="jsonl-tests")) == 2, timeout=10)
    lines = [json.loads(line) for line in path.read_text().splitlines()]
    assert [(r["verb"], r["resource"], r["namespace"], r["name"], r["code"], r["userAgent"]) for r in lines] == [
        ("create", "configmaps", NS, "", 201, "jsonl-tests"), ("get", "configmaps", NS, "nope", 404, "jsonl-tests")]
    assert all(isinstance(r["time"], float) and r["elapsed"] >= 0 for r in lines)
    # Every field of a record reaches its line, camelCased as kube's audit events spell them.
    camel = {f.name: re.sub(r"_(\w)", lambda m: m.group(1).upper(), f.name) for f in fields(AuditRecord)}
    assert all(sorted(r) == sorted(camel.values()) for r in lines)


def test_local_up_audit_log(tmp_path: Path):
    kubeconfig, path = tmp_path / "kubeconfig", tmp_path / "audit.jsonl"
    proc = subprocess.Popen([sys.executable, "-m", "mxjob_controller", "local", "up",
                             "--kubelet", "none", "--no-controller", "--port", "0", "--no-crds",
                             "--kubeconfig-out", str(kubeconfig), "--audit-log", str(path)],
                            stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    try:
        wait_for(lambda: kubeconfig.exists() or proc.poll() is not None, timeout=60, what="local up ready")
        assert proc.poll() is None, proc.communicate()
        kube = Kube.from_kubeconfig(kubeconfig, user_agent="local-up-audit")
        try:
            assert kube.get(f"{CMS}/x").status == 404
        finally:
            kube.close()
        wait_for(lambda: path.exists() and "local-up-audit" in path.read_text(), timeout=10)
    finally:
        proc.terminate()
        proc.communicate(timeout=30)
    mine = [json.loads(line) for line in path.read_text().splitlines() if "local-up-audit" in line]
    assert [(r["verb"], r["name"], r["code"]) for r in mine] == [("get", "x", 404)]

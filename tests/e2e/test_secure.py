"""End to end as on a real cluster: ``local up --tls --authorization rbac`` serving HTTPS and enforcing RBAC, the
install applied with ``kubectl apply -k``, and ``mxjob-controller run`` started as the ``mxjob-controller``
ServiceAccount with in-cluster configuration only (the token directory ``local up --serviceaccount ... --token-dir``
wrote, ``KUBERNETES_SERVICE_HOST``/``PORT``; no kubeconfig), leader election on as the Deployment runs it. The example
MXJob goes through the run's rarer paths (``tests/e2e/scenario.py``: adoption after a 409, a recreated pod, a status
conflict re-read, a scale-down, success, its TTL), every request of the controller is made as the ServiceAccount and
none is refused, and no token, key or certificate appears in any log or output of the run."""

from __future__ import annotations

import base64
import json
import signal
import subprocess
import sys
from pathlib import Path

import pytest
import yaml

from tests.e2e.scenario import MXNET, Outcome, deployment_args, stop, submit, walk
from tests.manifests import INSTALL_NAMESPACE, MANIFESTS
from tests.run_process import UA_PREFIX, RunProcess, clean_env
from tests.support import Kube, Kubectl, wait_for

pytestmark = pytest.mark.slow

SA_USER = f"system:serviceaccount:{INSTALL_NAMESPACE}:mxjob-controller"
CLI = [sys.executable, "-m", "mxjob_controller"]


def test_the_controller_as_its_service_account_under_the_shipped_rbac(tmp_path: Path) -> None:
    kubeconfig, audit_log, sa_dir = tmp_path / "kubeconfig", tmp_path / "audit.jsonl", tmp_path / "serviceaccount"
    env = clean_env()
    up = subprocess.Popen([*CLI, "local", "up", "--tls", "--authorization", "rbac", "--kubelet", "none",
                           "--no-controller", "--no-webhooks", "--port", "0", "--kubeconfig-out", str(kubeconfig),
                           "--audit-log", str(audit_log), "--serviceaccount", f"{INSTALL_NAMESPACE}/mxjob-controller",
                           "--token-dir", str(sa_dir), "--fault", MXNET.status_conflict, "--log-level", "debug"],
                          stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True, env=env, cwd=tmp_path)
    controller: RunProcess | None = None
    outcome = Outcome()
    try:
        wait_for(lambda: kubeconfig.exists() or up.poll() is not None, timeout=60, what="local up's kubeconfig")
        assert up.poll() is None, up.communicate()
        config = yaml.safe_load(kubeconfig.read_text())
        server = config["clusters"][0]["cluster"]["server"]
        admin_token = config["users"][0]["user"]["token"]
        sa_token = (sa_dir / "token").read_text()
        assert server.startswith("https://") and sorted(p.name for p in sa_dir.iterdir()) == ["ca.crt", "namespace",
                                                                                              "token"]
        assert (sa_dir / "ca.crt").read_bytes() == base64.b64decode(config["clusters"][0]["cluster"][
            "certificate-authority-data"])
        kubectl = Kubectl(kubeconfig, tmp_path / "kubectl-cache")
        kube = Kube(server, token=admin_token, ca_file=str(sa_dir / "ca.crt"))
        anonymous = Kube(server, ca_file=str(sa_dir / "ca.crt"))   # no token: system:anonymous, as kube makes it
        assert kube.get("/version").ok and anonymous.get("/version").ok
        assert anonymous.get("/api/v1/namespaces").status == 403
        assert Kube(server, token="not-a-token", ca_file=str(sa_dir / "ca.crt")).get("/version").status == 401
        anonymous.close()
        kubectl.ok("apply", "-k", str(MANIFESTS / "install"), timeout=120)
        submit(kubectl, kube, MXNET)

        host, port = server.removeprefix("https://").rsplit(":", 1)
        run_env = {**env, "POD_NAMESPACE": INSTALL_NAMESPACE, "MXJOB_SERVICE_ACCOUNT_DIR": str(sa_dir),
                   "KUBERNETES_SERVICE_HOST": host, "KUBERNETES_SERVICE_PORT": port}
        controller = RunProcess([], argv=[*CLI, "run", *deployment_args("install"), "--log-level", "debug"],
                                env=run_env).start()
        controller.wait_running(60)
        started = controller.wait_log(lambda r: str(r.get("msg", "")).startswith("mxjob-controller "))
        assert "in-cluster service account" in started["msg"], started
        walk(kubectl, kube, MXNET, outcome)
        stop(controller, outcome)
        kube.close()
    finally:
        if controller is not None:
            controller.kill()
        up.send_signal(signal.SIGTERM)
        up_output, _ = up.communicate(timeout=15)
    assert up.returncode == 0, up_output
    assert not (sa_dir / "token").exists(), "the token went with the server"

    lines = [json.loads(line) for line in audit_log.read_text().splitlines()]
    made = [line for line in lines if line["userAgent"].startswith(UA_PREFIX)]
    assert made and {line["user"] for line in made} == {SA_USER}, "every request of the controller as its account"
    refused = [f'{line["code"]} {line["verb"]} {line["path"]}' for line in made if line["code"] in (401, 403)]
    assert refused == [], "the shipped RBAC refused the controller:\n" + "\n".join(refused)
    verbs = {(line["verb"], line["resource"], line["subresource"]) for line in made}
    assert {("create", "pods", ""), ("patch", "mxjobs", "status"), ("get", "mxjobs", ""), ("delete", "mxjobs", ""),
            ("update", "leases", ""), ("get", "customresourcedefinitions", "")} <= verbs, "the paths were walked"

    # Nothing secret in any log or output (debug level, both processes, and the audit log): no token, no part of
    # the CA's certificate, no key.
    texts = {"local up": up_output, "run": "\n".join(outcome.outputs), "audit log": audit_log.read_text()}
    ca_body = config["clusters"][0]["cluster"]["certificate-authority-data"]
    ca_pem_lines = [line for line in base64.b64decode(ca_body).decode().splitlines() if "-----" not in line]
    for where, text in texts.items():
        assert text, where
        assert admin_token not in text and sa_token not in text, f"a token in the {where}"
        assert "PRIVATE KEY" not in text and "BEGIN CERTIFICATE" not in text, f"a key or certificate in the {where}"
        assert ca_body not in text and not any(line in text for line in ca_pem_lines), f"the CA in the {where}"

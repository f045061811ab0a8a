"""``mxjob-controller run --kubeconfig K`` where K's user is a credential plugin (``exec``, as on EKS, GKE and AKS),
against the embedded API server with TLS and token authentication: it becomes ready with the plugin's token, runs
the plugin again when the credential expires (the leader keeps renewing its lease, never refused), and a missing
plugin ends the start with the command and its installHint said, no traceback."""

from __future__ import annotations

import pytest
import yaml

from mxjob_controller.local.apiserver.server import ServerOptions
from tests.run_process import LOCAL_PORTS, UA_PREFIX, RunProcess, install_mxjob_crd
from tests.runtime.client.kubeconfigs import exec_plugin, runs
from tests.support import wait_for

pytestmark = pytest.mark.slow

V1BETA1 = "client.authentication.k8s.io/v1beta1"


@pytest.fixture
def server_options():
    return ServerOptions(tls=True, bookmark_interval=0.2)


def exec_kubeconfig(apiserver, tmp_path, **entry: object):
    doc = apiserver.kubeconfig()
    doc["users"][0]["user"] = {"exec": {"apiVersion": V1BETA1, **entry}}
    path = tmp_path / "kubeconfig"
    path.write_text(yaml.safe_dump(doc))
    return path


def test_run_is_ready_with_an_exec_plugin_and_runs_it_again_when_its_credential_expires(apiserver, tmp_path):
    install_mxjob_crd(apiserver)
    plugin = exec_plugin(tmp_path, [apiserver.admin_token], ttl=3, api_version=V1BETA1)
    kubeconfig = exec_kubeconfig(apiserver, tmp_path, command="./plugin", args=["get-token"])
    args = ["--kubeconfig", str(kubeconfig), *LOCAL_PORTS, "--leader-elect", "--leader-election-namespace", "default"]
    with RunProcess(args) as proc:
        proc.wait_running()
        wait_for(lambda: proc.get("/readyz") == (200, "ok"), timeout=20, what="/readyz ok")
        first = runs(plugin)
        assert first >= 1
        # The leader renews its lease every 2 s: a renewal past the credential's expiry runs the plugin again.
        wait_for(lambda: runs(plugin) > first, timeout=30, what="the plugin run again after its credential expired")
        assert proc.get("/readyz") == (200, "ok")
        code, _seconds = proc.stop()
    assert code == 0, proc.output()
    made = apiserver.audit.records(user_agent=UA_PREFIX)
    assert made and not [r for r in made if r.code == 401], "every request carried a valid token"


def test_run_says_which_plugin_command_is_missing_and_how_to_install_it(apiserver, tmp_path):
    kubeconfig = exec_kubeconfig(apiserver, tmp_path, command="aws-iam-authenticator-not-installed",
                                 installHint="Install aws-iam-authenticator: https://example.invalid/install")
    proc = RunProcess(["--kubeconfig", str(kubeconfig), *LOCAL_PORTS]).start()
    try:
        assert proc.wait_exit(30) == 1
    finally:
        proc.kill()
    errors = [r for r in proc.records() if r["level"] == "error"]
    assert len(errors) == 1, proc.output()
    assert errors[0]["msg"] == (
        f"cannot start: cannot authenticate to {apiserver.url}: user 'mxjob-local': the exec plugin's command "
        "'aws-iam-authenticator-not-installed' was not found in PATH\n"
        "Install aws-iam-authenticator: https://example.invalid/install")
    assert "Traceback" not in proc.output()
    assert not apiserver.audit.records(user_agent=UA_PREFIX), "nothing was sent without a credential"

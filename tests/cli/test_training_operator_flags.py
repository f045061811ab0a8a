"""training-operator's flags on ``mxjob-controller run`` (issue 45): a Deployment written for Kubeflow's
training-operator v1.8 keeps its ``args`` when its image is swapped for this one.

The mapping alone (``cli/training_operator.py``'s pure functions), then through the real click command and
``build_settings`` (what each flag sets, which contradictions are refused on one line, which flags only warn), the
``--help`` sections, and last the process itself: ``run`` given such a Deployment's arguments against the embedded
API server starts, becomes ready, serves the kinds ``--enable-scheme`` names in the ``--namespace`` given, and names
every flag it ignores in its log.
"""

from __future__ import annotations

import importlib
import os
import socket

import click
import pytest
from click.testing import CliRunner

from mxjob_controller.cli import training_operator as to
from mxjob_controller.cli.run import DEPRECATED_SECTION, TRAINING_OPERATOR_SECTION, FlagError, build_settings
from mxjob_controller.manager.settings import RunSettings
from mxjob_controller.runtime.tls import TLSMaterial
from tests.gang_support import install, volcano_crd
from tests.run_process import RunProcess, clean_env, install_crds, mxjob
from tests.support import Kube, wait_for

run_cli = importlib.import_module("mxjob_controller.cli.run")


@pytest.fixture(autouse=True)
def isolated_environment(monkeypatch, tmp_path):
    """No MXJOB_* or POD_NAMESPACE from the caller, and no service-account mount."""
    for name in list(os.environ):
        if name.startswith("MXJOB_") or name == "POD_NAMESPACE":
            monkeypatch.delenv(name)
    monkeypatch.setenv("MXJOB_SERVICE_ACCOUNT_DIR", str(tmp_path / "no-service-account"))


def parsed(*args: str) -> tuple[RunSettings, list[str]]:
    """The settings ``run`` would start with, and the warnings it would log."""
    ctx = run_cli.run.make_context("run", list(args))
    settings = build_settings(ctx, ctx.params)
    return settings, [*ctx.meta.get("deprecations", []), *ctx.meta.get("warnings", [])]


def error(*args: str) -> str:
    with pytest.raises(FlagError) as info:
        parsed(*args)
    message = info.value.format_message()
    assert "\n" not in message
    return message


# --- the mapping, as pure functions -------------------------------------------------------------------------------

def test_schemes_map_to_frameworks_in_order_without_repeats():
    assert to.frameworks_for_schemes(["tfjob", "MXJob"]) == (("tensorflow", "mxnet"), ())
    assert to.frameworks_for_schemes(["mxjob", "mxjob", "GenericJob"]) == (("mxnet", "generic"), ())
    assert to.frameworks_for_schemes(["TFJob,pytorchjob", "xgboostjob mpijob", "paddlejob"]) == (
        ("tensorflow",), ("pytorchjob", "xgboostjob", "mpijob", "paddlejob"))
    assert to.frameworks_for_schemes([]) == ((), ())
    with pytest.raises(ValueError, match="scheme 'jaxjob' is not supported"):
        to.frameworks_for_schemes(["jaxjob"])


def test_zap_levels_are_controller_runtime_s():
    assert [to.zap_level(v) for v in ("debug", "INFO", "error", "1", "5")] == ["debug", "info", "error", "debug",
                                                                             "debug"]
    for bad in ("warn", "trace", "0", "-1", ""):
        with pytest.raises(ValueError, match="invalid log level"):
            to.zap_level(bad)


def test_zap_devel_sets_defaults_that_encoder_and_level_override():
    assert to.zap_logging(None, None, None) == (None, None)
    assert to.zap_logging(True, None, None) == ("debug", False)
    assert to.zap_logging(False, None, None) == ("info", True)
    assert to.zap_logging(True, "json", None) == ("debug", True)
    assert to.zap_logging(True, None, "error") == ("error", False)
    assert to.zap_logging(None, "console", None) == (None, False)
    assert to.zap_logging(None, None, "2") == ("debug", None)


def test_the_webhook_port_is_an_address_on_every_interface():
    assert to.webhook_address(9443) == ":9443"
    assert to.webhook_address(8443) == ":8443"
    assert to.webhook_address(0) == ":9443", "controller-runtime's default port"


def test_every_ignored_flag_has_an_option_and_a_reason():
    options = {max(p.opts, key=len) for p in run_cli.run.params if isinstance(p, click.Option)}
    assert set(to.IGNORED) <= options
    for flag in to.IGNORED:
        line = to.ignored_warning(flag, "x")
        assert line.startswith(f"{flag}=x (training-operator) has no effect here: ") and "\n" not in line


# --- through the command ------------------------------------------------------------------------------------------

def test_no_training_operator_flag_changes_nothing():
    assert parsed() == (RunSettings(leader_election_namespace="default"), [])


def test_enable_scheme_selects_the_frameworks():
    settings, warnings = parsed("--enable-scheme=tfjob", "--enable-scheme", "mxjob")
    assert (settings.frameworks, warnings) == (("tensorflow", "mxnet"), [])
    assert parsed("--enable-scheme=MXJob", "--frameworks", "mxnet")[0].frameworks == ("mxnet",), "agreeing: fine"


def test_a_scheme_not_served_here_is_a_warning_naming_it():
    settings, warnings = parsed("--enable-scheme=mxjob", "--enable-scheme=pytorchjob", "--enable-scheme=PaddleJob")
    assert settings.frameworks == ("mxnet",)
    assert warnings == [
        "--enable-scheme=pytorchjob (training-operator): pytorchjob is not served by this operator, ignored; it "
        "serves mxjob, tfjob, genericjob",
        "--enable-scheme=paddlejob (training-operator): paddlejob is not served by this operator, ignored; it "
        "serves mxjob, tfjob, genericjob"]


def test_webhook_server_port_turns_the_webhooks_on_at_that_port():
    assert parsed("--webhook-server-port=9443")[0].webhook_bind_address == ":9443"
    assert parsed("--webhook-server-port", "8443")[0].webhook_bind_address == ":8443"
    assert parsed()[0].webhook_bind_address == "0", "not given: off, as before"
    assert parsed("--webhook-server-port=9443", "--webhook-bind-address=:9443")[0].webhook_bind_address == ":9443"


@pytest.mark.parametrize(("args", "level", "json_lines"), [
    (("--zap-log-level=debug",), "debug", True),
    (("--zap-log-level", "error"), "error", True),
    (("--zap-log-level=3",), "debug", True),
    (("--zap-encoder=console",), "info", False),
    (("--zap-encoder", "JSON"), "info", True),
    (("--zap-devel",), "debug", False),
    (("--zap-devel=true", "--zap-encoder=json"), "debug", True),
    (("--zap-devel=false",), "info", True),
    (("--zap-devel", "--log-level=warning"), "warning", False),       # this operator's own flag wins over defaults
    (("--zap-devel", "--json-log-format=true"), "debug", True),
    (("--zap-log-level=info", "--log-level=info"), "info", True),      # agreeing: fine
])
def test_zap_flags_set_the_logging(args, level, json_lines):
    settings, warnings = parsed(*args)
    assert (settings.log_level, settings.json_log_format, warnings) == (level, json_lines, [])


def test_a_variable_counts_as_given_against_zap_flags(monkeypatch):
    monkeypatch.setenv("MXJOB_LOG_LEVEL", "error")
    assert parsed("--zap-devel")[0].log_level == "error"


def test_flags_with_no_meaning_here_are_accepted_with_a_warning_each():
    settings, warnings = parsed(
        "--zap-stacktrace-level=error", "--zap-time-encoding", "rfc3339", "--webhook-service-name=training-operator",
        "--webhook-secret-name", "training-operator-webhook-cert", "--pytorch-init-container-image=alpine:3.10",
        "--pytorch-init-container-template-file=/etc/config/initContainer.yaml",
        "--pytorch-init-container-max-tries=100", "--mpi-kubectl-delivery-image=mpioperator/kubectl-delivery:latest")
    assert settings == RunSettings(leader_election_namespace="default")
    assert [w.split(" ", 1)[0] for w in warnings] == [
        "--zap-stacktrace-level=error", "--zap-time-encoding=rfc3339", "--webhook-service-name=training-operator",
        "--webhook-secret-name=training-operator-webhook-cert", "--pytorch-init-container-image=alpine:3.10",
        "--pytorch-init-container-template-file=/etc/config/initContainer.yaml",
        "--pytorch-init-container-max-tries=100", "--mpi-kubectl-delivery-image=mpioperator/kubectl-delivery:latest"]
    assert all("(training-operator) has no effect here: " in w for w in warnings)


def test_go_s_one_dash_spellings_work_too():
    settings, warnings = parsed("-enable-scheme=tfjob", "-zap-log-level", "error", "-leader-elect",
                                "-webhook-server-port=8443", "-zap-time-encoding=epoch", "-kube-api-qps", "-1")
    assert (settings.frameworks, settings.log_level, settings.leader_elect) == (("tensorflow",), "error", True)
    assert (settings.webhook_bind_address, settings.kube_api_qps) == (":8443", -1.0)
    assert [w.split(" ", 1)[0] for w in warnings] == ["--zap-time-encoding=epoch"]
    assert "No such option '-n'" in error("-nope"), "not a flag of run: still exit 2"


def test_the_shared_flags_keep_their_meaning():
    """training-operator's flags of the same name as this operator's: what its main.go gives them."""
    settings, warnings = parsed("--leader-elect", "--metrics-bind-address=:8080", "--health-probe-bind-address=:8081",
                                "--namespace=kubeflow", "--gang-scheduler-name=Volcano", "--controller-threads=4",
                                "--leader-election-id=1ca428e5.training-operator.kubeflow.org")
    assert (settings.leader_elect, settings.metrics_bind_address, settings.health_probe_bind_address) == (
        True, ":8080", ":8081")
    assert (settings.namespaces, settings.gang_scheduler_name, settings.threadiness) == (("kubeflow",), "volcano", 4)
    assert settings.leader_election_id == "1ca428e5.training-operator.kubeflow.org"
    assert warnings == ["--controller-threads is deprecated: use --threadiness"]
    assert parsed("--gang-scheduler-name=scheduler-plugins")[0].gang_scheduler_name == "scheduler-plugins"


BAD = [
    (("--enable-scheme=jaxjob",), "invalid value for --enable-scheme: scheme 'jaxjob' is not supported"),
    (("--enable-scheme=pytorchjob",), "--enable-scheme names only kinds this operator does not serve (pytorchjob)"),
    (("--enable-scheme=tfjob", "--frameworks=mxnet"),
     "--enable-scheme (training-operator) selects tensorflow, which contradicts --frameworks mxnet"),
    (("--webhook-server-port=9443", "--webhook-bind-address=:8443"),
     "--webhook-server-port 9443 (training-operator) means --webhook-bind-address :9443, which contradicts"),
    (("--webhook-server-port=99999",), "invalid value for --webhook-server-port: 99999 is not in the range"),
    (("--zap-log-level=trace",), 'invalid value for --zap-log-level: invalid log level "trace"'),
    (("--zap-log-level=error", "--log-level=debug"), "--zap-log-level error (training-operator) and --log-level"),
    (("--zap-encoder=console", "--json-log-format=true"), "--zap-encoder console (training-operator) and "
                                                          "--json-log-format=true disagree"),
    (("--zap-encoder=xml",), "invalid value for --zap-encoder: 'xml' is not one of 'json', 'console'."),
    (("--zap-devel=maybe",), "invalid value for --zap-devel: 'maybe' is not a valid boolean"),
    (("--zap-stacktrace-level=warn",), "invalid value for --zap-stacktrace-level:"),
    (("--zap-time-encoding=unix",), "invalid value for --zap-time-encoding:"),
]


@pytest.mark.parametrize(("args", "expected"), BAD, ids=[" ".join(a) for a, _ in BAD])
def test_bad_values_and_contradictions_get_one_line(args, expected):
    assert expected in error(*args)


def test_help_lists_them_in_a_section_of_their_own():
    text = CliRunner().invoke(run_cli.run, ["--help"], terminal_width=1000).output
    options, rest = text.split(TRAINING_OPERATOR_SECTION + ":")
    compat, deprecated = rest.split(DEPRECATED_SECTION + ":")
    for flag in ("--enable-scheme", "--webhook-server-port", "--zap-devel", "--zap-encoder", "--zap-log-level",
                 "--controller-threads", *to.IGNORED):
        assert f"  {flag} " in compat and f"  {flag} " not in options + deprecated, flag
    for flag in ("--resyc-period", "--enable-gang-scheduling"):
        assert f"  {flag} " in deprecated and f"  {flag} " not in options + compat, flag
    assert "  --leader-elect " in options and "  --frameworks " in options
    assert "Its --leader-elect, --leader-election-id, --metrics-bind-address" in compat


# --- the process --------------------------------------------------------------------------------------------------

#: kubeflow/training-operator v1.8.1's manifests/base/deployment.yaml runs ``/manager`` with no ``args`` at all (its
#: defaults: ``:8080``, ``:8081``, webhooks on 9443 with the Secret mounted in /tmp/k8s-webhook-server/serving-certs,
#: every scheme); its CI (scripts/gha/setup-training-operator.sh) adds ``--gang-scheduler-name=volcano``. These are
#: the arguments such a Deployment carries once a user has set the flags of its cmd/training-operator.v1/main.go
#: and controller-runtime's ``--zap-*``: every one of them, in both of Go's spellings (``--f=v`` and ``--f v``).
#: ``{port}``, ``{namespace}``: filled in by the test (a free port; the namespace it watches).
TRAINING_OPERATOR_ARGS = [
    "--metrics-bind-address=127.0.0.1:0", "--health-probe-bind-address=127.0.0.1:0",
    "--leader-elect", "--leader-election-id=1ca428e5.training-operator.kubeflow.org",
    "--enable-scheme=tfjob", "--enable-scheme=mxjob", "--enable-scheme", "pytorchjob",
    "--gang-scheduler-name=volcano",
    "--namespace={namespace}",
    "--controller-threads=2",
    "--webhook-server-port={port}",
    "--webhook-service-name=training-operator", "--webhook-secret-name=training-operator-webhook-cert",
    "--pytorch-init-container-image=alpine:3.10", "--pytorch-init-container-max-tries", "100",
    "--mpi-kubectl-delivery-image=mpioperator/kubectl-delivery:latest",
    "--zap-devel=false", "--zap-encoder=json", "--zap-log-level=info", "--zap-stacktrace-level=error",
    "--zap-time-encoding=iso8601",
]
WARNED = ["--enable-scheme=pytorchjob", "--controller-threads", "--webhook-service-name", "--webhook-secret-name",
          "--pytorch-init-container-image", "--pytorch-init-container-max-tries", "--mpi-kubectl-delivery-image",
          "--zap-stacktrace-level", "--zap-time-encoding"]


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("", 0))
        return int(s.getsockname()[1])


@pytest.mark.integration
def test_run_with_a_training_operator_deployment_s_args_starts_and_becomes_ready(apiserver, kube: Kube, kubeconfig,
                                                                                tmp_path):
    install_crds(apiserver)
    install(kube, volcano_crd())
    assert kube.post("/api/v1/namespaces", {"apiVersion": "v1", "kind": "Namespace",
                                            "metadata": {"name": "kubeflow"}}).status == 201
    # The mounted webhook Secret (training-operator-webhook-cert, which training-operator filled) stands here in a
    # directory of the test's: the one argument that is not training-operator's.
    material = TLSMaterial("127.0.0.1")
    (tmp_path / "tls.crt").write_bytes(material.cert_file.read_bytes())
    (tmp_path / "tls.key").write_bytes(material._key_pem)
    port = free_port()
    args = [a.format(port=port, namespace="kubeflow") for a in TRAINING_OPERATOR_ARGS]
    env = clean_env(MY_POD_NAMESPACE="kubeflow", MY_POD_NAME="training-operator-0")   # as its Deployment sets them
    try:
        with RunProcess(["--kubeconfig", str(kubeconfig), "--webhook-cert-dir", str(tmp_path), *args],
                        env=env) as proc:
            proc.wait_running()
            wait_for(lambda: proc.get("/readyz") == (200, "ok"), timeout=20, what="/readyz ok")
            assert proc.get("/healthz") == (200, "ok")
            [reconciling] = [r for r in proc.records() if r["msg"].startswith("reconciling ")]
            assert reconciling["frameworks"] == ["tensorflow", "mxnet"], "the kinds --enable-scheme named"
            serving = proc.wait_log(lambda r: r.get("msg") == "webhooks serving", what="the webhook server")
            assert int(serving["webhook_url"].rsplit(":", 1)[1]) == port
            # --namespace: a job there is reconciled (its first status written, its pod created, a PodGroup for
            # volcano); --leader-elect: under the Lease of --leader-election-id.
            path = "/apis/kubeflow.org/v1/namespaces/kubeflow/mxjobs"
            assert kube.post(path, mxjob("swapped", "kubeflow")).status == 201
            wait_for(lambda: any(c["type"] == "Created" for c in
                                 (kube.get(f"{path}/swapped").body.get("status") or {}).get("conditions") or ()),
                     timeout=20, what="the job reconciled")
            wait_for(lambda: kube.get("/apis/scheduling.volcano.sh/v1beta1/namespaces/kubeflow/podgroups/swapped").ok,
                     timeout=20, what="its PodGroup")
            lease = kube.get("/apis/coordination.k8s.io/v1/namespaces/default/leases/"
                             "1ca428e5.training-operator.kubeflow.org")
            assert lease.status == 200 and lease.body["spec"]["holderIdentity"]
            warnings = [r["msg"] for r in proc.records() if r["level"] == "warning"]
            for flag in WARNED:
                assert [w for w in warnings if w.startswith(flag)], (flag, warnings)
            records = proc.records()
            assert records and all(r["level"] != "debug" for r in records), "--zap-log-level=info"
            assert proc.stop()[0] == 0
    finally:
        material.close()


@pytest.mark.integration
def test_training_operator_flags_never_exit_2_where_they_only_warn(tmp_path):
    """The process, before it reaches the API server: a flag with no meaning here warns and start-up goes on (to
    the missing kubeconfig, exit 1); a bad value is still exit 2 on one line."""
    missing = tmp_path / "nope"
    proc = RunProcess(["--kubeconfig", str(missing), "--zap-time-encoding=epoch", "--enable-scheme=mxjob",
                       "--enable-scheme=xgboostjob"]).start()
    try:
        assert proc.wait_exit(60) == 1
    finally:
        proc.kill()
    warnings = [r["msg"] for r in proc.records() if r["level"] == "warning"]
    assert [w.split(" ", 1)[0] for w in warnings] == ["--enable-scheme=xgboostjob", "--zap-time-encoding=epoch"]
    proc = RunProcess(["--zap-encoder=xml"]).start()
    try:
        assert proc.wait_exit(60) == 2
    finally:
        proc.kill()
    assert proc.output().startswith("mxjob-controller run: invalid value for --zap-encoder:")
    assert len(proc.output().splitlines()) == 1

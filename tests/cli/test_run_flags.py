"""``mxjob-controller run``'s flags: defaults, one environment variable per flag (named explicitly), the Go
operators' deprecated aliases, Go syntax for booleans and durations, one-line errors naming the flag (exit 2), the
Lease namespace fallback chain, and ``--version``. (The flag types alone: test_flag_types.py; the fallback chain
alone: tests/manager/test_settings.py.)

Parsing is tested through the real click command (``make_context``) and ``build_settings``; exit codes and the
one-line rule through the real process.
"""

from __future__ import annotations

import importlib
import os
import subprocess
import sys
from dataclasses import asdict

import click
import pytest

from mxjob_controller import __version__
from mxjob_controller.cli.run import FlagError, build_settings
from mxjob_controller.cli.training_operator import IGNORED
from mxjob_controller.manager.settings import RunSettings
from tests.run_process import clean_env


def env(flag: str) -> str:
    """The documented convention: ``MXJOB_`` + the flag in capitals, ``-`` as ``_``."""
    return "MXJOB_" + flag.upper().replace("-", "_")


# The module (``mxjob_controller.cli.run`` the attribute is the click command the package re-exports).
run_cli = importlib.import_module("mxjob_controller.cli.run")


@pytest.fixture(autouse=True)
def isolated_environment(monkeypatch, tmp_path):
    """No MXJOB_* or POD_NAMESPACE from the caller, and no service-account mount."""
    for name in list(os.environ):
        if name.startswith("MXJOB_") or name == "POD_NAMESPACE":
            monkeypatch.delenv(name)
    monkeypatch.setenv("MXJOB_SERVICE_ACCOUNT_DIR", str(tmp_path / "no-service-account"))


def settings(*args: str) -> RunSettings:
    ctx = run_cli.run.make_context("run", list(args))
    return build_settings(ctx, ctx.params)


def deprecations(*args: str) -> list[str]:
    ctx = run_cli.run.make_context("run", list(args))
    return ctx.meta.get("deprecations", [])


def error(*args: str) -> str:
    with pytest.raises(FlagError) as info:
        settings(*args)
    message = info.value.format_message()
    assert "\n" not in message
    return message


def test_defaults_are_upstream_s():
    s = settings()
    assert asdict(s) == asdict(RunSettings(leader_election_namespace="default"))
    assert (s.metrics_bind_address, s.health_probe_bind_address) == (":8080", ":8081")
    assert (s.threadiness, s.resync_period, s.json_log_format, s.leader_elect) == (1, 12 * 3600.0, True, False)
    assert s.cache_sync_timeout == 60.0
    # No client budget given: none where the server advertises API Priority and Fairness, else training-operator's
    # 20/30 (issue 35); either flag given: always that bucket, -1 off as in controller-runtime.
    assert (s.kube_api_qps, s.kube_api_burst, s.leader_election_id) == (None, None, "mxjob-controller")
    assert s.client_budget() == (20.0, 30, True)
    assert settings("--kube-api-qps", "-1").client_budget() == (-1.0, 30, False)
    assert settings("--kube-api-burst", "60").client_budget() == (20.0, 60, False)
    assert (s.event_qps, s.event_burst) == (150.0, 300)   # a budget apart, carrying a burst of jobs (issue 35)
    assert s.namespaces == () and s.gang_scheduler_name == ""


# flag, environment value, attribute, expected value
ENV_CASES = [
    ("kubeconfig", "/etc/kube/config", "kubeconfig", "/etc/kube/config"),
    ("master", "https://10.0.0.1:6443", "master", "https://10.0.0.1:6443"),
    ("namespace", "team-a team-b", "namespaces", ("team-a", "team-b")),
    ("frameworks", "tensorflow", "frameworks", ("tensorflow",)),
    ("threadiness", "4", "threadiness", 4),
    ("metrics-bind-address", "127.0.0.1:9090", "metrics_bind_address", "127.0.0.1:9090"),
    ("health-probe-bind-address", "0", "health_probe_bind_address", "0"),
    ("webhook-bind-address", ":9443", "webhook_bind_address", ":9443"),
    ("webhook-cert-dir", "/etc/webhook-certs", "webhook_cert_dir", "/etc/webhook-certs"),
    ("leader-elect", "true", "leader_elect", True),
    ("leader-election-id", "my-lease", "leader_election_id", "my-lease"),
    ("leader-election-namespace", "ops", "leader_election_namespace", "ops"),
    ("kube-api-qps", "50.5", "kube_api_qps", 50.5),
    ("kube-api-burst", "100", "kube_api_burst", 100),
    ("event-qps", "5", "event_qps", 5.0),
    ("event-burst", "7", "event_burst", 7),
    ("resync-period", "30m", "resync_period", 1800.0),
    ("cache-sync-timeout", "300", "cache_sync_timeout", 300.0),
    ("gang-scheduler-name", "volcano", "gang_scheduler_name", "volcano"),
    ("json-log-format", "false", "json_log_format", False),
    ("log-level", "DEBUG", "log_level", "debug"),
]


def test_every_flag_is_listed_here_with_its_variable():
    documented = {f"--{flag}" for flag, *_ in ENV_CASES}
    options = {max(p.opts, key=len): p for p in run_cli.run.params if isinstance(p, click.Option)}
    with_env = {flag for flag, p in options.items() if p.envvar}
    assert with_env == documented
    assert {flag: options[flag].envvar for flag in documented} == {flag: env(flag[2:]) for flag in documented}
    assert env("kube-api-qps") == "MXJOB_KUBE_API_QPS"
    deprecated = {"--controller-threads", "--resyc-period", "--enable-gang-scheduling"}
    # training-operator's flags (test_training_operator_flags.py): for its Deployments' args, no variables
    training_operator = {"--enable-scheme", "--webhook-server-port", "--zap-devel", "--zap-encoder", "--zap-log-level",
                         *IGNORED}
    assert set(options) - with_env == deprecated | training_operator | {"--version"}
    assert all(not options[f].envvar and not options[f].allow_from_autoenv for f in deprecated | training_operator)


@pytest.mark.parametrize(("flag", "value", "attr", "expected"), ENV_CASES, ids=[c[0] for c in ENV_CASES])
def test_each_flag_reads_its_environment_variable(monkeypatch, flag, value, attr, expected):
    monkeypatch.setenv(env(flag), value)
    assert getattr(settings(), attr) == expected


def test_a_flag_wins_over_its_variable(monkeypatch):
    monkeypatch.setenv("MXJOB_THREADINESS", "4")
    monkeypatch.setenv("MXJOB_JSON_LOG_FORMAT", "false")
    s = settings("--threadiness", "2", "--json-log-format")
    assert (s.threadiness, s.json_log_format) == (2, True)


def test_the_command_prefix_is_not_used_for_variables(monkeypatch):
    monkeypatch.setenv("MXJOB_RUN_THREADINESS", "7")          # what click's auto prefix would have read
    monkeypatch.setenv("MXJOB_RUN_CONTROLLER_THREADS", "7")
    assert settings().threadiness == 1


@pytest.mark.parametrize(("args", "expected"), [
    ((), False), (("--leader-elect",), True), (("--leader-elect=true",), True), (("--leader-elect=false",), False),
    (("--leader-elect", "--threadiness", "2"), True), (("--leader-elect=0",), False), (("--leader-elect=True",), True),
])
def test_booleans_take_go_syntax(args, expected):
    assert settings(*args).leader_elect is expected


def test_json_log_format_false_is_text():
    assert settings("--json-log-format=false").json_log_format is False
    assert settings("--json-log-format").json_log_format is True


def test_namespaces_repeat_and_split_and_dedupe():
    assert settings("--namespace", "a", "--namespace", "b,c", "--namespace", "a").namespaces == ("a", "b", "c")


def test_frameworks_default_to_none_named_and_repeat_split_and_dedupe():
    assert settings().frameworks == (), "unnamed: the defaults, each where its CRD is installed"
    assert settings("--frameworks", "mxnet,tensorflow").frameworks == ("mxnet", "tensorflow")
    assert settings("--frameworks", "tensorflow", "--frameworks", "mxnet tensorflow").frameworks == (
        "tensorflow", "mxnet")


def test_deprecated_aliases_work_and_warn():
    assert settings("--controller-threads", "3").threadiness == 3
    assert deprecations("--controller-threads", "3") == ["--controller-threads is deprecated: use --threadiness"]
    assert settings("--resyc-period", "1h").resync_period == 3600.0
    assert deprecations("--resyc-period", "1h") == ["--resyc-period is deprecated: use --resync-period"]
    assert settings("--enable-gang-scheduling").gang_scheduler_name == "volcano"
    assert settings("--enable-gang-scheduling=true").gang_scheduler_name == "volcano"
    assert settings("--enable-gang-scheduling=false").gang_scheduler_name == ""
    assert deprecations("--enable-gang-scheduling") == [
        "--enable-gang-scheduling is deprecated: use --gang-scheduler-name=volcano"]
    assert deprecations("--threadiness", "3") == []
    assert settings("--threadiness", "3", "--controller-threads", "3").threadiness == 3   # agreeing: fine


def test_gang_scheduler_names():
    assert settings("--gang-scheduler-name", "none").gang_scheduler_name == ""
    assert settings("--gang-scheduler-name", "scheduler-plugins-scheduler").gang_scheduler_name == \
        "scheduler-plugins-scheduler"
    assert settings("--gang-scheduler-name", "volcano", "--enable-gang-scheduling").gang_scheduler_name == "volcano"


# arguments → what the one-line error must contain
BAD = [
    (("--threadiness", "0"), "invalid value for --threadiness: 0 is not in the range x>=1."),
    (("--threadiness", "many"), "invalid value for --threadiness: 'many' is not a valid integer range."),
    (("--controller-threads", "0"), "invalid value for --controller-threads:"),
    (("--kube-api-qps", "fast"), "invalid value for --kube-api-qps: 'fast' is not a valid float."),
    (("--kube-api-burst", "0"), "invalid value for --kube-api-burst:"),
    (("--event-qps", "fast"), "invalid value for --event-qps: 'fast' is not a valid float."),
    (("--event-burst", "0"), "invalid value for --event-burst:"),
    (("--resync-period", "30"), 'invalid value for --resync-period: time: missing unit in duration "30"'),
    (("--cache-sync-timeout", "0"), "invalid value for --cache-sync-timeout: 0.0 is not in the range x>0."),
    (("--resyc-period", "-1h"), "invalid value for --resyc-period: '-1h' is negative"),
    (("--metrics-bind-address", "8080"), "invalid value for --metrics-bind-address: bind address '8080'"),
    (("--health-probe-bind-address", "::1:8081"), "invalid value for --health-probe-bind-address:"),
    (("--namespace", "Team_A"), "invalid value for --namespace: 'Team_A' is not a valid namespace name"),
    (("--frameworks", "pytorch"), "invalid value for --frameworks: 'pytorch' is not one of mxnet, tensorflow"),
    (("--frameworks", ","), "invalid value for --frameworks: name at least one of mxnet, tensorflow"),
    (("--leader-elect=maybe",), "invalid value for --leader-elect: 'maybe' is not a valid boolean"),
    (("--json-log-format=nope",), "invalid value for --json-log-format:"),
    (("--log-level", "trace"), "invalid value for --log-level: 'trace' is not one of"),
    (("--leader-election-id", "Bad_Name"), "invalid value for --leader-election-id: 'Bad_Name'"),
    (("--leader-election-namespace", "a.b"), "invalid value for --leader-election-namespace: 'a.b'"),
    (("--gang-scheduler-name", "Not Valid"), "invalid value for --gang-scheduler-name: 'Not Valid'"),
    (("--gang-scheduler-name", "kube-batch", "--enable-gang-scheduling"),
     "--enable-gang-scheduling means --gang-scheduler-name=volcano, which contradicts"),
    (("--threadiness", "2", "--controller-threads", "3"),
     "--controller-threads (deprecated) and --threadiness disagree"),
    (("--no-such-flag",), "No such option '--no-such-flag'."),
    (("--threadiness",), "Option '--threadiness' requires an argument."),
]


@pytest.mark.parametrize(("args", "expected"), BAD, ids=[" ".join(a) for a, _ in BAD])
def test_bad_values_get_one_line_naming_the_flag(args, expected):
    assert expected in error(*args)


def test_a_bad_variable_is_named(monkeypatch):
    monkeypatch.setenv("MXJOB_THREADINESS", "zero")
    assert error().startswith("invalid value for --threadiness (from $MXJOB_THREADINESS): 'zero'")


def run_command(*args: str) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, "-m", "mxjob_controller", "run", *args], capture_output=True, text=True,
                          timeout=60, env=clean_env(), check=False)


@pytest.mark.integration
def test_the_process_exits_2_with_one_line():
    for args in (["--threadiness", "0"], ["--bogus"], ["--resync-period=1y"]):
        done = run_command(*args)
        assert done.returncode == 2, done
        assert done.stdout == ""
        lines = done.stderr.splitlines()
        assert len(lines) == 1 and lines[0].startswith("mxjob-controller run: "), done.stderr
    assert "--threadiness" in run_command("--threadiness", "0").stderr


@pytest.mark.integration
def test_the_deprecation_warning_is_printed_by_the_process(tmp_path):
    missing = tmp_path / "nope"
    done = run_command("--controller-threads", "2", "--kubeconfig", str(missing))
    warnings = [line for line in done.stderr.splitlines() if "deprecated" in line]
    assert len(warnings) == 1, done.stderr   # once, in the process's log format
    assert "--controller-threads is deprecated: use --threadiness" in warnings[0]
    assert done.returncode == 1   # then it goes on, and fails on the missing kubeconfig
    assert f"kubeconfig {missing} does not exist" in done.stderr


@pytest.mark.integration
def test_version():
    for args in (["run", "--version"], ["--version"]):
        done = subprocess.run([sys.executable, "-m", "mxjob_controller", *args], capture_output=True, text=True,
                              timeout=60, check=False)
        assert (done.returncode, done.stdout) == (0, f"mxjob-controller, version {__version__}\n")


def test_the_command_uses_the_fallback_chain(monkeypatch, tmp_path):
    sa = tmp_path / "sa"
    sa.mkdir()
    (sa / "namespace").write_text("kubeflow")
    monkeypatch.setattr(run_cli, "service_account_dir", str(sa))
    assert settings().leader_election_namespace == "kubeflow"
    monkeypatch.setenv("POD_NAMESPACE", "pod-ns")
    assert settings().leader_election_namespace == "pod-ns"
    assert settings("--leader-election-namespace", "ops").leader_election_namespace == "ops"


def test_the_service_account_directory_variable_is_read_when_the_settings_are_built(monkeypatch, tmp_path):
    """``$MXJOB_SERVICE_ACCOUNT_DIR`` set after the module was imported (as a launcher or a test sets it) counts."""
    for name in ("first", "second"):
        sa = tmp_path / name
        sa.mkdir()
        (sa / "namespace").write_text(f"ns-{name}")
        monkeypatch.setenv("MXJOB_SERVICE_ACCOUNT_DIR", str(sa))
        assert settings().leader_election_namespace == f"ns-{name}"


@pytest.mark.integration
def test_run_does_not_load_the_embedded_cluster():
    """The in-cluster controller's start-up: ``run`` (looked up as the command line does) imports nothing of
    ``mxjob_controller.local``, while ``local`` is still there to be found."""
    # (``local`` itself loads the cluster only when one of its commands runs: its commands are the real ones)
    probe = ("import sys; from mxjob_controller.cli import main; "
             "assert main.get_command(None, 'run') is not None; "
             "print(sorted(m for m in sys.modules if m.startswith('mxjob_controller.local'))); "
             "local = main.get_command(None, 'local'); "
             "print('mxjob_controller.cli.local' in sys.modules, sorted(local.commands))")
    out = subprocess.run([sys.executable, "-c", probe], check=True, capture_output=True, text=True, timeout=60,
                         env=clean_env()).stdout.splitlines()
    assert out == ["[]", "True ['run', 'up']"], out


def test_help_says_how_the_default_client_budget_is_chosen():
    """Issue 35: --help says when there is no client-side limit, the bucket otherwise, and that the flags win."""
    from click.testing import CliRunner

    text = " ".join(CliRunner().invoke(run_cli.run, ["--help"], terminal_width=1000).output.split())
    assert "no client-side limit when the server advertises API Priority and Fairness" in text
    assert "else 20/s" in text and "[default: 30, where a bucket applies]" in text
    assert "Given (this or --kube-api-burst): always this bucket" in text and "(-1: no limit)" in text


def test_help_documents_the_cache_sync_timeout():
    """Issue 35: the caches' initial-list limit is a flag (it was a fixed 60 s), in seconds, shown with its default."""
    from click.testing import CliRunner

    text = " ".join(CliRunner().invoke(run_cli.run, ["--help"], terminal_width=1000).output.split())
    assert "--cache-sync-timeout SECONDS" in text
    assert "Longest wait at start for the caches' initial lists" in text and "default: 60.0;" in text

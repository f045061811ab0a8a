"""One logging setup for the process (``logs.py``): JSON lines by default with ts/level/logger/msg and the job's
structured fields, readable text with ``--json-log-format=false``, ``--log-level``; and no token or password in any
line, proven by running the real process with credentials at debug level and searching everything it printed."""

from __future__ import annotations

import io
import json
import logging
import re
import secrets
import signal
import sys

import pytest
import yaml

from mxjob_controller.local.apiserver.http.faults import FaultRule
from mxjob_controller.logs import REDACTED, JSONFormatter, TextFormatter, register_secret, scrub, setup_logging
from tests.run_process import LOCAL_PORTS, RunProcess, clean_env, install_mxjob_crd, mxjob
from tests.support import wait_for

TS = re.compile(r"^\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d\.\d{3}Z$")
MXJOBS = "/apis/kubeflow.org/v1/namespaces/default/mxjobs"


def record(msg: str, *args: object, level: int = logging.INFO, exc: bool = False, **extra: object) -> logging.LogRecord:
    rec = logging.LogRecord("mxjob.test", level, __file__, 1, msg, args, sys.exc_info() if exc else None)
    rec.__dict__.update(extra)
    return rec


def test_json_lines_carry_the_fields_and_the_job_context():
    line = JSONFormatter().format(record("created pod %s", "j-worker-0", job_namespace="ns", job_name="j",
                                         job_uid="u-1", replica_type="Worker", replica_index=0, key="ns/j",
                                         attempt=2))
    parsed = json.loads(line)
    assert list(parsed)[:5] == ["ts", "level", "logger", "msg", "thread"]
    assert TS.match(parsed["ts"]) and parsed["level"] == "info" and parsed["logger"] == "mxjob.test"
    assert parsed["msg"] == "created pod j-worker-0"
    assert {k: parsed[k] for k in ("job_namespace", "job_name", "job_uid", "replica_type", "replica_index", "key")} \
        == {"job_namespace": "ns", "job_name": "j", "job_uid": "u-1", "replica_type": "Worker", "replica_index": 0,
            "key": "ns/j"}
    assert parsed["attempt"] == 2   # any other extra field too


def test_text_lines_are_readable():
    line = TextFormatter().format(record("created pod %s", "p", level=logging.WARNING, job_name="j",
                                         replica_index=3))
    assert re.match(r"^\S+Z warning mxjob\.test \[MainThread\] created pod p job_name=j replica_index=3$", line)


def test_exceptions_are_kept_and_scrubbed():
    register_secret("s3cr3t-in-an-exception")
    try:
        raise RuntimeError("request with Authorization: Bearer s3cr3t-in-an-exception failed")
    except RuntimeError:
        json_line = JSONFormatter().format(record("boom", level=logging.ERROR, exc=True))
        text = TextFormatter().format(record("boom", level=logging.ERROR, exc=True))
    assert "RuntimeError" in json.loads(json_line)["error"] and "Traceback" in text
    assert "s3cr3t" not in json_line and "s3cr3t" not in text


@pytest.mark.parametrize(("text", "expected"), [
    ("Authorization: Bearer abc.def-ghi", f"Authorization: Bearer {REDACTED}"),
    ('{"authorization": "Bearer abc"}', f'{{"authorization": "Bearer {REDACTED}"}}'),
    ("{'Authorization': 'Basic dXNlcjpwYXNzd29yZA=='}", f"{{'Authorization': 'Basic {REDACTED}'}}"),
    ("authorization=xyz123", f"authorization={REDACTED}"),
    ("GET /x?token=abc&watch=1", f"GET /x?token={REDACTED}&watch=1"),
    ("id_token: eyJhbGciOi", f"id_token: {REDACTED}"),
    ("the tokens are fine; tokenFile: /var/run/token", "the tokens are fine; tokenFile: /var/run/token"),
    ("created pod j-worker-0", "created pod j-worker-0"),
    ("API server https://admin:hunter22@10.0.0.1:6443", f"API server https://{REDACTED}@10.0.0.1:6443"),
    ("API server https://10.0.0.1:6443/api", "API server https://10.0.0.1:6443/api"),
])
def test_scrub_patterns(text, expected):
    assert scrub(text) == expected


def test_setup_is_one_handler_and_honours_the_level():
    root = logging.getLogger()
    saved = root.handlers[:], root.level
    stream = io.StringIO()
    try:
        setup_logging("warning", json_format=True)
        setup_logging("warning", json_format=True)
        assert len(root.handlers) == 1
        root.handlers[0].stream = stream
        logging.getLogger("x").info("hidden")
        logging.getLogger("x").warning("shown")
        assert [json.loads(line)["msg"] for line in stream.getvalue().splitlines()] == ["shown"]
        with pytest.raises(ValueError, match="log level 'trace'"):
            setup_logging("trace")
    finally:
        root.handlers[:], _ = saved[0], root.setLevel(saved[1])


# --- the real process ----------------------------------------------------------------------------------------


def token_kubeconfig(apiserver, path, **user: str) -> None:
    config = apiserver.kubeconfig()
    config["users"][0]["user"] = user
    path.write_text(yaml.safe_dump(config))


@pytest.mark.slow
def test_the_process_logs_json_by_default_with_job_fields(apiserver, kube, kubeconfig):
    install_mxjob_crd(apiserver)
    with RunProcess(["--kubeconfig", str(kubeconfig), *LOCAL_PORTS, "--log-level", "debug"]) as proc:
        proc.wait_running()
        assert kube.post(MXJOBS, mxjob("logged")).status == 201
        line = proc.wait_log(lambda r: r.get("job_name") == "logged", what="a line about the job")
        assert proc.stop()[0] == 0
    job = kube.get(f"{MXJOBS}/logged").body
    assert (line["job_namespace"], line["key"], line["job_uid"]) == ("default", "default/logged",
                                                                     job["metadata"]["uid"])
    lines = proc.output().splitlines()
    parsed = [json.loads(text) for text in lines]       # every line is JSON
    assert all(TS.match(p["ts"]) and p["level"] in ("debug", "info", "warning", "error") for p in parsed)
    assert {"ts", "level", "logger", "msg", "thread"} <= set(parsed[0])


@pytest.mark.slow
def test_the_process_logs_text_when_asked_and_honours_the_level(apiserver, kubeconfig):
    install_mxjob_crd(apiserver)
    with RunProcess(["--kubeconfig", str(kubeconfig), *LOCAL_PORTS, "--json-log-format=false"]) as proc:
        wait_for(lambda: "controller running" in proc.output(), timeout=30, what="controller running")
        assert proc.stop()[0] == 0
    text = proc.output()
    assert not text.lstrip().startswith("{")
    assert re.search(r"^\S+Z info +mxjob_controller\.manager\.process \[\S+\] stopped cleanly$", text, re.M), text
    quiet = RunProcess(["--master", "http://127.0.0.1:1", *LOCAL_PORTS, "--log-level", "error"]).start()
    assert quiet.wait_exit(60) == 1
    assert [r["level"] for r in quiet.records()] == ["error"]   # "cannot start: ...", and no urllib3 warnings


@pytest.mark.slow
def test_no_token_or_password_is_ever_logged(apiserver, kube, tmp_path):
    """A kubeconfig token, a token file and basic-auth credentials, at debug level, through start, reconciles,
    retried server errors and a graceful stop: none of them appears anywhere in the output."""
    install_mxjob_crd(apiserver)
    token, file_token, password = (f"tok-{secrets.token_hex(12)}", f"ftok-{secrets.token_hex(12)}",
                                   f"pw-{secrets.token_hex(12)}")
    (tmp_path / "token").write_text(file_token)
    with_token = tmp_path / "token.kubeconfig"
    token_kubeconfig(apiserver, with_token, token=token)
    with_file = tmp_path / "file.kubeconfig"
    token_kubeconfig(apiserver, with_file, tokenFile=str(tmp_path / "token"))
    with_password = tmp_path / "password.kubeconfig"
    token_kubeconfig(apiserver, with_password, username="admin", password=password)
    apiserver.faults.add(FaultRule(verb="list", resource="mxjobs", code=500, count=2))
    outputs = []
    for config in (with_token, with_file, with_password):
        with RunProcess(["--kubeconfig", str(config), *LOCAL_PORTS, "--log-level", "debug"]) as proc:
            proc.wait_running()
            assert kube.post(MXJOBS, mxjob(f"j-{config.stem}")).status == 201
            proc.wait_log(lambda r, stem=config.stem: r.get("job_name") == f"j-{stem}", what="the job reconciled")
            assert proc.stop(signal.SIGTERM)[0] == 0
        outputs.append(proc.output())
    everything = "\n".join(outputs)
    assert "500" in everything or "InternalError" in everything     # the failing lists were logged...
    for secret in (token, file_token, password):
        assert secret not in everything                              # ...without credentials


@pytest.mark.slow
def test_no_in_cluster_token_is_logged(apiserver, tmp_path):
    """In a pod: the service-account token is read from its mount; even when the connection fails (here: https
    to a plain-http server), the token is not in the output."""
    token = f"sa-{secrets.token_hex(16)}"
    sa = tmp_path / "serviceaccount"
    sa.mkdir()
    (sa / "token").write_text(token)
    (sa / "namespace").write_text("kubeflow")
    port = apiserver.url.rsplit(":", 1)[1]
    launcher = ("import sys, importlib; run = importlib.import_module('mxjob_controller.cli.run'); "
                "run.service_account_dir = sys.argv[1]; from mxjob_controller.cli import main; "
                "main(['run', *sys.argv[2:]])")
    env = clean_env(KUBERNETES_SERVICE_HOST="127.0.0.1", KUBERNETES_SERVICE_PORT=port)
    proc = RunProcess([], env=env, argv=[sys.executable, "-c", launcher, str(sa), *LOCAL_PORTS, "--log-level",
                                         "debug"]).start()
    assert proc.wait_exit(60) == 1
    error = next(r for r in proc.records() if r["level"] == "error")
    assert error["msg"].startswith(f"cannot start: cannot reach the API server at https://127.0.0.1:{port} "
                                   "(in-cluster service account)")
    assert token not in proc.output()

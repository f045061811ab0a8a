"""``mxjob-controller run`` as a separate process, as a user (or a Deployment) runs it, observed from outside.

    proc = RunProcess(["--kubeconfig", str(kubeconfig), "--metrics-bind-address", "127.0.0.1:0"]).start()
    proc.wait_log(lambda r: r.get("msg") == "controller running")
    status, body = proc.get("/metrics")
    code, seconds = proc.stop(signal.SIGTERM)

Its stderr is read on a named thread as it comes, each line kept raw and, when it is JSON, parsed. The endpoint
URLs come from the ``endpoints serving`` line (ports are picked by the OS: ``127.0.0.1:0``).
"""

from __future__ import annotations

import contextlib
import http.client
import json
import os
import signal
import subprocess
import sys
import threading
import time
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any

import yaml
from prometheus_client.parser import text_string_to_metric_families

from mxjob_controller.cli.local import packaged_crds
from tests.support import wait_for

UA_PREFIX = "mxjob-controller/"
LOCAL_PORTS = ["--metrics-bind-address", "127.0.0.1:0", "--health-probe-bind-address", "127.0.0.1:0"]


def clean_env(**extra: str) -> dict[str, str]:
    """The test's environment without anything that would configure the controller behind the test's back."""
    env = {k: v for k, v in os.environ.items()
           if not k.startswith("MXJOB_") and k not in ("KUBECONFIG", "POD_NAMESPACE", "KUBERNETES_SERVICE_HOST",
                                                        "KUBERNETES_SERVICE_PORT")}
    env.update(extra)
    return env


def install_mxjob_crd(apiserver: Any) -> None:
    """The packaged MXJob CRD only (``run`` then reconciles MXJobs, warning that the TFJob CRD is missing)."""
    install_crds(apiserver, "MXJob")


def install_crds(apiserver: Any, *kinds: str) -> None:
    """The packaged CRDs of ``kinds`` (default: every one), as ``local up`` applies them."""
    for crd in packaged_crds():
        if not kinds or crd["spec"]["names"]["kind"] in kinds:
            apiserver.create(crd)


def mxjob(name: str, namespace: str = "default") -> dict:
    """A minimal valid MXJob (one worker)."""
    example = yaml.safe_load((Path(__file__).parent.parent / "examples" / "mxjob-single-worker.yaml").read_text())
    example["metadata"] = {"name": name, "namespace": namespace}
    return example


class RunProcess:
    def __init__(self, args: Sequence[str], *, env: dict[str, str] | None = None,
                 argv: Sequence[str] | None = None) -> None:
        self.argv = list(argv) if argv is not None else [sys.executable, "-m", "mxjob_controller", "run", *args]
        self.env = env if env is not None else clean_env()
        self.lines: list[str] = []
        self._lock = threading.Lock()
        self._changed = threading.Condition(self._lock)
        self.proc: subprocess.Popen | None = None
        self._reader: threading.Thread | None = None

    def start(self) -> RunProcess:
        self.proc = subprocess.Popen(self.argv, stdin=subprocess.DEVNULL, stdout=subprocess.PIPE,
                                     stderr=subprocess.STDOUT, text=True, env=self.env)
        self._reader = threading.Thread(target=self._read, name=f"run-process-{self.proc.pid}-output", daemon=True)
        self._reader.start()
        return self

    def _read(self) -> None:
        assert self.proc is not None and self.proc.stdout is not None
        for line in self.proc.stdout:
            with self._changed:
                self.lines.append(line.rstrip("\n"))
                self._changed.notify_all()

    # --- what it said -----------------------------------------------------------------------------------

    def records(self) -> list[dict[str, Any]]:
        """Every JSON log line so far, parsed."""
        out = []
        with self._lock:
            lines = list(self.lines)
        for line in lines:
            try:
                parsed = json.loads(line)
            except ValueError:
                continue
            if isinstance(parsed, dict):
                out.append(parsed)
        return out

    def output(self) -> str:
        with self._lock:
            return "\n".join(self.lines)

    def wait_log(self, predicate: Callable[[dict[str, Any]], bool], timeout: float = 30.0,
                 what: str = "") -> dict[str, Any]:
        def found() -> dict[str, Any] | None:
            if self.proc is not None and self.proc.poll() is not None and self._reader is not None:
                self._reader.join(5)
                match = next((r for r in self.records() if predicate(r)), None)
                if match is None:
                    raise AssertionError(f"the process exited ({self.proc.returncode}) before logging {what}:\n"
                                         f"{self.output()}")
                return match
            return next((r for r in self.records() if predicate(r)), None)
        return wait_for(found, timeout=timeout, interval=0.05, what=what or "a log line")

    def wait_running(self, timeout: float = 30.0) -> RunProcess:
        self.wait_log(lambda r: r.get("msg") == "controller running", timeout, "the controller running")
        return self

    def endpoint(self, which: str) -> str:
        """``metrics_url`` or ``probes_url`` from the endpoints line."""
        rec = self.wait_log(lambda r: r.get("msg") == "endpoints serving", what="the endpoints line")
        return str(rec[which])

    def get(self, path: str) -> tuple[int, str]:
        """GET ``/metrics``, ``/healthz`` or ``/readyz`` (with any query) from this process."""
        base = self.endpoint("metrics_url").removesuffix("/metrics") if path.startswith("/metrics") \
            else self.endpoint("probes_url")
        host, port = base.removeprefix("http://").rsplit(":", 1)
        conn = http.client.HTTPConnection(host, int(port), timeout=10)
        try:
            conn.request("GET", path)
            resp = conn.getresponse()
            return resp.status, resp.read().decode()
        finally:
            conn.close()

    def metric(self, metric: str, /, **labels: str) -> float | None:
        """One sample's value from ``/metrics`` (None when absent)."""
        _status, text = self.get("/metrics")
        for family in text_string_to_metric_families(text):
            for sample in family.samples:
                if sample.name == metric and all(sample.labels.get(k) == v for k, v in labels.items()):
                    return sample.value
        return None

    # --- lifecycle --------------------------------------------------------------------------------------

    def wait_exit(self, timeout: float = 30.0) -> int:
        assert self.proc is not None
        code = self.proc.wait(timeout)
        if self._reader is not None:
            self._reader.join(5)
        return code

    def stop(self, sig: int = signal.SIGTERM, timeout: float = 15.0) -> tuple[int, float]:
        """Send ``sig`` and wait for the exit: (exit code, seconds it took)."""
        assert self.proc is not None
        started = time.monotonic()
        self.proc.send_signal(sig)
        try:
            code = self.wait_exit(timeout)
        except subprocess.TimeoutExpired:  # stuck: its threads' stacks (SIGQUIT) say where
            self.proc.send_signal(signal.SIGQUIT)
            with contextlib.suppress(subprocess.TimeoutExpired):
                self.wait_exit(10)
            raise AssertionError(f"no exit within {timeout:g}s of {signal.Signals(sig).name}; its output, ending "
                                 f"with every thread's stack:\n{self.output()[-20000:]}") from None
        return code, time.monotonic() - started

    def kill(self) -> None:
        if self.proc is not None and self.proc.poll() is None:
            self.proc.kill()
            self.proc.wait(10)
        if self._reader is not None:
            self._reader.join(5)

    def __enter__(self) -> RunProcess:
        return self.start()

    def __exit__(self, *exc: object) -> None:
        self.kill()

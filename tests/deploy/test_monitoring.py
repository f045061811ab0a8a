"""``manifests/monitoring/`` used by the real tools: ``promtool`` checks the alert rules and runs a unit test of each
alert (``tests/monitoring/alerts_test.yaml``), and a real Prometheus scrapes ``mxjob-controller run``'s ``/metrics``
while jobs run on the local cluster, loads the same rules, evaluates every dashboard query, and answers PromQL with
the true job counts.

Prometheus and promtool are Debian's ``prometheus`` package, which ``make test`` installs where they are missing
(``make monitoring-tools``).
"""

from __future__ import annotations

import json
import math
import shutil
import subprocess
import urllib.error
import urllib.parse
import urllib.request
from pathlib import Path
from typing import Any

import pytest
import yaml

from tests.local_support import PYTHON, local_cluster
from tests.manifests import MANIFESTS
from tests.run_process import LOCAL_PORTS, RunProcess
from tests.support import free_port, wait_for

pytestmark = pytest.mark.slow

MONITORING = MANIFESTS / "monitoring"
UNIT_TESTS = Path(__file__).resolve().parents[1] / "monitoring" / "alerts_test.yaml"
MXJOBS = "/apis/kubeflow.org/v1/namespaces/default/mxjobs"


def tool(name: str) -> str:
    found = shutil.which(name)
    if found is None:
        pytest.fail(f"{name} is not installed: `make monitoring-tools` installs Debian's prometheus package")
    return found


def rule_groups() -> dict[str, Any]:
    """The PrometheusRule's groups as a plain Prometheus rule file."""
    rule = yaml.safe_load((MONITORING / "prometheusrule.yaml").read_text())
    return {"groups": rule["spec"]["groups"]}


def alert_names() -> list[str]:
    return [r["alert"] for group in rule_groups()["groups"] for r in group["rules"] if "alert" in r]


def dashboard_queries() -> list[str]:
    return [expr for exprs in dashboard_panels().values() for expr in exprs]


def dashboard_panels() -> dict[str, list[str]]:
    """Each panel's title → its queries."""
    dashboard = json.loads((MONITORING / "dashboard.json").read_text())
    return {panel["title"]: [target["expr"] for target in panel["targets"]] for panel in dashboard["panels"]}


# --- promtool ------------------------------------------------------------------------------------------------------

def test_promtool_checks_the_rules_and_every_alert_has_a_unit_test_that_fires_it(tmp_path):
    (tmp_path / "rules.yaml").write_text(yaml.safe_dump(rule_groups()))
    shutil.copy(UNIT_TESTS, tmp_path / UNIT_TESTS.name)
    checked = subprocess.run([tool("promtool"), "check", "rules", "rules.yaml"], cwd=tmp_path, capture_output=True,
                             text=True, timeout=60, check=False)
    assert checked.returncode == 0, checked.stdout + checked.stderr
    rules = [rule for group in rule_groups()["groups"] for rule in group["rules"]]
    assert f"SUCCESS: {len(rules)} rules found" in checked.stdout
    tested = subprocess.run([tool("promtool"), "test", "rules", UNIT_TESTS.name], cwd=tmp_path, capture_output=True,
                            text=True, timeout=120, check=False)
    assert tested.returncode == 0, tested.stdout + tested.stderr
    firing = {case["alertname"] for test in yaml.safe_load(UNIT_TESTS.read_text())["tests"]
              for case in test.get("alert_rule_test") or () if case.get("exp_alerts")}
    assert sorted(firing) == sorted(alert_names())


# --- a real Prometheus -----------------------------------------------------------------------------------------------


class Prometheus:
    """A Prometheus process scraping one target every second, with the project's rules loaded."""

    def __init__(self, tmp_path: Path, target: str) -> None:
        self.port = free_port()
        (tmp_path / "rules.yaml").write_text(yaml.safe_dump(rule_groups()))
        (tmp_path / "prometheus.yml").write_text(yaml.safe_dump({
            "global": {"scrape_interval": "1s", "evaluation_interval": "1s"},
            "rule_files": [str(tmp_path / "rules.yaml")],
            "scrape_configs": [{"job_name": "mxjob-controller-metrics", "static_configs": [{"targets": [target]}]}]}))
        self.log = (tmp_path / "prometheus.log").open("w")
        self.proc = subprocess.Popen([tool("prometheus"), f"--config.file={tmp_path / 'prometheus.yml'}",
                                      f"--storage.tsdb.path={tmp_path / 'data'}",
                                      f"--web.listen-address=127.0.0.1:{self.port}"],
                                     stdout=self.log, stderr=subprocess.STDOUT, stdin=subprocess.DEVNULL)
        self.logfile = tmp_path / "prometheus.log"

    def api(self, path: str, **params: str) -> Any:
        url = f"http://127.0.0.1:{self.port}/api/v1/{path}?{urllib.parse.urlencode(params)}"
        try:
            with urllib.request.urlopen(url, timeout=10) as reply:
                body = json.loads(reply.read())
        except urllib.error.HTTPError as e:
            body = json.loads(e.read())
        assert body["status"] == "success", f"{path} {params}: {body}"
        return body["data"]

    def ready(self) -> bool:
        assert self.proc.poll() is None, f"prometheus exited:\n{self.logfile.read_text()}"
        try:
            with urllib.request.urlopen(f"http://127.0.0.1:{self.port}/-/ready", timeout=5) as reply:
                return reply.status == 200
        except OSError:
            return False

    def value(self, query: str) -> float | None:
        """The single value of an instant query (None while it has no sample)."""
        result = self.api("query", query=query)["result"]
        return float(result[0]["value"][1]) if result else None

    def stop(self) -> None:
        self.proc.terminate()
        try:
            self.proc.wait(15)
        except subprocess.TimeoutExpired:
            self.proc.kill()
            self.proc.wait(10)
        self.log.close()


def mxjob(name: str, exit_code: int) -> dict[str, Any]:
    container = {"name": "mxnet", "image": "python:3.11-slim",
                 "command": [PYTHON, "-c", f"print('job {name}'); raise SystemExit({exit_code})"]}
    return {"apiVersion": "kubeflow.org/v1", "kind": "MXJob", "metadata": {"name": name},
            "spec": {"runPolicy": {"cleanPodPolicy": "None"},
                     "mxReplicaSpecs": {"Worker": {"replicas": 1, "restartPolicy": "Never",
                                                   "template": {"spec": {"containers": [container]}}}}}}


def finished(kube: Any, name: str) -> bool:
    job = kube.get(f"{MXJOBS}/{name}").body
    return any(c["type"] in ("Succeeded", "Failed") and c["status"] == "True"
               for c in (job.get("status") or {}).get("conditions") or ())


def test_a_real_prometheus_scrapes_run_and_answers_the_true_job_counts(tmp_path):
    # In two rounds: Prometheus scrapes the counters after the first, so that their increases over the second are
    # something to check the per-hour panels by (a series is born with its first job: its first sample is no
    # increase).
    rounds = [{"ok-1": 0, "broken-1": 3}, {"ok-2": 0, "ok-3": 0, "broken-2": 3}]
    with local_cluster(tmp_path) as (cluster, kube, _kubectl):
        kubeconfig = cluster.server.write_kubeconfig(tmp_path / "run-kubeconfig")
        with RunProcess(["--kubeconfig", str(kubeconfig), *LOCAL_PORTS]) as run:
            run.wait_running()
            target = run.endpoint("metrics_url").removeprefix("http://").removesuffix("/metrics")
            prometheus = Prometheus(tmp_path, target)
            try:
                wait_for(prometheus.ready, timeout=60, interval=0.2, what="Prometheus ready")
                for outcomes, truth in zip(rounds, ({"created": 2, "successful": 1, "failed": 1},
                                                    {"created": 5, "successful": 3, "failed": 2}), strict=True):
                    for name, code in outcomes.items():
                        assert kube.post(MXJOBS, mxjob(name, code)).status == 201
                    for name in outcomes:
                        wait_for(lambda n=name: finished(kube, n), timeout=90, interval=0.2, what=f"job {name} ended")
                    for counter, count in truth.items():
                        query = (f'sum(training_operator_jobs_{counter}_total{{framework="mxnet",'
                                 'job_namespace="default"})')
                        wait_for(lambda q=query, c=count: prometheus.value(q) == c, timeout=30, interval=0.5,
                                 what=f"{query} == {count} (last: {prometheus.value(query)})")
                assert prometheus.value('sum(mxjob_controller_jobs{framework="mxnet",state="Succeeded"})') == 3
                assert prometheus.value('sum(mxjob_controller_jobs{framework="mxnet",state="Failed"})') == 2
                assert prometheus.value('up{job="mxjob-controller-metrics"}') == 1
                rules = [r for g in prometheus.api("rules")["groups"] for r in g["rules"]]
                assert sorted(r["name"] for r in rules) == sorted(alert_names())
                def evaluated() -> list[dict[str, Any]] | None:
                    rules = [r for g in prometheus.api("rules")["groups"] for r in g["rules"]]
                    return rules if all(r["health"] != "unknown" for r in rules) else None
                evaluations = wait_for(evaluated, timeout=15, interval=0.5, what="every rule evaluated")
                assert [(r["name"], r.get("lastError")) for r in evaluations if r["health"] != "ok"] == []
                for query in dashboard_queries():
                    prometheus.api("query", query=query)     # a dashboard query Prometheus cannot run fails here
                check_dashboard_against_the_truth(prometheus, run.proc.pid)
            finally:
                prometheus.stop()
            assert run.stop()[0] == 0


def check_dashboard_against_the_truth(prometheus: Prometheus, pid: int) -> None:
    """Every panel's value after 3 jobs succeeded and 2 failed, against what is true: the states and gauges as they
    are, the per-hour increases (extrapolated by Prometheus, so not whole numbers) by how they must relate, and the
    panels of what this run does not do (restarts, webhooks, leader election) empty."""
    panels = dashboard_panels()
    assert all(len(queries) == 1 for queries in panels.values()), panels

    def last_scrape() -> str | None:
        """A scrape Prometheus has stored, two after the counters reached their last values: every query is asked
        at that instant, so that each sees the same samples (a scrape in flight later cannot change one of them)."""
        result = prometheus.api("query", query="training_operator_jobs_successful_total[1m]")["result"]
        values = result[0]["values"] if result else []
        final = [stamp for stamp, value in values if float(value) == 3]
        return f"{final[-1]:.3f}" if len(final) >= 3 else None
    at = wait_for(last_scrape, timeout=30, interval=0.5, what="three scrapes of the final counts")

    def series(title: str, query: str | None = None) -> dict[tuple[tuple[str, str], ...], float]:
        result = prometheus.api("query", query=query or panels[title][0], time=at)["result"]
        return {tuple(sorted(r["metric"].items())): float(r["value"][1]) for r in result}

    def only(title: str) -> float:
        found = series(title)
        assert len(found) == 1, (title, found)
        return next(iter(found.values()))

    mxnet = (("framework", "mxnet"),)
    successes = series("", 'sum by (framework) (increase(training_operator_jobs_successful_total[1h]))')
    failures = series("Job failures per hour")
    assert set(successes) == set(failures) == {mxnet} and successes[mxnet] > 0 and failures[mxnet] > 0
    succeeded = successes[mxnet]
    ended = series("Jobs ended per hour")
    # both outcomes counted (an `or` of identically-labelled series kept the successes only)
    assert set(ended) == {mxnet} and abs(ended[mxnet] - (succeeded + failures[mxnet])) < 1e-9, (ended, succeeded)
    created = series("Jobs created per hour")
    assert set(created) == {mxnet} and created[mxnet] > 0
    assert series("Job restarts per hour") == {}, "no job restarted"
    assert series("Jobs by state") == {(("framework", "mxnet"), ("state", "Failed")): 2.0,
                                       (("framework", "mxnet"), ("state", "Succeeded")): 3.0}
    waiting = series("Oldest waiting job")   # every framework the controller runs: none waits
    assert mxnet in waiting and set(waiting.values()) == {0.0}, waiting
    reconciles = series("Reconciles per second")
    assert reconciles.get((("controller", "mxjob-controller"), ("result", "success")), 0) > 0, reconciles
    assert all(v == 0 for v in series("Reconcile errors per second").values())
    p99 = series("Reconcile time, p99")   # the controllers that reconciled nothing have no quantile (NaN)
    assert p99[(("controller", "mxjob-controller"),)] > 0, p99
    wait_for(lambda: series("Work queue depth") and all(v == 0 for v in series("Work queue depth").values()),
             timeout=30, interval=0.5, what="the work queue drained")
    in_queue = series("Time in queue, p99")
    assert in_queue[(("name", "mxjob-controller"),)] >= 0 and all(v >= 0 or math.isnan(v) for v in in_queue.values())
    assert series("Webhook requests by code") == {}, "run serves no webhook at its defaults"
    assert series("Leader") == {}, "no leader election without --leader-elect"
    assert only("Controller CPU") > 0
    rss_kib = next(int(line.split()[1]) for line in Path(f"/proc/{pid}/status").read_text().splitlines()
                   if line.startswith("VmRSS:"))
    assert abs(only("Controller memory") - rss_kib * 1024) < 0.25 * rss_kib * 1024, "the process's own RSS"

"""The end-to-end run, as a user does it: ``mxjob-controller local up`` and ``mxjob-controller run`` as separate
processes, the install (or an overlay for one framework) applied with ``kubectl apply -k``, an example job of each
framework it installs (an MXJob, a TFJob, a GenericJob) submitted with ``kubectl``, a stand-in kubelet moving their
pods, and the controller stopped with SIGTERM. Run from the checkout (``test_e2e_run.py``) and from an install of
the wheel alone (``test_wheel.py``): the same steps, another ``mxjob-controller``.

The run also walks the controller's rarer paths, so that its audit log exercises every permission the manifests
grant: a pod and a service already holding wanted names (create → 409 → get → adopt by patching labels), a user
deleting a Pending pod (recreated: the repeated event becomes a PATCH of its count), one injected conflict on the
status write (re-read with a GET), a scale-down (pod and service deleted), the Kubeflow jobs deleted by their TTL,
the GenericJob asking for the T9k scheduler (its PodGroup created, and deleted once it has finished: the cluster
serves a stand-in T9k PodGroup CRD), a standby replica watching the Lease and taking over when the leader stops.
"""

from __future__ import annotations

import json
import signal
import subprocess
import time
from collections.abc import Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from tests.gang_support import t9k_crd
from tests.kubelet_sim import KubeletSim
from tests.manifests import INSTALL_NAMESPACE, MANIFESTS, ROOT, find, render
from tests.run_process import UA_PREFIX, RunProcess, clean_env
from tests.support import Kube, Kubectl, wait_for

NS = "default"
TTL_SECONDS = 3


@dataclass(frozen=True)
class Scenario:
    """One framework's job through the run: its example, the children it makes, how it is scaled and finished."""

    framework: str           # the --frameworks name, and the metrics' framework label
    kind: str
    plural: str
    manifest: str            # the job, as `kubectl create -f -` takes it (an example's text)
    job: str
    scale_down: tuple[str, str]  # (kubectl patch --type, the patch) taking the job from two workers to one
    container: str           # the framework's container name
    operator: str            # the operator-name label value of its children
    children: frozenset[str]  # "<type>-<index>" of every child the example makes
    decider: str             # the replica whose success ends the job
    api_version: str = "kubeflow.org/v1"
    # T9k's job model (GenericJob): a phase beside the conditions, no TTL (the job stays), and the T9k scheduler's
    # PodGroup (its own API groups: nothing else asks for them).
    t9k: bool = False

    @property
    def group(self) -> str:
        return self.api_version.split("/")[0]

    @property
    def crd_name(self) -> str:
        return f"{self.plural}.{self.group}"

    @property
    def own_groups(self) -> tuple[str, ...]:
        """The API groups only this framework asks for (kubeflow.org is MXJob's and TFJob's)."""
        return (self.group, "scheduler.tensorstack.dev") if self.t9k else ()

    @property
    def path(self) -> str:
        return f"/apis/{self.api_version}/namespaces/{NS}/{self.plural}/{self.job}"

    @property
    def podgroup_path(self) -> str:
        return f"/apis/scheduler.tensorstack.dev/v1beta1/namespaces/{NS}/podgroups/{self.job}"

    def reached(self, state: dict[str, str], milestone: str) -> bool:
        """Whether the job's :func:`state` shows it ``created``, ``running`` or ``succeeded``."""
        if self.t9k:
            return {"created": state.get("Initialized") == "True", "running": state.get("phase") == "Running",
                    "succeeded": state.get("phase") == "Succeeded"}[milestone]
        return state.get(milestone.capitalize()) == "True"

    @property
    def final(self) -> dict[str, str]:
        """Its :func:`state` at the end."""
        if self.t9k:
            return {"phase": "Succeeded", "Initialized": "True", "Running": "False", "ReplicaFailure": "False",
                    "Completed": "True", "Failed": "False"}
        return {"Created": "True", "Running": "False", "Succeeded": "True"}

    @property
    def counted(self) -> dict[str, float | None]:
        """Its job counters at the end (a GenericJob is never deleted: no TTL)."""
        return {"created": 1.0, "successful": 1.0, "deleted": None if self.t9k else 1.0}

    @property
    def label(self) -> str:
        return f"training.kubeflow.org/operator-name={self.operator}"

    @property
    def status_conflict(self) -> str:
        return f"verb=patch,resource={self.plural},subresource=status,code=409,count=1"

    def names(self, suffixes: set[str] | frozenset[str]) -> set[str]:
        return {f"{self.job}-{n}" for n in suffixes}


def _kubeflow_scale_down(specs: str) -> tuple[str, str]:
    return "merge", json.dumps({"spec": {specs: {"Worker": {"replicas": 1}}}})


MXNET = Scenario("mxnet", "MXJob", "mxjobs", (ROOT / "examples" / "mxjob-dist-train.yaml").read_text(), "mxnet-dist",
                 _kubeflow_scale_down("mxReplicaSpecs"), "mxnet", "mxjob-controller",
                 frozenset({"scheduler-0", "server-0", "server-1", "worker-0", "worker-1"}), "scheduler-0")
TENSORFLOW = Scenario("tensorflow", "TFJob", "tfjobs",
                      (ROOT / "examples" / "tensorflow" / "tfjob-dist.yaml").read_text(), "tf-dist",
                      _kubeflow_scale_down("tfReplicaSpecs"), "tensorflow", "tfjob-controller",
                      frozenset({"chief-0", "ps-0", "worker-0", "worker-1"}), "chief-0")
#: Two workers with a Service each, on the T9k scheduler; no success rule: it succeeds when every replica has.
GENERIC_JOB = {
    "apiVersion": "batch.tensorstack.dev/v1beta1", "kind": "GenericJob", "metadata": {"name": "generic-dist"},
    "spec": {"scheduler": {"t9kScheduler": {"queue": "default"}},
             "service": {"ports": [{"name": "http", "port": 2222}]},
             "replicaSpecs": [{"type": "worker", "replicas": 2, "template": {"spec": {"containers": [
                 {"name": "main", "image": "python:3.11-slim", "command": ["python", "-c", "pass"]}]}}}]}}
GENERIC = Scenario("generic", "GenericJob", "genericjobs", json.dumps(GENERIC_JOB), "generic-dist",
                   ("json", json.dumps([{"op": "replace", "path": "/spec/replicaSpecs/0/replicas", "value": 1}])),
                   "main", "genericjob-controller", frozenset({"worker-0", "worker-1"}), "worker-0",
                   api_version="batch.tensorstack.dev/v1beta1", t9k=True)
#: Which scenarios an install (a directory under manifests/) runs.
INSTALLS = {"install": (MXNET, TENSORFLOW, GENERIC), "overlays/mxnet-only": (MXNET,),
            "overlays/tensorflow-only": (TENSORFLOW,), "overlays/generic-only": (GENERIC,)}


@dataclass
class Outcome:
    audit: list[dict[str, Any]] = field(default_factory=list)     # every request the controller made
    stop_seconds: list[float] = field(default_factory=list)       # SIGTERM to exit, per process
    handover_seconds: float = 0.0
    conditions: dict[str, dict[str, str]] = field(default_factory=dict)      # kind → its state(), at the end
    metrics: dict[str, dict[str, float | None]] = field(default_factory=dict)   # kind → counter → value
    standby_reconciles: float | None = None
    outputs: list[str] = field(default_factory=list)


def deployment_args(install: str) -> list[str]:
    """The Deployment's own arguments, with the endpoints on free local ports (several processes, one host)."""
    args = find(render(install), "Deployment", "mxjob-controller")["spec"]["template"]["spec"]["containers"][0]
    out = []
    for arg in args["args"]:
        flag = arg.split("=", 1)[0]
        out.append(f"{flag}=127.0.0.1:0" if flag in ("--metrics-bind-address", "--health-probe-bind-address")
                   else arg)
    return out


def state(kube: Kube, scenario: Scenario) -> dict[str, str]:
    """The job's conditions (type → status), and a T9k job's phase (``phase``)."""
    status = kube.get(scenario.path).body.get("status") or {}
    out = {c["type"]: c["status"] for c in status.get("conditions") or ()}
    if scenario.t9k:
        out["phase"] = status.get("phase") or ""
    return out


def pods(kube: Kube, scenario: Scenario) -> dict[str, dict]:
    items = kube.get(f"/api/v1/namespaces/{NS}/pods", labelSelector=scenario.label).body["items"]
    return {p["metadata"]["name"]: p for p in items}


def services(kube: Kube, scenario: Scenario) -> set[str]:
    items = kube.get(f"/api/v1/namespaces/{NS}/services", labelSelector=scenario.label).body["items"]
    return {s["metadata"]["name"] for s in items}


def squatters(job: dict, scenario: Scenario) -> list[dict]:
    """A pod and a service with names the controller will want, controlled by the job, without its labels."""
    owner = {"apiVersion": scenario.api_version, "kind": scenario.kind, "name": scenario.job,
             "uid": job["metadata"]["uid"], "controller": True, "blockOwnerDeletion": True}
    meta = {"name": f"{scenario.job}-worker-1", "namespace": NS, "ownerReferences": [owner]}
    return [{"apiVersion": "v1", "kind": "Pod", "metadata": meta,
             "spec": {"restartPolicy": "Never", "containers": [{"name": scenario.container,
                                                                "image": "python:3.11-slim"}]}},
            {"apiVersion": "v1", "kind": "Service", "metadata": meta,
             "spec": {"clusterIP": "None", "ports": [{"name": "port", "port": 9091}],
                      "selector": {"training.kubeflow.org/job-name": scenario.job}}}]


def no_children_of(pid: int) -> bool:
    for stat in Path("/proc").glob("[0-9]*/stat"):
        try:
            fields = stat.read_text().rsplit(")", 1)[1].split()
        except (OSError, IndexError):
            continue
        if int(fields[1]) == pid:
            return False
    return True


def stop(proc: RunProcess, outcome: Outcome) -> None:
    assert proc.proc is not None and no_children_of(proc.proc.pid), "the controller started a child process"
    code, seconds = proc.stop(signal.SIGTERM)
    outcome.stop_seconds.append(seconds)
    outcome.outputs.append(proc.output())
    assert code == 0, proc.output()
    messages = [r["msg"] for r in proc.records()]
    assert "stopped cleanly" in messages, proc.output()
    assert not [m for m in messages if m.startswith("threads still running")], proc.output()


def submit(kubectl: Kubectl, kube: Kube, scenario: Scenario) -> None:
    """The example created with kubectl, a TTL patched in (inline, the older APIs' way: the only path that
    deletes a job; a GenericJob has none), and the squatters created."""
    kubectl.ok("create", "-f", "-", input=scenario.manifest)
    if not scenario.t9k:
        kubectl.ok("patch", scenario.plural, scenario.job, "--type", "merge", "-p",
                   json.dumps({"spec": {"ttlSecondsAfterFinished": TTL_SECONDS}}))
    job = kube.get(scenario.path).body
    for obj in squatters(job, scenario):
        kubectl.ok("create", "-f", "-", input=json.dumps(obj))


def walk(kubectl: Kubectl, kube: Kube, scenario: Scenario, outcome: Outcome) -> None:
    """The job from its children through Running and a scale-down to Succeeded and its TTL (a GenericJob: its
    PodGroup deleted)."""
    every = scenario.names(scenario.children)
    wait_for(lambda: set(pods(kube, scenario)) == every and services(kube, scenario) == every, timeout=30,
             what=f"the {scenario.kind}'s pods and services, the squatters adopted")
    wait_for(lambda: scenario.reached(state(kube, scenario), "created"), timeout=30, what="created")
    if scenario.t9k:
        assert kube.get(scenario.podgroup_path).ok, "the PodGroup made before the pods"
        made = pods(kube, scenario)[f"{scenario.job}-worker-0"]   # (worker-1 is the adopted squatter)
        assert made["spec"].get("schedulerName") == "t9k-scheduler", made["spec"]

    # A user deletes a Pending pod: it is recreated under the same name.
    worker0 = f"{scenario.job}-worker-0"
    first_uid = pods(kube, scenario)[worker0]["metadata"]["uid"]
    kubectl.ok("delete", "pod", worker0, "--wait=false")
    wait_for(lambda: (p := pods(kube, scenario).get(worker0)) and p["metadata"]["uid"] != first_uid,
             timeout=30, what="worker-0 recreated")

    kubelet = KubeletSim(kube)
    for name in every:
        kubelet.run(NS, name)
    wait_for(lambda: scenario.reached(state(kube, scenario), "running"), timeout=30, what="running")

    kubectl.ok("patch", scenario.plural, scenario.job, "--type", scenario.scale_down[0], "-p",
               scenario.scale_down[1])
    fewer = every - {f"{scenario.job}-worker-1"}
    wait_for(lambda: set(pods(kube, scenario)) == fewer and services(kube, scenario) == fewer, timeout=30,
             what="worker-1 and its service deleted")

    kubelet.succeed(NS, f"{scenario.job}-{scenario.decider}")
    wait_for(lambda: scenario.reached(state(kube, scenario), "succeeded"), timeout=30, what="succeeded")
    outcome.conditions[scenario.kind] = state(kube, scenario)
    if scenario.t9k:
        wait_for(lambda: kube.get(scenario.podgroup_path).status == 404, timeout=30,
                 what="the PodGroup deleted once the job has finished")
        return
    assert kube.get(scenario.path).body["status"].get("completionTime")
    wait_for(lambda: kube.get(scenario.path).status == 404, timeout=30, what="the job deleted by its TTL")


def run_end_to_end(cli: Sequence[str], tmp_path: Path, install: str = "install",
                   cluster_cli: Sequence[str] | None = None) -> Outcome:
    """The whole scenario with ``cli`` as the ``mxjob-controller`` command (``cluster_cli``, when given, for
    ``local up``: an install without the embedded cluster), ``manifests/<install>`` applied (its frameworks' jobs
    walked, one after the other); what was observed."""
    scenarios = INSTALLS[install]
    outcome = Outcome()
    kubeconfig, audit_log = tmp_path / "kubeconfig", tmp_path / "audit.jsonl"
    env = clean_env()
    faults = [arg for scenario in scenarios for arg in ("--fault", scenario.status_conflict)]
    # --no-webhooks: a cluster as the install finds it (the install's CRDs replace local up's, which would carry
    # local up's own conversion webhook).
    up = subprocess.Popen([*(cluster_cli or cli), "local", "up", "--kubelet", "none", "--no-controller",
                           "--no-webhooks", "--port", "0", "--kubeconfig-out", str(kubeconfig),
                           "--audit-log", str(audit_log), *faults],
                          stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True, env=env, cwd=tmp_path)
    leader = standby = None
    try:
        wait_for(lambda: kubeconfig.exists() or up.poll() is not None, timeout=60, what="local up's kubeconfig")
        assert up.poll() is None, up.communicate()
        kubectl = Kubectl(kubeconfig, tmp_path / "kubectl-cache")
        kube = Kube.from_kubeconfig(kubeconfig)
        kubectl.ok("apply", "-k", str(MANIFESTS / install), timeout=60)
        if any(scenario.t9k for scenario in scenarios):   # the T9k scheduler's PodGroups served
            kubectl.ok("create", "-f", "-", input=json.dumps(t9k_crd()))
            kubectl.ok("wait", "--for", "condition=established", "crd/podgroups.scheduler.tensorstack.dev",
                       "--timeout", "30s")
        for scenario in scenarios:
            submit(kubectl, kube, scenario)

        run_env = {**env, "POD_NAMESPACE": INSTALL_NAMESPACE}   # as the Deployment's downward API sets it
        args = [*cli, "run", "--kubeconfig", str(kubeconfig), *deployment_args(install)]
        leader = RunProcess([], argv=args, env=run_env).start()
        leader.wait_running(60)
        standby = RunProcess([], argv=args, env=run_env).start()
        standby.wait_log(lambda r: "attempting to acquire the lease" in r.get("msg", ""), what="the standby")

        for scenario in scenarios:
            walk(kubectl, kube, scenario, outcome)

        for path in ("/healthz", "/readyz"):
            assert leader.get(path) == (200, "ok")
        for scenario in scenarios:   # a TTL's delete is counted once it has returned, after the 404 walk() saw
            if scenario.counted["deleted"]:
                wait_for(lambda s=scenario: leader.metric("training_operator_jobs_deleted_total", job_namespace=NS,
                                                          framework=s.framework), timeout=30, what="the delete counted")
            outcome.metrics[scenario.kind] = {
                what: leader.metric(f"training_operator_jobs_{what}_total", job_namespace=NS,
                                    framework=scenario.framework) for what in ("created", "successful", "deleted")}
        outcome.standby_reconciles = standby.metric("controller_runtime_reconcile_total", result="success")

        lease = f"/apis/coordination.k8s.io/v1/namespaces/{INSTALL_NAMESPACE}/leases/mxjob-controller"
        first_holder = kube.get(lease).body["spec"]["holderIdentity"]
        sent = time.monotonic()
        stop(leader, outcome)
        wait_for(lambda: kube.get(lease).body["spec"].get("holderIdentity") not in ("", first_holder), timeout=10,
                 what="the standby holding the Lease")
        outcome.handover_seconds = time.monotonic() - sent
        standby.wait_running(30)
        stop(standby, outcome)
        kube.close()
    finally:
        for proc in (leader, standby):
            if proc is not None:
                proc.kill()
        up.send_signal(signal.SIGTERM)
        up.communicate(timeout=15)
    assert up.returncode == 0
    outcome.audit = [line for line in map(json.loads, audit_log.read_text().splitlines())
                     if line["userAgent"].startswith(UA_PREFIX)]
    return outcome

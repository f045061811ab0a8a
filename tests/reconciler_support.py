"""Helpers for the reconciler's end-to-end tests: an embedded API server serving MXJobs, the controller running
in-process against it over HTTP, MXJob manifests, and reads of what the controller wrote (status, children,
events, metrics, the server's audit log)."""

from __future__ import annotations

import copy
import time
from pathlib import Path
from typing import Any

from prometheus_client import CollectorRegistry

from mxjob_controller.core.framework import Framework
from mxjob_controller.core.job_controller import JobController
from mxjob_controller.local.apiserver.server import APIServer
from mxjob_controller.mxnet.controller import ControllerOptions, MXJobController
from mxjob_controller.mxnet.crd import mxjob_crd
from mxjob_controller.runtime.client import Client, ClientConfig
from mxjob_controller.runtime.client.incluster import load_in_cluster
from mxjob_controller.runtime.reconcile_trace import read_trace
from tests.kubelet_sim import KubeletSim
from tests.manifests import INSTALL_NAMESPACE, render
from tests.support import Kube, wait_for

DEADLINE = 30.0
CONTROLLER_AGENT = "mxjob-controller/"   # the controller client's User-Agent prefix, for the audit log
SERVICE_ACCOUNT = "mxjob-controller"     # the controller's ServiceAccount in the install's namespace
#: What the harness applies of an install on a server enforcing RBAC (the CRDs it serves itself).
RBAC_KINDS = ("Namespace", "ServiceAccount", "Role", "ClusterRole", "RoleBinding", "ClusterRoleBinding")


#: The group/version of each job kind's plural that is not Kubeflow's ``kubeflow.org/v1``.
GROUP_VERSIONS = {"genericjobs": "batch.tensorstack.dev/v1beta1"}


def resync_reconciles_while(h: Harness, controller: JobController, quiet: str, busy: str, resyncs: int) -> int:
    """Reconciles of ``quiet`` while ``busy`` (a running job, reconciled by every resync) has ``resyncs`` of them."""
    since = time.monotonic()
    wait_for(lambda: h.reconciles(controller, busy, since) >= resyncs, timeout=DEADLINE, what=f"{resyncs} resyncs")
    return h.reconciles(controller, quiet, since)


def wait_settled(h: Harness, controller: JobController, quiet: str, busy: str, confirm: int = 0) -> None:
    """Wait until resyncs no longer reconcile the finished job ``quiet`` (the events of its end may still reconcile
    it once or twice), then, with ``confirm``, that it stays so for that many more resyncs."""
    wait_for(lambda: resync_reconciles_while(h, controller, quiet, busy, 3) == 0, timeout=DEADLINE,
             what=f"resyncs that reconcile {quiet} no more")
    if confirm:
        assert resync_reconciles_while(h, controller, quiet, busy, confirm) == 0


def jobs_path(namespace: str, name: str = "", plural: str = "mxjobs") -> str:
    path = f"/apis/{GROUP_VERSIONS.get(plural, 'kubeflow.org/v1')}/namespaces/{namespace}/{plural}"
    return f"{path}/{name}" if name else path


def container(name: str = "mxnet", image: str = "mxjob/test:1", **extra: Any) -> dict[str, Any]:
    return {"name": name, "image": image, **extra}


def replica(replicas: int, restart_policy: str = "Never", **template: Any) -> dict[str, Any]:
    spec = {"containers": [container()]}
    meta = template.pop("metadata", None)
    spec.update(template)
    body: dict[str, Any] = {"replicas": replicas, "restartPolicy": restart_policy, "template": {"spec": spec}}
    if meta:
        body["template"]["metadata"] = meta
    return body


def mxjob(name: str, namespace: str = "default", *, scheduler: int = 1, server: int = 1, worker: int = 1,
          job_mode: str | None = None, restart_policy: str = "Never", **spec: Any) -> dict[str, Any]:
    """An MXJob with the given replica counts (0 leaves a type out)."""
    specs = {}
    for rtype, count in (("Scheduler", scheduler), ("Server", server), ("Worker", worker)):
        if count:
            specs[rtype] = replica(count, restart_policy)
    body_spec: dict[str, Any] = {"mxReplicaSpecs": specs, **spec}
    if job_mode is not None:
        body_spec["jobMode"] = job_mode
    return {"apiVersion": "kubeflow.org/v1", "kind": "MXJob", "metadata": {"name": name, "namespace": namespace},
            "spec": body_spec}


class Harness:
    """One embedded server with the MXJob CRD, controllers started on demand (and stopped at the end). The job
    methods (``create_job``, ``job``...) address ``plural`` (a subclass serves another kind)."""

    plural = "mxjobs"

    def __init__(self, apiserver: APIServer, kube: Kube, tmp_path: Path, rbac_install: str | None = None) -> None:
        """``rbac_install``: a directory of ``manifests/`` whose RBAC is applied; the controllers then run as its
        ServiceAccount, configured in-cluster from a token directory (the server must enforce RBAC)."""
        self.apiserver = apiserver
        self.kube = kube
        self.tmp_path = tmp_path
        self.kubelet = KubeletSim(kube)
        self.controllers: list[JobController] = []
        self.clients: list[Client] = []
        apiserver.create(mxjob_crd())
        wait_for(lambda: kube.get(jobs_path("default")).ok, timeout=DEADLINE, what="the MXJob API served")
        self.service_account_dir = self.apply_rbac(rbac_install) if rbac_install else None

    def apply_rbac(self, directory: str, docs: list[dict[str, Any]] | None = None) -> Path:
        """Apply the RBAC of ``manifests/<directory>`` (or ``docs``, rendered from it) as the cluster's
        administrator, and write the controller's ServiceAccount files (token, ca.crt, namespace)."""
        for doc in render(directory) if docs is None else docs:
            if doc["kind"] in RBAC_KINDS:
                self.apiserver.create(doc)
        return self.apiserver.write_token_dir(self.tmp_path / "serviceaccount", INSTALL_NAMESPACE, SERVICE_ACCOUNT)

    def client_config(self, qps: float, burst: int) -> ClientConfig:
        """The controller's configuration: in-cluster, as its ServiceAccount, when RBAC was applied; else the
        server's plain URL."""
        if self.service_account_dir is None:
            return ClientConfig(host=self.apiserver.url, qps=qps, burst=burst)
        env = {"KUBERNETES_SERVICE_HOST": self.apiserver.host, "KUBERNETES_SERVICE_PORT": str(self.apiserver.port)}
        return load_in_cluster(env, str(self.service_account_dir)).with_overrides(qps=qps, burst=burst)

    # --- the controller -----------------------------------------------------------------------------------

    def start(self, *, threadiness: int = 1, namespaces: tuple[str, ...] | None = None,
              registry: CollectorRegistry | None = None, qps: float = -1, burst: int = 1,
              framework: Framework | None = None, **options: Any) -> JobController:
        """A controller (MXNet's unless ``framework`` says); its client has no rate limit unless ``qps`` (and
        ``burst``) say so."""
        client = Client(self.client_config(qps, burst), component="mxjob-controller", program="mxjob-controller")
        self.clients.append(client)
        trace = self.tmp_path / f"trace-{len(self.controllers)}.jsonl"
        settings = ControllerOptions(namespaces=namespaces, threadiness=threadiness,
                                     registry=registry or CollectorRegistry(), trace_path=trace, **options)
        controller = MXJobController(client, settings) if framework is None else \
            JobController(client, settings, framework)
        self.controllers.append(controller)
        return controller.start()

    def stop(self, controller: JobController) -> None:
        assert controller.stop(20.0), "the controller did not stop cleanly"
        self.controllers.remove(controller)

    def close(self) -> None:
        for controller in list(self.controllers):
            controller.stop(20.0)
        for client in self.clients:
            client.close()

    def __enter__(self) -> Harness:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    @staticmethod
    def reconciles(controller: JobController, key: str, since: float = float("-inf")) -> int:
        """How many reconciles of ``key`` that started after ``since`` (monotonic) have finished."""
        path = controller.options.trace_path
        if path is None or not Path(path).exists():
            return 0
        return sum(1 for record in read_trace(path) if record["key"] == key and record["start"] > since)

    def settle(self, controller: JobController, key: str) -> None:
        """Make the controller reconcile ``key`` once more (by touching the job) and wait until a reconcile that
        started after the touch has finished."""
        namespace, name = key.split("/")
        since = time.monotonic()
        self.patch_job(namespace, name, {"metadata": {"annotations": {"test/touch": str(since)}}})
        wait_for(lambda: self.reconciles(controller, key, since) > 0, timeout=DEADLINE,
                 what=f"a reconcile of {key}")

    # --- jobs ---------------------------------------------------------------------------------------------

    def create_job(self, body: dict[str, Any]) -> dict[str, Any]:
        namespace = body["metadata"].get("namespace", "default")
        reply = self.kube.post(jobs_path(namespace, plural=self.plural), copy.deepcopy(body))
        assert reply.status == 201, reply.body
        return reply.body

    def job(self, namespace: str, name: str) -> dict[str, Any]:
        reply = self.kube.get(jobs_path(namespace, name, self.plural))
        assert reply.ok, reply.body
        return reply.body

    def patch_job(self, namespace: str, name: str, patch: dict[str, Any]) -> dict[str, Any]:
        reply = self.kube.patch(jobs_path(namespace, name, self.plural), patch)
        assert reply.ok, reply.body
        return reply.body

    def conditions(self, namespace: str, name: str) -> dict[str, dict[str, Any]]:
        return {c["type"]: c for c in (self.job(namespace, name).get("status") or {}).get("conditions") or []}

    def wait_condition(self, namespace: str, name: str, ctype: str, status: str = "True",
                       timeout: float = DEADLINE) -> dict[str, Any]:
        def found() -> dict[str, Any] | None:
            cond = self.conditions(namespace, name).get(ctype)
            return cond if cond is not None and cond.get("status") == status else None
        return wait_for(found, timeout=timeout, what=f"{namespace}/{name} {ctype}={status}")

    # --- children -----------------------------------------------------------------------------------------

    def children(self, resource: str, namespace: str, job: str) -> list[dict[str, Any]]:
        reply = self.kube.get(f"/api/v1/namespaces/{namespace}/{resource}",
                              labelSelector=f"training.kubeflow.org/job-name={job}")
        assert reply.ok, reply.body
        return sorted(reply.body["items"], key=lambda o: o["metadata"]["name"])

    def pods(self, namespace: str, job: str) -> list[dict[str, Any]]:
        return self.children("pods", namespace, job)

    def services(self, namespace: str, job: str) -> list[dict[str, Any]]:
        return self.children("services", namespace, job)

    def wait_children(self, namespace: str, job: str, count: int) -> list[dict[str, Any]]:
        """Wait until the job has ``count`` pods and ``count`` services; the pods."""
        return wait_for(lambda: len(self.services(namespace, job)) == count and (
            pods if len(pods := self.pods(namespace, job)) == count else None),
            timeout=DEADLINE, what=f"{count} pods and services of {namespace}/{job}")

    def run_all(self, namespace: str, job: str) -> None:
        for pod in self.pods(namespace, job):
            self.kubelet.run(namespace, pod["metadata"]["name"])

    # --- what the controller wrote ------------------------------------------------------------------------

    def events(self, namespace: str, uid: str | None = None, reason: str | None = None) -> list[dict[str, Any]]:
        reply = self.kube.get(f"/api/v1/namespaces/{namespace}/events")
        assert reply.ok, reply.body
        return [e for e in reply.body["items"]
                if (uid is None or e["involvedObject"].get("uid") == uid)
                and (reason is None or e.get("reason") == reason)]

    def wait_events(self, namespace: str, uid: str | None = None, reason: str | None = None,
                    count: int = 1) -> list[dict[str, Any]]:
        """Wait until at least ``count`` events match (``events``' filters); them. The reconciler records a
        transition's events after the status write that a test waits for, so a test waits for the events too."""
        return wait_for(lambda: found if len(found := self.events(namespace, uid, reason)) >= count else None,
                        timeout=DEADLINE, what=f"{count} {reason or ''} event(s) in {namespace}")

    def writes(self, verb: str, resource: str, since: float | None = None, **filters: Any) -> list[Any]:
        """The controller's requests of one verb and resource, from the server's audit log. A request is audited as
        the server answers, after others can see its write: a test that saw the effect waits for the record."""
        return self.apiserver.audit.records(verb=verb, resource=resource, user_agent=CONTROLLER_AGENT, since=since,
                                            **filters)


def metric(registry: CollectorRegistry, what: str, namespace: str = "default", framework: str = "mxnet") -> float:
    value = registry.get_sample_value(f"training_operator_jobs_{what}_total",
                                      {"job_namespace": namespace, "framework": framework})
    return value or 0.0


def wait_metric(registry: CollectorRegistry, what: str, at_least: float = 1, namespace: str = "default",
                framework: str = "mxnet") -> float:
    """Wait until a job counter reaches ``at_least``; its value. Counters move after the status write a test waits
    for, so a test that reads one waits for it too (and then asserts the exact value)."""
    return wait_for(lambda: value if (value := metric(registry, what, namespace, framework)) >= at_least else None,
                    timeout=DEADLINE, what=f"jobs_{what}_total >= {at_least} ({namespace}, {framework})")

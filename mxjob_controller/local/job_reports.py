"""What ``local up`` says on its console when a job fails: the failure, and where its pods' logs went.

    reports = JobReports(client, click.echo).start()
    ...
    reports.stop()

``local run`` prints a failed job's last log lines itself; a ``local up`` user asks kubectl, and with the default
``cleanPodPolicy: All`` the job's pods are deleted the moment it fails, their logs with them (``kubectl logs``
answers NotFound). So at the point of failure the console says so, and how to keep them next time. One informer
per job kind (MXJob, TFJob, GenericJob) watches for the ``Failed`` condition (GenericJob: phase); each failure is
said once (a job seen failed at the first list is not: it failed before this console started).
"""

from __future__ import annotations

import logging
import threading
from collections.abc import Callable, Mapping
from typing import Any

from mxjob_controller.local.submission import JOB_RESOURCES
from mxjob_controller.runtime.client import Client
from mxjob_controller.runtime.informer import SharedInformer, drop_managed_fields

log = logging.getLogger(__name__)


def failed(job: Mapping[str, Any]) -> str | None:
    """The failure message of a failed job ('' when it gives none), None when it has not failed."""
    status = job.get("status") or {}
    condition = next((c for c in status.get("conditions") or []
                      if c.get("type") == "Failed" and c.get("status") == "True"), None)
    if condition is None and status.get("phase") != "Failed":
        return None
    return (condition or {}).get("message") or ""


def clean_policy(job: Mapping[str, Any]) -> str:
    """What the job deletes when it finishes, as stored (the defaulting webhook fills it in)."""
    spec = job.get("spec") or {}
    return str((spec.get("runPolicy") or {}).get("cleanPodPolicy") or spec.get("cleanPodPolicy")
               or spec.get("cleanUpPolicy") or "")


def report(job: Mapping[str, Any], message: str) -> list[str]:
    """The console's lines for a failed job."""
    meta = job.get("metadata") or {}
    kind, name, namespace = job.get("kind") or "job", meta.get("name"), meta.get("namespace")
    lines = [f"{kind} {namespace}/{name} failed: {message or '(no message)'}"]
    policy = clean_policy(job)
    if policy in ("All", "Unfinished") or (policy == "Running" and kind != "GenericJob"):
        field = "spec.cleanUpPolicy: None" if kind == "GenericJob" else "spec.runPolicy.cleanPodPolicy: None"
        lines.append(f"  its pods were deleted as it failed ({policy}: the job's clean-up policy), their logs with "
                     f"them: `kubectl logs` cannot show them now. To keep the pods of a failed job for kubectl "
                     f"logs and describe, set {field} (or run it with `mxjob-controller local run`, which prints "
                     "each failed container's last lines)")
    else:
        lines.append(f"  its pods are kept: kubectl logs -n {namespace} -l training.kubeflow.org/job-name={name} "
                     "--all-containers --prefix")
    return lines


class JobReports:
    def __init__(self, client: Client, say: Callable[[str], None]) -> None:
        self._say = say
        self._lock = threading.Lock()
        self._said: set[str] = set()
        self._informers = {kind: SharedInformer(client, resource, transform=drop_managed_fields)
                           for kind, resource in JOB_RESOURCES.items()}

    def start(self, timeout: float = 30.0) -> JobReports:
        """Start watching; the jobs that failed before are not reported (their handlers come after the first
        list, and find them said)."""
        for informer in self._informers.values():
            informer.start()
        for kind, informer in self._informers.items():
            informer.wait_for_cache_sync(timeout)
            with self._lock:
                self._said.update((job.get("metadata") or {}).get("uid") or "" for job in informer.store.list()
                                  if failed(job) is not None)
            informer.add_handler(lambda job, k=kind: self._seen(k, job),
                                 lambda _old, new, k=kind: self._seen(k, new), None)
        return self

    def stop(self, timeout: float = 5.0) -> bool:
        return all([informer.stop(timeout) for informer in self._informers.values()])

    def _seen(self, kind: str, job: dict[str, Any]) -> None:
        message = failed(job)
        uid = (job.get("metadata") or {}).get("uid") or ""
        if message is None or not uid:
            return
        with self._lock:
            if uid in self._said:
                return
            self._said.add(uid)
        for line in report({**job, "kind": kind}, message):
            self._say(line)

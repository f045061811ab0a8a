"""The seam between the core and a framework, and what one reconcile knows of its job.

The core never reads a framework's spec directly; it asks through this protocol. A framework supplies its API
(resource, parse), the order of its replica types, how a replica's pod is wired into the framework's cluster (the
pod template with its environment), which ports a replica's service exposes, which replica is the job-role master,
and the rules that turn the replicas' states into the job's state (and the shape of the counts in its status).

A reconcile sees its job as a :class:`JobContext`: the object as cached, its parsed spec, and what logs and events
need. What it says about the spec itself is said once per job generation (:class:`OncePerGeneration`).

``spec.runPolicy.managedBy`` decides whether this controller reconciles a job, or another one (MultiKueue...) does.
Kubeflow's common RunPolicy has the field for every job kind, so it is read here, from the raw object, before
the job is parsed: a job handed to another controller gets no write of any kind from us (no children, no status,
no event), even when its spec is one we would call invalid, since its controller may read it otherwise.

- Unset, or one of the framework's own names (for MXJobs ``kubeflow.org/mxjob-controller`` and, as a drop-in,
  ``kubeflow.org/training-operator``): ours.
- Any other well-formed value (batch/v1 Job's rule: a domain-prefixed path of at most 63 characters, e.g.
  ``kueue.x-k8s.io/multikueue``): someone else's.
- A malformed value (``""`` included) is no hand-over: nobody else can claim a value the API would refuse, so the
  job stays ours and is *invalid*: it is ``Failed`` with the validation error naming the field, and gets no pod.
  Neither silently adopted (run as if the field were unset) nor silently ignored (left without a word).

This is the one place the format rule lives: :func:`value_errors` gives the job's validation its messages,
and :func:`well_formed`, the same rule, decides the hand-over. The value cannot change after creation: the CRD's
transition rule refuses it (see ``kubeflow_api/crd.py``).
"""

from __future__ import annotations

import functools
import re
import threading
from collections import OrderedDict
from collections.abc import Callable, Collection, Mapping, Sequence
from dataclasses import dataclass
from typing import Any, Protocol, TypeVar

from cachetools import LRUCache

from mxjob_controller.core.job_vocabulary import ReplicaCounts, controller_reference
from mxjob_controller.core.pods import PodFailure, ReplicaState
from mxjob_controller.kube import field_errors as fe
from mxjob_controller.kube.field_errors import FieldError
from mxjob_controller.kube.names import dns1123_subdomain_errors
from mxjob_controller.runtime.client import Resource
from mxjob_controller.runtime.events import ObjectReference

# --- framework ----------------------------------------------------------------------------------------------------

#: Most replicas of one type, and of a whole job, a framework may accept. The core loops over a job's replica
#: indices (children, restart slots, a framework's cluster spec in every pod), so a count no one bounds lets one job
#: hold a worker thread for hours and the controller's memory grow without limit.
#: 5,000 is far above real parameter-server jobs, and a job this size already makes 10,000 API objects (a pod and
#: a Service per replica) whose cluster spec (MXNet's ``MX_CONFIG``) is ~225 KB in each pod. Kubernetes itself
#: puts no bound on a workload's replicas (an int32); its practical limits are objects of at most 1.5 MiB and
#: requests of at most 3 MiB, which a cluster spec far beyond this would break anyway.
MAX_REPLICAS_PER_TYPE = 5000
MAX_REPLICAS_PER_JOB = 5000


class ReplicaSpec(Protocol):
    """One replica type of a parsed job."""

    @property
    def type(self) -> str: ...              # canonical: "Worker"

    @property
    def replicas(self) -> int: ...

    @property
    def restart_policy(self) -> str: ...    # Always, OnFailure, Never, ExitCode


class SchedulingPolicySpec(Protocol):
    """Gang-scheduling hints of a job (``runPolicy.schedulingPolicy``): what its PodGroup asks for."""

    @property
    def min_available(self) -> int | None: ...

    @property
    def queue(self) -> str: ...

    @property
    def min_resources(self) -> Mapping[str, int | str]: ...

    @property
    def priority_class(self) -> str: ...

    @property
    def schedule_timeout_seconds(self) -> int | None: ...


class RunPolicySpec(Protocol):
    """Kubeflow's common run policy, as the core reads it (defaults applied)."""

    @property
    def suspend(self) -> bool: ...

    @property
    def scheduling_policy(self) -> SchedulingPolicySpec | None: ...

    @property
    def clean_pod_policy(self) -> str: ...                    # All, Running, None (core/finished_jobs.py)

    @property
    def ttl_seconds_after_finished(self) -> int | None: ...   # core/finished_jobs.py

    @property
    def active_deadline_seconds(self) -> int | None: ...      # core/failure_policy.py

    @property
    def backoff_limit(self) -> int | None: ...                # core/failure_policy.py


class JobSpec(Protocol):
    """A parsed, valid job: identity and replica specs (canonical type → spec)."""

    @property
    def name(self) -> str: ...

    @property
    def namespace(self) -> str: ...

    @property
    def uid(self) -> str: ...

    @property
    def generation(self) -> int: ...

    @property
    def replicas(self) -> Mapping[str, ReplicaSpec]: ...

    @property
    def run_policy(self) -> RunPolicySpec: ...


@dataclass(frozen=True, slots=True)
class Verdict:
    """The framework's reading of its replicas: is the job running, has it succeeded, which failures fail it."""

    running: bool = False
    succeeded: bool = False
    failures: tuple[PodFailure, ...] = ()

    @property
    def failed(self) -> bool:
        return bool(self.failures)


class Framework(Protocol):
    """What the core's child machinery (caches, child sync, clean-up, exit events) and the controller's assembly
    need of a job kind. Kubeflow's job model adds :class:`KubeflowFramework`'s rules; a kind with another model
    (GenericJob) brings its own reconcile loop instead (:attr:`reconciler_class`)."""

    resource: Resource      # the job's API resource (group, version, plural, kind)
    operator_name: str      # the operator-name label value, and the events' source component
    framework_name: str     # the ``framework`` label of the job metrics
    group_label: str        # the legacy ``group-name`` label value; "": no legacy labels, nothing to adopt
    default_container: str  # the container whose exit code speaks for a pod ("": the first that failed, see pod_status)
    managers: tuple[str, ...]  # the ``runPolicy.managedBy`` values that mean "this controller" (managed_elsewhere)
    # The reconcile loop, constructed as ``core.reconciler.JobReconciler`` is; None: that one (Kubeflow's model).
    reconciler_class: type | None

    def parse(self, obj: dict[str, Any]) -> tuple[JobSpec | None, list[FieldError]]:
        """(spec, []) for a valid job object; (None, every problem) otherwise."""
        ...

    def replica_types(self, job: JobSpec) -> Sequence[str]:
        """The job's replica types, in the order their children are created."""
        ...

    def pod_template(self, job: JobSpec, replica_type: str, index: int) -> dict[str, Any]:
        """A fresh pod template (``metadata`` + ``spec``) for one replica, wired into the framework's cluster; the
        core adds name, labels, owner and restart policy."""
        ...

    def service_ports(self, job: JobSpec, replica_type: str) -> list[dict[str, Any]] | None:
        """The ports of a replica's headless service; None: the replica gets no service (a job that asks for none,
        and any it has is deleted)."""
        ...

    def is_master(self, job: JobSpec, replica_type: str, index: int) -> bool:
        """Whether this replica gets the ``job-role=master`` label."""
        ...


class KubeflowFramework(Framework, Protocol):
    """A framework on Kubeflow's job model (``runPolicy``, ``replicaStatuses``, conditions Created, Running,
    Restarting, Succeeded, Failed): what ``core.reconciler.JobReconciler`` asks of it besides :class:`Framework`."""

    def decide(self, job: JobSpec, states: Mapping[str, ReplicaState]) -> Verdict:
        """The job's state from its replicas' (canonical type → state)."""
        ...

    def with_replica_counts(self, status: Mapping[str, Any], counts: Mapping[str, ReplicaCounts]) -> dict[str, Any]:
        """A copy of ``status`` with the per-type counts written in the framework's status shape."""
        ...

    def replica_counts(self, status: Mapping[str, Any] | None) -> dict[str, ReplicaCounts]:
        """The per-type counts a status holds (canonical type → counts), in any shape the framework's writers (this
        controller, the operators it replaces) put them: what :meth:`with_replica_counts` writes, read back."""
        ...


_R = TypeVar("_R")
_PER_JOB_SIZE = 16   # parsed jobs remembered per function: one per worker thread's pass is enough


def per_job(func: Callable[..., _R]) -> Callable[..., _R]:
    """``func(job, *args)`` computed once per parsed job (its identity) and arguments, for what every replica of a
    job shares: a reconcile parses a job once and builds all its pods from that one object, so a cluster spec that
    lists every replica is built once per pass, not once per pod (per pod, a 5,000-replica job's pods cost
    quadratic time). The result is shared: callers must not change it. Thread-safe; the last few jobs are kept
    (holding the job itself, so its identity is not reused while remembered)."""
    memo: OrderedDict[tuple[Any, ...], tuple[Any, _R]] = OrderedDict()
    lock = threading.Lock()

    @functools.wraps(func)
    def remembered(job: Any, *args: Any) -> _R:
        key = (id(job), *args)
        with lock:
            hit = memo.get(key)
            if hit is not None and hit[0] is job:
                return hit[1]
        value = func(job, *args)
        with lock:
            memo[key] = (job, value)
            memo.move_to_end(key)
            while len(memo) > _PER_JOB_SIZE:
                memo.popitem(last=False)
        return value

    return remembered


# --- job context -------------------------------------------------------------------------------------------------

@dataclass(frozen=True, slots=True)
class JobContext:
    key: str                 # "namespace/name", the work-queue key
    obj: dict[str, Any]      # the job as the cache holds it (read-only)
    spec: JobSpec
    framework: Framework

    @property
    def name(self) -> str:
        return self.spec.name

    @property
    def namespace(self) -> str:
        return self.spec.namespace

    @property
    def uid(self) -> str:
        return self.spec.uid

    @property
    def kind(self) -> str:
        return self.framework.resource.kind

    def ref(self) -> ObjectReference:
        """The job as events' involved object."""
        return ObjectReference.of(self.obj, self.framework.resource.api_version, self.kind)

    def owner(self) -> dict[str, Any]:
        """The controller reference the job's children carry."""
        return controller_reference(self.framework.resource.api_version, self.kind, self.name, self.uid)

    def extra(self, replica_type: str | None = None, replica_index: int | None = None) -> dict[str, Any]:
        """Structured log fields (``logs.CONTEXT_FIELDS``) naming the job, and the replica when given."""
        fields: dict[str, Any] = {"job_namespace": self.namespace, "job_name": self.name, "job_uid": self.uid,
                                  "key": self.key}
        if replica_type is not None:
            fields["replica_type"] = replica_type
        if replica_index is not None:
            fields["replica_index"] = replica_index
        return fields


# --- managed by --------------------------------------------------------------------------------------------------

MAX_LENGTH = 63   # batch/v1 Job's maxManagedByLength
_HTTP_PATH_FMT = r"[A-Za-z0-9/\-._~%!$&'()*+,;=:]+"   # RFC 3986 path characters, as apimachinery writes them
_HTTP_PATH = re.compile("^" + _HTTP_PATH_FMT + "$")


def managed_by(obj: dict[str, Any]) -> str | None:
    """The job's ``spec.runPolicy.managedBy`` if it is a string (``""`` included: a malformed value)."""
    spec = obj.get("spec")
    run_policy = spec.get("runPolicy") if isinstance(spec, dict) else None
    value = run_policy.get("managedBy") if isinstance(run_policy, dict) else None
    return value if isinstance(value, str) else None


def value_errors(value: str, path: str) -> list[FieldError]:
    """What is wrong with a ``managedBy`` string, as kube-apiserver words it for batch/v1 Job (apimachinery's
    ``IsDomainPrefixedPath``, then the length); empty when it is well formed."""
    if value == "":
        return [fe.required(path)]
    errs: list[FieldError] = []
    host, slash, rest = value.partition("/")
    if not slash or not host or not rest:
        errs.append(fe.invalid(path, value, 'must be a domain-prefixed path (such as "acme.io/foo")'))
    else:
        errs += [fe.invalid(path, host, message) for message in dns1123_subdomain_errors(host)]
        if not _HTTP_PATH.match(rest):
            errs.append(fe.invalid(path, rest, f"Invalid path (regex used for validation is '{_HTTP_PATH_FMT}')"))
    if len(value) > MAX_LENGTH:
        errs.append(fe.too_long(path, MAX_LENGTH))
    return errs


def well_formed(value: str) -> bool:
    """Whether ``value`` names a controller at all (see :func:`value_errors`)."""
    return not value_errors(value, "")


def managed_elsewhere(obj: dict[str, Any], ours: Collection[str]) -> str | None:
    """The controller the job is handed to, or None when it is ours to reconcile (unset, ours, or malformed)."""
    value = managed_by(obj)
    if value is None or value in ours or not well_formed(value):
        return None
    return value


# --- once per generation -----------------------------------------------------------------------------------------

DEFAULT_MAX_JOBS = 4096   # job generations OncePerGeneration keeps before forgetting the oldest


class OncePerGeneration:
    """Saying something once per job generation: a Warning about a job's template, a log line about an invalid
    spec. A reconcile runs many times per generation (every child event, every resync); what it says about the spec
    itself (a field it overrides, an error the user must fix) is said again only when the spec changes, i.e. once
    per (job UID, ``metadata.generation``). Thread-safe; bounded (the least recently seen generations are forgotten
    first, so a very old one may be said again, never a current one lost)."""

    def __init__(self, maxsize: int = DEFAULT_MAX_JOBS) -> None:
        self._seen: LRUCache[tuple[str, int], bool] = LRUCache(maxsize=maxsize)
        self._lock = threading.Lock()

    def first(self, uid: str, generation: int) -> bool:
        """True the first time this job generation is asked about, False after."""
        key = (uid, generation)
        with self._lock:
            if key in self._seen:
                return False
            self._seen[key] = True
            return True

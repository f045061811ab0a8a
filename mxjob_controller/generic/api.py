"""The GenericJob API (``batch.tensorstack.dev/v1beta1``, kind ``GenericJob``, short name ``gj``): names, defaults,
validation and the reconciler's typed view. Pure functions over plain dicts.

A GenericJob is a list of free-form replica types (``spec.replicaSpecs[]``: ``type``, ``replicas``,
``restartPolicy {policy, limit}``, ``template``) plus rules saying when the job has succeeded or failed, a Service
option, debug and pause modes, a clean-up policy and an optional T9k scheduler. The semantics are in
``generic/status_rules.py`` (finish rules, restarts) and ``generic/status.py`` (phase, conditions, tasks, aggregate).

Defaults (applied to the typed view; all but the debug command also written into the stored job at admission,
``defaults.py``): ``replicas: 1``; ``restartPolicy: {policy: OnFailure, limit: 0}`` (so by default nothing
restarts: the limit is the budget); ``cleanUpPolicy: None``; the scheduler's ``queue: default``, ``priority: 0``; a
debug command of ``["sleep", "inf"]``.

Validation reports every problem at the field the user wrote:

- ``metadata.name``: a DNS-1035 label, short enough that every ``<job>-<type>-<rank>`` is at most 63 characters;
- ``spec.replicaSpecs``: at least one; each ``type`` a lowercase RFC 1123 label (it is part of pod and Service
  names), unique; ``replicas`` 0..5000 (at most 5000 in the job); ``restartPolicy.policy`` Never, OnFailure or
  Always, ``limit`` 0..32767 (an int16, as T9k's); a pod template with containers and images, checked against
  Kubernetes' PodTemplateSpec schema;
- ``successRules`` / ``failureRules``: each rule a non-empty map of replica type to a non-empty list of ranks
  (ints or decimal strings: ``[0]`` and ``["0"]`` alike), naming only types the job has and ranks below their
  replica counts;
- ``service.ports``: Kubernetes ServicePorts, at least one, names unique;
- ``runMode.debug.replicaSpecs[]`` / ``runMode.pause.resumeSpecs[]``: types the job has, each at most once;
  ``command`` / ``args`` lists of strings;
- ``cleanUpPolicy``: None, Unfinished or All; ``scheduler.t9kScheduler.priority``: 0..100;
- every ``$(…)`` reference of a known form resolvable (``generic/variables.py``).

Changing ``runMode.pause.resumeSpecs`` or ``runMode.debug.enabled`` after creation is refused by the CRD's
transition rules (``generic/crd.py``), as T9k's manual says.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from types import MappingProxyType
from typing import Any

from mxjob_controller.core.finished_jobs import CLEAN_ALL, CLEAN_NONE, CLEAN_UNFINISHED
from mxjob_controller.core.framework import MAX_REPLICAS_PER_JOB, MAX_REPLICAS_PER_TYPE
from mxjob_controller.core.podgroups import DEFAULT_QUEUE
from mxjob_controller.core.pods import RESTART_ALWAYS as ALWAYS
from mxjob_controller.core.pods import RESTART_NEVER as NEVER
from mxjob_controller.core.pods import RESTART_ON_FAILURE as ON_FAILURE
from mxjob_controller.generic import variables
from mxjob_controller.kube import field_errors as fe
from mxjob_controller.kube.field_errors import FieldError
from mxjob_controller.kube.jsoncopy import deep_copy
from mxjob_controller.kube.names import dns1123_label_errors
from mxjob_controller.kube.schema import validate_definition
from mxjob_controller.kubeflow_api import checks
from mxjob_controller.kubeflow_api.run_policy import RunPolicy
from mxjob_controller.kubeflow_api.validation import name_errors, template_errors, unique

# --- the resource ----------------------------------------------------------------------------------------

GROUP = "batch.tensorstack.dev"
VERSION = "v1beta1"
VERSIONS = (VERSION,)
KIND = "GenericJob"
LIST_KIND = "GenericJobList"
PLURAL = "genericjobs"
SINGULAR = "genericjob"
SHORT_NAMES = ("gj",)
CRD_NAME = f"{PLURAL}.{GROUP}"
API_VERSION = f"{GROUP}/{VERSION}"
#: The ``training.kubeflow.org/operator-name`` label value of its children (what our caches select) and the
#: events' source.
OPERATOR_NAME = "genericjob-controller"
#: The ``framework`` label of the job metrics, and what ``run --frameworks`` calls it.
FRAMEWORK_NAME = "generic"

# T9k's labels on every replica pod (from its manual), beside training-operator's.
LABEL_JOB = "genericjob"
LABEL_REPLICA = "genericjob-replica"
LABEL_COMPONENT = "tensorstack.dev/component"
LABEL_COMPONENT_TYPE = "tensorstack.dev/component-type"

# --- the spec's vocabulary -------------------------------------------------------------------------------

RESTART_POLICIES = (NEVER, ON_FAILURE, ALWAYS)
DEFAULT_POLICY = ON_FAILURE
MAX_LIMIT = 32767    # restartPolicy.limit and tasks[].restartCount are int16 in T9k's API

CLEAN_UP_POLICIES = (CLEAN_NONE, CLEAN_UNFINISHED, CLEAN_ALL)

MAX_PRIORITY = 100
DEBUG_COMMAND = ("sleep", "inf")

SPECS_PATH = "spec.replicaSpecs"


# --- the typed view --------------------------------------------------------------------------------------

Rule = tuple[tuple[str, tuple[int, ...]], ...]
"""A finish rule, normalised: ((type, ranks), ...) in the order written."""


@dataclass(frozen=True, slots=True)
class ReplicaView:
    """One replica type, defaults applied."""

    type: str
    replicas: int
    policy: str                      # Never, OnFailure, Always: what the controller does when a replica ends
    limit: int                       # restarts allowed for the whole type
    _template: dict[str, Any] = field(repr=False)
    restart_policy: str = NEVER      # the pods' own: always Never, the controller owns restarts

    def pod_template(self) -> dict[str, Any]:
        """A fresh copy of the pod template, the caller's to modify."""
        return deep_copy(self._template)


@dataclass(frozen=True, slots=True)
class Override:
    """A debug or resume override of one type's first container."""

    skip_init_containers: bool = False
    command: tuple[str, ...] | None = None   # None: the template's (resume) / ``sleep inf`` (debug)
    args: tuple[str, ...] | None = None      # resume only; None: the template's


@dataclass(frozen=True, slots=True)
class Scheduler:
    queue: str = DEFAULT_QUEUE
    priority: int = 0


@dataclass(frozen=True, slots=True)
class GenericJobView:
    """A valid GenericJob; ``replicas`` in spec order. Satisfies ``core.framework.JobSpec``."""

    name: str
    namespace: str
    uid: str
    generation: int
    replicas: Mapping[str, ReplicaView]
    success_rules: tuple[Rule, ...] = ()     # as written; empty: every replica must succeed
    failure_rules: tuple[Rule, ...] = ()     # as written; empty: any replica failed for good fails the job
    service_ports: tuple[dict[str, Any], ...] | None = None   # None: no spec.service, no Services
    debug: bool = False
    debug_overrides: Mapping[str, Override] = field(default_factory=dict)
    paused: bool = False
    resume_overrides: Mapping[str, Override] = field(default_factory=dict)
    clean_up_policy: str = CLEAN_NONE
    scheduler: Scheduler | None = None
    run_policy: RunPolicy = field(default_factory=RunPolicy)   # the core's view: nothing of Kubeflow's applies
    # Set by the reconciler for one pass (dataclasses.replace), from what the spec alone cannot say:
    resumed: bool = False        # the job was paused before: new pods get the resumeSpecs overrides
    scheduler_name: str = ""     # the T9k scheduler's name when its PodGroups are served; "": the default one

    @property
    def port_numbers(self) -> dict[str, int] | None:
        if self.service_ports is None:
            return None
        return {p["name"]: p["port"] for p in self.service_ports if isinstance(p.get("name"), str)}

    def variables(self, replica_type: str = "", rank: int = 0) -> variables.Scope:
        return variables.Scope(self.name, {t: r.replicas for t, r in self.replicas.items()}, self.port_numbers,
                               replica_type, rank)

    @property
    def total_replicas(self) -> int:
        return sum(r.replicas for r in self.replicas.values())


def rule_json(rule: Rule) -> str:
    """A rule as T9k's messages print it: compact JSON, ranks as strings (``{"worker":["0"]}``)."""
    return "{" + ",".join(f'"{t}":[' + ",".join(f'"{r}"' for r in ranks) + "]" for t, ranks in rule) + "}"


# --- validation ------------------------------------------------------------------------------------------

def _replica_counts(specs: Any) -> dict[str, int]:
    """Type → replicas of the well-formed entries (what names and ranks are checked against)."""
    counts: dict[str, int] = {}
    if isinstance(specs, list):
        for spec in specs:
            if isinstance(spec, dict) and isinstance(spec.get("type"), str) and spec["type"] not in counts:
                replicas = spec.get("replicas", 1)
                counts[spec["type"]] = replicas if checks.is_int(replicas) and replicas >= 0 else 1
    return counts


def validate_genericjob(job: Mapping[str, Any]) -> list[FieldError]:
    """Every problem with a GenericJob (a plain dict, as the API server sends it); empty when it is valid."""
    if not isinstance(job, Mapping):
        return checks.object_errors(job, "")
    meta, spec = job.get("metadata"), job.get("spec")
    name = meta.get("name") if isinstance(meta, dict) else None
    specs = spec.get("replicaSpecs") if isinstance(spec, dict) else None
    counts = _replica_counts(specs)
    errs = name_errors(name, {t: max(n, 1) for t, n in counts.items()})
    if spec is None:
        return [*errs, fe.required("spec")]
    if not isinstance(spec, dict):
        return errs + checks.object_errors(spec, "spec")
    errs += _service_errors(spec.get("service"))
    ports = _ports(spec.get("service"))
    scope = variables.Scope(name if isinstance(name, str) else "", counts, ports)
    errs += _replica_specs_errors(specs, scope)
    for key in ("successRules", "failureRules"):
        errs += _rules_errors(spec.get(key), f"spec.{key}", counts)
    errs += _run_mode_errors(spec.get("runMode"), counts, scope)
    if spec.get("cleanUpPolicy") is not None:
        errs += checks.enum_errors(spec["cleanUpPolicy"], "spec.cleanUpPolicy", CLEAN_UP_POLICIES)
    errs += _scheduler_errors(spec.get("scheduler"))
    return unique(errs)


def _ports(service: Any) -> dict[str, int] | None:
    if not isinstance(service, dict):
        return None
    ports = service.get("ports")
    return {p["name"]: p.get("port") for p in ports if isinstance(p, dict) and isinstance(p.get("name"), str)} \
        if isinstance(ports, list) else {}


def _list_errors(value: Any, path: str) -> list[FieldError]:
    return [] if isinstance(value, list) else [checks.type_error(path, value, "array")]


def _replica_specs_errors(specs: Any, scope: variables.Scope) -> list[FieldError]:
    if specs is None or specs == []:
        return [fe.required(SPECS_PATH, "a GenericJob has at least one replica spec")]
    if not isinstance(specs, list):
        return _list_errors(specs, SPECS_PATH)
    errs: list[FieldError] = []
    seen: set[str] = set()
    total = 0
    for i, spec in enumerate(specs):
        path = fe.child(SPECS_PATH, i)
        if not isinstance(spec, dict):
            errs += checks.object_errors(spec, path)
            continue
        rtype = spec.get("type")
        if rtype is None or rtype == "":
            errs.append(fe.required(fe.child(path, "type")))
        elif not isinstance(rtype, str):
            errs += checks.string_errors(rtype, fe.child(path, "type"))
        elif rtype in seen:
            errs.append(fe.duplicate(fe.child(path, "type"), rtype))
        else:
            seen.add(rtype)
            errs += [fe.invalid(fe.child(path, "type"), rtype, f"{msg} (it is part of the names of the replicas' "
                                                                  "pods and Services)")
                     for msg in dns1123_label_errors(rtype)]
        replicas = spec.get("replicas")
        if replicas is not None:
            at = fe.child(path, "replicas")
            if not checks.is_int(replicas):
                errs.append(checks.type_error(at, replicas, "integer"))
            elif replicas < 0:
                errs.append(fe.invalid(at, replicas, "must be greater than or equal to 0"))
            elif replicas > MAX_REPLICAS_PER_TYPE:
                errs.append(fe.invalid(at, replicas, f"must be less than or equal to {MAX_REPLICAS_PER_TYPE}, the "
                                                     "most replicas of one type a job may have"))
            else:
                total += replicas
        else:
            total += 1
        errs += _restart_policy_errors(spec.get("restartPolicy"), fe.child(path, "restartPolicy"))
        template = spec.get("template")
        errs += template_errors(template, fe.child(path, "template"))
        pod_spec = template.get("spec") if isinstance(template, dict) else None
        if isinstance(pod_spec, dict):
            errs += _reference_errors(pod_spec, fe.child(fe.child(path, "template"), "spec"), scope)
    if total > MAX_REPLICAS_PER_JOB:
        errs.append(fe.invalid(SPECS_PATH, total, f"the job has {total} replicas in all; at most "
                                                  f"{MAX_REPLICAS_PER_JOB} are allowed"))
    return errs


def _restart_policy_errors(policy: Any, path: str) -> list[FieldError]:
    if policy is None:
        return []
    if not isinstance(policy, dict):
        return checks.object_errors(policy, path)
    errs: list[FieldError] = []
    if policy.get("policy") is not None:
        errs += checks.enum_errors(policy["policy"], fe.child(path, "policy"), RESTART_POLICIES)
    limit = policy.get("limit")
    if limit is not None:
        errs += checks.non_negative_errors(limit, fe.child(path, "limit"))
        if checks.is_int(limit) and limit > MAX_LIMIT:
            errs.append(fe.invalid(fe.child(path, "limit"), limit, f"must be less than or equal to {MAX_LIMIT}"))
    return errs


def _reference_errors(pod_spec: Mapping[str, Any], path: str, scope: variables.Scope) -> list[FieldError]:
    return [fe.invalid(at, text, problem) for at, text in variables.container_texts(pod_spec, path)
            for problem in variables.reference_problems(text, scope)]


def rank_of(value: Any) -> int | None:
    """A rank as an int: from an int, or a string of decimal digits; None for anything else (negative ints
    included)."""
    if checks.is_int(value):
        return value if value >= 0 else None
    if isinstance(value, str) and value.isascii() and value.isdigit():
        return int(value)
    return None


def _rules_errors(rules: Any, path: str, counts: Mapping[str, int]) -> list[FieldError]:
    if rules is None:
        return []
    if not isinstance(rules, list):
        return _list_errors(rules, path)
    errs: list[FieldError] = []
    for i, rule in enumerate(rules):
        at = fe.child(path, i)
        if not isinstance(rule, dict):
            errs += checks.object_errors(rule, at)
            continue
        if not rule:
            errs.append(fe.required(at, "a rule names at least one replica type and its ranks"))
        for rtype, ranks in rule.items():
            where = fe.child(at, rtype)
            if rtype not in counts:
                errs.append(fe.not_supported(where, rtype, list(counts)))
                continue
            if not isinstance(ranks, list):
                errs += _list_errors(ranks, where)
                continue
            if not ranks:
                errs.append(fe.required(where, "a rule lists at least one rank of each type it names"))
            for j, raw in enumerate(ranks):
                rank = rank_of(raw)
                if rank is None:
                    errs.append(fe.invalid(fe.child(where, j), raw, "a rank is a non-negative integer, or a string "
                                                                    "of decimal digits"))
                elif rank >= counts[rtype]:
                    valid = f" (ranks 0 to {counts[rtype] - 1})" if counts[rtype] else ""
                    errs.append(fe.invalid(fe.child(where, j), raw, f"out of range: {rtype} has {counts[rtype]} "
                                                                    f"replicas{valid}"))
    return errs


def _service_errors(service: Any) -> list[FieldError]:
    if service is None:
        return []
    if not isinstance(service, dict):
        return checks.object_errors(service, "spec.service")
    path = "spec.service.ports"
    ports = service.get("ports")
    if ports is None or ports == []:
        return [fe.required(path, "the replicas' Services need at least one port")]
    if not isinstance(ports, list):
        return _list_errors(ports, path)
    errs: list[FieldError] = []
    names: set[str] = set()
    for i, port in enumerate(ports):
        at = fe.child(path, i)
        errs += validate_definition("io.k8s.api.core.v1.ServicePort", port, at)
        if not isinstance(port, dict):
            continue
        name = port.get("name")
        if isinstance(name, str) and name:
            if name in names:
                errs.append(fe.duplicate(fe.child(at, "name"), name))
            names.add(name)
        elif len(ports) > 1:
            errs.append(fe.required(fe.child(at, "name"), "a Service with several ports names each of them"))
    return errs


def _override_errors(entries: Any, path: str, counts: Mapping[str, int], scope: variables.Scope,
                     fields: Sequence[str]) -> list[FieldError]:
    if entries is None:
        return []
    if not isinstance(entries, list):
        return _list_errors(entries, path)
    errs: list[FieldError] = []
    seen: set[str] = set()
    for i, entry in enumerate(entries):
        at = fe.child(path, i)
        if not isinstance(entry, dict):
            errs += checks.object_errors(entry, at)
            continue
        rtype = entry.get("type")
        if rtype is None or rtype == "":
            errs.append(fe.required(fe.child(at, "type")))
        elif rtype not in counts:
            errs.append(fe.not_supported(fe.child(at, "type"), rtype, list(counts)))
        elif rtype in seen:
            errs.append(fe.duplicate(fe.child(at, "type"), rtype))
        else:
            seen.add(rtype)
        if entry.get("skipInitContainer") is not None:
            errs += checks.bool_errors(entry["skipInitContainer"], fe.child(at, "skipInitContainer"))
        for key in fields:
            items = entry.get(key)
            if items is None:
                continue
            where = fe.child(at, key)
            if not isinstance(items, list):
                errs += _list_errors(items, where)
                continue
            for j, item in enumerate(items):
                if not isinstance(item, str):
                    errs += checks.string_errors(item, fe.child(where, j))
                else:
                    errs += [fe.invalid(fe.child(where, j), item, p)
                             for p in variables.reference_problems(item, scope)]
        if "command" in fields and entry.get("command") == []:
            errs.append(fe.required(fe.child(at, "command"), "leave it out to keep the default"))
    return errs


def _run_mode_errors(run_mode: Any, counts: Mapping[str, int], scope: variables.Scope) -> list[FieldError]:
    if run_mode is None:
        return []
    if not isinstance(run_mode, dict):
        return checks.object_errors(run_mode, "spec.runMode")
    errs: list[FieldError] = []
    for mode, list_key, fields in (("debug", "replicaSpecs", ("command",)),
                                   ("pause", "resumeSpecs", ("command", "args"))):
        value = run_mode.get(mode)
        path = f"spec.runMode.{mode}"
        if value is None:
            continue
        if not isinstance(value, dict):
            errs += checks.object_errors(value, path)
            continue
        if value.get("enabled") is not None:
            errs += checks.bool_errors(value["enabled"], f"{path}.enabled")
        errs += _override_errors(value.get(list_key), f"{path}.{list_key}", counts, scope, fields)
    return errs


def _scheduler_errors(scheduler: Any) -> list[FieldError]:
    if scheduler is None:
        return []
    if not isinstance(scheduler, dict):
        return checks.object_errors(scheduler, "spec.scheduler")
    t9k = scheduler.get("t9kScheduler")
    path = "spec.scheduler.t9kScheduler"
    if t9k is None:
        return []
    if not isinstance(t9k, dict):
        return checks.object_errors(t9k, path)
    errs: list[FieldError] = []
    if t9k.get("queue") is not None:
        errs += checks.string_errors(t9k["queue"], f"{path}.queue")
    priority = t9k.get("priority")
    if priority is not None:
        if not checks.is_int(priority):
            errs.append(checks.type_error(f"{path}.priority", priority, "integer"))
        elif not 0 <= priority <= MAX_PRIORITY:
            errs.append(fe.invalid(f"{path}.priority", priority, f"must be between 0 and {MAX_PRIORITY}"))
    return errs


# --- parsing ---------------------------------------------------------------------------------------------

def _rule(raw: Mapping[str, Any]) -> Rule:
    return tuple((rtype, tuple(dict.fromkeys(rank_of(r) for r in ranks)))   # type: ignore[misc]
                 for rtype, ranks in raw.items())


def _overrides(entries: Any, fields: Sequence[str]) -> dict[str, Override]:
    out: dict[str, Override] = {}
    for entry in entries or ():
        values = {key: tuple(entry[key]) for key in fields if entry.get(key) is not None}
        out[entry["type"]] = Override(skip_init_containers=bool(entry.get("skipInitContainer")), **values)
    return out


def parse_genericjob(job: Mapping[str, Any]) -> tuple[GenericJobView | None, list[FieldError]]:
    """(view, []) for a valid GenericJob; (None, every problem) otherwise. ``job`` is not modified."""
    errs = validate_genericjob(job)
    if errs:
        return None, errs
    meta, spec = job.get("metadata") or {}, job["spec"]
    replicas: dict[str, ReplicaView] = {}
    for raw in spec["replicaSpecs"]:
        policy = raw.get("restartPolicy") or {}
        replicas[raw["type"]] = ReplicaView(
            type=raw["type"], replicas=raw.get("replicas", 1), policy=policy.get("policy") or DEFAULT_POLICY,
            limit=policy.get("limit") or 0, _template=raw["template"])
    run_mode = spec.get("runMode") or {}
    debug, pause = run_mode.get("debug") or {}, run_mode.get("pause") or {}
    service = spec.get("service")
    t9k = (spec.get("scheduler") or {}).get("t9kScheduler")
    clean_up = spec.get("cleanUpPolicy") or CLEAN_NONE
    return GenericJobView(
        name=meta.get("name", ""), namespace=meta.get("namespace") or "", uid=meta.get("uid") or "",
        generation=meta.get("generation") or 0, replicas=MappingProxyType(replicas),
        success_rules=tuple(_rule(r) for r in spec.get("successRules") or ()),
        failure_rules=tuple(_rule(r) for r in spec.get("failureRules") or ()),
        service_ports=None if service is None else tuple(dict(p) for p in service["ports"]),
        debug=bool(debug.get("enabled")),
        debug_overrides=MappingProxyType(_overrides(debug.get("replicaSpecs"), ("command",))),
        paused=bool(pause.get("enabled")),
        resume_overrides=MappingProxyType(_overrides(pause.get("resumeSpecs"), ("command", "args"))),
        clean_up_policy=clean_up,
        scheduler=None if t9k is None else Scheduler(queue=t9k.get("queue") or DEFAULT_QUEUE,
                                                     priority=t9k.get("priority") or 0),
        run_policy=RunPolicy(clean_pod_policy=clean_up)), []


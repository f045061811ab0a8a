"""Validation every Kubeflow kind shares: every problem at once, each as ``field.path: message`` (a
:class:`FieldError`).

The Go operators validated poorly (a job was dropped, or requeued forever, with the reason only in the
operator's log). These checks report each problem at the field the user wrote, e.g.
``spec.mxReplicaSpecs.Worker.template.spec.containers[0].image: Required value``, so the controller can
put the whole list in the job's ``Failed`` condition and an event.

Paths name replica specs by the key as the user wrote it (``spec.mxReplicaSpecs.worker...``) so they
point into the user's manifest; the rules apply to the canonical type the key folds to.

What every kind checks:

- ``metadata.name``: a DNS-1035 label, short enough that every child name ``<job>-<type>-<index>``
  (pods and Services) is at most 63 characters;
- the replica-spec map: present; known replica types only (case-insensitive, no two keys folding to the same
  type); ``replicas`` exactly 1 for the kind's singleton types, at least 1 otherwise, at most
  ``MAX_REPLICAS_PER_TYPE`` per type and ``MAX_REPLICAS_PER_JOB`` in all (core/framework.py says why);
  ``restartPolicy`` one of Always, OnFailure, Never, ExitCode; a pod template whose containers all have an image
  and one of which has the framework's name; the template checked against Kubernetes' PodTemplateSpec schema
  (with the API server's extra rules).

What names a kind (the map's path, its types, the singleton types, the framework's container) comes as a
:class:`ReplicaRules`; what a kind checks beyond that (a replica spec's own fields, the types it requires, its
other spec fields) comes as functions, so each kind's ``api.py`` (``mxnet/``, ``tensorflow/``) applies the same
checks with its own vocabulary and rules.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from dataclasses import dataclass
from typing import Any

from mxjob_controller.core.framework import MAX_REPLICAS_PER_JOB, MAX_REPLICAS_PER_TYPE
from mxjob_controller.core.job_vocabulary import child_name
from mxjob_controller.core.pods import RESTART_POLICIES
from mxjob_controller.kube import field_errors as fe
from mxjob_controller.kube.field_errors import FieldError
from mxjob_controller.kube.names import DNS1035_LABEL_MAX, dns1035_label_errors
from mxjob_controller.kubeflow_api import checks
from mxjob_controller.kubeflow_api.constants import DEFAULT_REPLICAS, MAX_CHILD_NAME
from mxjob_controller.kubeflow_api.replica_types import canonical_type
from mxjob_controller.kubeflow_api.template_schema import pod_template_schema_errors


@dataclass(frozen=True, slots=True)
class ReplicaRules:
    """A framework's replica-spec vocabulary, as the shared checks need it."""

    path: str                      # where the map is: "spec.mxReplicaSpecs"
    types: tuple[str, ...]         # canonical types, in the order errors list them
    singletons: frozenset[str]     # types a job runs exactly one of
    container: str                 # the container every replica needs: "mxnet"
    container_role: str            # what that container is, for the message: "the MXNet process"

    @property
    def key(self) -> str:
        """The map's key in ``spec``: ``mxReplicaSpecs``."""
        return self.path.removeprefix("spec.")


#: Checks one replica spec: (canonical type, the spec as written, its path) → errors.
CheckReplica = Callable[[str, Any, str], list[FieldError]]
#: What a kind requires of the canonical types present (MXJob: its jobMode's, and a Worker or a Tuner) → errors.
RequiredTypes = Callable[[set[str]], list[FieldError]]


def job_errors(job: Any, rules: ReplicaRules) -> tuple[list[FieldError], dict[str, Any] | None]:
    """What every job kind checks first: an object, its name (short enough for its longest child name), its spec;
    and the spec to check further (None when there is none to check)."""
    if not isinstance(job, Mapping):
        return checks.object_errors(job, ""), None
    meta = job.get("metadata")
    spec = job.get("spec")
    name = meta.get("name") if isinstance(meta, dict) else None
    specs = spec.get(rules.key) if isinstance(spec, dict) else None
    errs = name_errors(name, replica_counts_of(specs, rules.types))
    if spec is None:
        return [*errs, fe.required("spec")], None
    if not isinstance(spec, dict):
        return errs + checks.object_errors(spec, "spec"), None
    return errs, spec


def unique(errs: list[FieldError]) -> list[FieldError]:
    """Drop repeats (the schema check and ours may both find a missing image), keeping the first's place."""
    return list(dict.fromkeys(errs))


# --- metadata.name ---------------------------------------------------------------------------------------

def replica_counts_of(specs: Any, types: tuple[str, ...]) -> dict[str, int]:
    """Canonical type → replicas (1 when unset or unusable): what decides the longest child name."""
    counts: dict[str, int] = {}
    if not isinstance(specs, dict):
        return counts
    for key, value in specs.items():
        canon = canonical_type(key, types)
        if canon is None:
            continue
        n = value.get("replicas") if isinstance(value, dict) else None
        counts[canon] = max(counts.get(canon, 1), n if checks.is_int(n) and n > 0 else DEFAULT_REPLICAS)
    return counts


def longest_child_name(job_name: str, counts: Mapping[str, int]) -> str:
    """The longest ``<job>-<type>-<index>`` name the job's pods and Services will have."""
    names = [child_name(job_name, t, n - 1) for t, n in counts.items()]
    return max(names, key=len, default=job_name)


def name_errors(name: Any, counts: Mapping[str, int]) -> list[FieldError]:
    path = "metadata.name"
    if name is None or name == "":
        return [fe.required(path, "name or generateName is required")]
    if not isinstance(name, str):
        return checks.string_errors(name, path)
    longest = longest_child_name(name, counts)
    too_long = len(longest) > MAX_CHILD_NAME
    errs = []
    for msg in dns1035_label_errors(name):
        if too_long and msg.startswith("must be no more than"):
            continue  # the child-name limit below is the stricter one
        errs.append(fe.invalid(path, name, msg))
    room = MAX_CHILD_NAME - (len(longest) - len(name))
    if too_long and room >= 1:   # below 1 no name fits: a replica type is at fault, and its validation says so
        errs.append(fe.invalid(path, name, (
            f"must be no more than {min(room, DNS1035_LABEL_MAX)} characters, so that the name of every pod and "
            f'Service of the job (the longest is "{longest}", {len(longest)} characters) is at most '
            f"{MAX_CHILD_NAME}")))
    return errs


# --- the replica specs ---------------------------------------------------------------------------------

def replica_specs_errors(specs: Any, rules: ReplicaRules, check: CheckReplica,
                         required: RequiredTypes) -> list[FieldError]:
    """The replica-spec map's problems and each spec's (:func:`keyed_specs_errors`), then, when there is a map to
    look in, the kind's ``required`` types'."""
    errs, present = keyed_specs_errors(specs, rules, check)
    if present is None:
        return errs   # missing or not a map: nothing more to say
    return errs + required(present)


def keyed_specs_errors(specs: Any, rules: ReplicaRules,
                       check: CheckReplica) -> tuple[list[FieldError], set[str] | None]:
    """The replica-spec map's own problems (missing, not a map, unknown or duplicate keys, too many replicas in
    all) and each spec's (``check``); and the canonical types present (None when there is no map to look in)."""
    if specs is None or specs == {}:
        return [fe.required(rules.path, "must have at least one replica type: " + type_list(rules.types))], None
    if not isinstance(specs, dict):
        return checks.object_errors(specs, rules.path), None
    errs: list[FieldError] = []
    seen: dict[str, str] = {}  # canonical type -> first key that named it
    for key, value in specs.items():
        canon = canonical_type(key, rules.types)
        if canon is None:
            errs.append(fe.not_supported(rules.path, key, rules.types))
            continue
        if canon in seen:
            errs.append(fe.FieldError(rules.path, "FieldValueDuplicate", (
                f"Duplicate value: {fe.format_value(key)}: names the same replica type as "
                f"{fe.format_value(seen[canon])} (replica types are case-insensitive)")))
            continue
        seen[canon] = key
        errs += check(canon, value, fe.child(rules.path, key))
    return errs + _total_replicas_errors(specs, rules.path), set(seen)


def _total_replicas_errors(specs: dict[str, Any], path: str) -> list[FieldError]:
    """A job's replicas in all, each type's counted as written (1 when unset); types already refused for their
    own count are left out, so a single oversized type is reported once, at its field."""
    total = 0
    for value in specs.values():
        n = value.get("replicas", DEFAULT_REPLICAS) if isinstance(value, dict) else DEFAULT_REPLICAS
        if checks.is_int(n) and 0 < n <= MAX_REPLICAS_PER_TYPE:
            total += n
    if total <= MAX_REPLICAS_PER_JOB:
        return []
    return [fe.invalid(path, total, f"a job may have at most {MAX_REPLICAS_PER_JOB} replicas in all "
                                    f"(the sum of every type's replicas)")]


def type_list(types: tuple[str, ...] | list[str]) -> str:
    return ", ".join(fe.format_value(t) for t in types)


def common_replica_spec_errors(rtype: str, spec: Any, path: str, rules: ReplicaRules) -> list[FieldError]:
    """What every Kubeflow replica spec must satisfy: ``replicas``, ``restartPolicy`` and the pod template."""
    if spec is None:
        return [fe.required(path)]
    if not isinstance(spec, dict):
        return checks.object_errors(spec, path)
    errs: list[FieldError] = []
    replicas = spec.get("replicas")
    if replicas is not None:
        errs += _replicas_errors(rtype, replicas, fe.child(path, "replicas"), rules.singletons)
    if spec.get("restartPolicy") is not None:
        errs += checks.enum_errors(spec["restartPolicy"], fe.child(path, "restartPolicy"), RESTART_POLICIES)
    errs += template_errors(spec.get("template"), fe.child(path, "template"), rules)
    return errs


def _replicas_errors(rtype: str, replicas: Any, path: str, singletons: frozenset[str]) -> list[FieldError]:
    if not checks.is_int(replicas):
        return [checks.type_error(path, replicas, "integer")]
    if rtype in singletons and replicas != 1:
        return [fe.invalid(path, replicas, f"must be 1: a job has exactly one {rtype}")]
    if replicas < 1:
        return [fe.invalid(path, replicas, "must be greater than or equal to 1")]
    if replicas > MAX_REPLICAS_PER_TYPE:
        return [fe.invalid(path, replicas, f"must be less than or equal to {MAX_REPLICAS_PER_TYPE}, the most "
                                           f"replicas of one type a job may have")]
    return []


def template_errors(template: Any, path: str, rules: ReplicaRules | None = None) -> list[FieldError]:
    """A replica's pod template: containers with images (one named as ``rules`` says, when given), and
    Kubernetes' PodTemplateSpec schema."""
    containers_path = fe.child(fe.child(path, "spec"), "containers")
    if template is None:
        return [fe.required(containers_path)]
    if not isinstance(template, dict):
        return checks.object_errors(template, path)
    pod_spec = template.get("spec")
    if pod_spec is None:
        return [fe.required(containers_path)]
    if not isinstance(pod_spec, dict):
        return checks.object_errors(pod_spec, fe.child(path, "spec"))
    errs = _containers_errors(pod_spec.get("containers"), containers_path, rules)
    errs += pod_template_schema_errors(template, path)
    return errs


def _containers_errors(containers: Any, path: str, rules: ReplicaRules | None) -> list[FieldError]:
    if containers is None or containers == []:
        return [fe.required(path)]
    if not isinstance(containers, list):
        return [checks.type_error(path, containers, "array")]
    errs: list[FieldError] = []
    named = False
    for i, container in enumerate(containers):
        at = fe.child(path, i)
        if not isinstance(container, dict):
            errs += checks.object_errors(container, at)
            continue
        named = named or rules is None or container.get("name") == rules.container
        image = container.get("image")
        if image is None or image == "":
            errs.append(fe.required(fe.child(at, "image")))
        elif not isinstance(image, str):
            errs += checks.string_errors(image, fe.child(at, "image"))
        elif image.strip() != image:
            errs.append(fe.invalid(fe.child(at, "image"), image, "must not have leading or trailing whitespace"))
    if not named and rules is not None:
        errs.append(fe.required(path, f'must have a container named "{rules.container}" ({rules.container_role})'))
    return errs

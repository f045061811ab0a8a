"""kube's ``PodSecurity`` admission plugin (k8s.io/pod-security-admission's ``admission`` package, as kube-apiserver
runs it): the Pod Security Standards (``pod_security.py``) applied to what a namespace's labels choose
(``pod_security_labels.py``), on every create and update.

- **Pods** (and their subresources but ``status``, ``binding``, ``exec``… which cannot change the spec) are refused
  with 403 ``pods "p" is forbidden: violates PodSecurity "restricted:latest": <detail>`` where the enforce level
  forbids them, whoever creates them: a user, or a controller creating an MXJob's pods. An update that changes no
  container image (the only spec field of a pod that may change) is not evaluated.
- **Workloads' pod templates** (Deployments, and kube's other pod controllers should the server serve them) are
  never refused: they get the warn level's ``Warning`` and the audit level's annotation, so that a user learns at
  ``kubectl apply`` that its pods would be refused.
- **Namespaces**: a label with a bad level or version is refused (422) on create, and on an update that changes
  it; a stricter enforce level is answered with warnings naming the namespace's pods it would refuse (at most
  3,000 of them, within a second; one pod per controller first).
- Warnings go out as ``Warning: would violate PodSecurity "<level>:<version>": <detail>``; the audit record gets
  ``pod-security.kubernetes.io/enforce-policy``, ``.../audit-violations``, ``.../exempt`` (``user``,
  ``namespace`` or ``runtimeClass``) and ``.../error``, as kube's audit annotations.
- Exemptions (``PodSecurityConfiguration.exemptions``): requests by an exempt user, in an exempt namespace, or of a
  pod with an exempt runtime class pass unevaluated.
- Metrics: kube's ``pod_security_evaluations_total``, ``..._exemptions_total`` and ``..._errors_total``
  (``pod_security_metrics.py``), counted as the plugin decides.

PodSecurity is a validating admission plugin: the verbs call it after the object's own validation and before
the validating webhooks (kube's order). Pure but for the two lookups it is given (the namespace, its pods) and the
counters it keeps.
"""

from __future__ import annotations

import time
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from typing import Any, Protocol

from mxjob_controller.kube.field_errors import FieldError, aggregate
from mxjob_controller.kube.vocabulary import CREATE, UPDATE
from mxjob_controller.local.apiserver import errors
from mxjob_controller.local.apiserver.auth.pod_security_evaluator import (
    SERVER_MINOR,
    Evaluator,
    Forbidden,
    forbidden_detail,
    forbidden_reason,
)
from mxjob_controller.local.apiserver.auth.pod_security_labels import (
    AUDIT_LABEL,
    AUDIT_VERSION_LABEL,
    ENFORCE_LABEL,
    ENFORCE_VERSION_LABEL,
    LABEL_PREFIX,
    PRIVILEGED,
    PRIVILEGED_POLICY,
    WARN_LABEL,
    WARN_VERSION_LABEL,
    LevelVersion,
    Policy,
    compare_levels,
    policy_to_evaluate,
)
from mxjob_controller.local.apiserver.auth.pod_security_metrics import PodSecurityMetrics
from mxjob_controller.local.apiserver.errors import StatusError
from mxjob_controller.local.apiserver.resources import ResourceType

NAMESPACE_MAX_PODS = 3000        # kube's defaultNamespaceMaxPodsToCheck
NAMESPACE_POD_CHECK_SECONDS = 1.0  # kube's defaultNamespacePodCheckTimeout

# Pod subresources that cannot change what the pod runs: never evaluated.
_IGNORED_POD_SUBRESOURCES = frozenset({"exec", "attach", "binding", "eviction", "log", "portforward", "proxy",
                                       "status"})

# kube's pod controllers: (group, resource) → the path to their pod template.
_TEMPLATES: dict[tuple[str, str], tuple[str, ...]] = {
    ("", "replicationcontrollers"): ("spec", "template"),
    ("", "podtemplates"): ("template",),
    ("apps", "replicasets"): ("spec", "template"),
    ("apps", "deployments"): ("spec", "template"),
    ("apps", "statefulsets"): ("spec", "template"),
    ("apps", "daemonsets"): ("spec", "template"),
    ("batch", "jobs"): ("spec", "template"),
    ("batch", "cronjobs"): ("spec", "jobTemplate", "spec", "template"),
}


@dataclass(frozen=True, slots=True)
class PodSecurityConfiguration:
    """kube's ``PodSecurityConfiguration``: the cluster's defaults and its exemptions (kube's defaults: everything
    privileged, nothing exempt)."""

    defaults: Policy = PRIVILEGED_POLICY
    usernames: frozenset[str] = frozenset()
    namespaces: frozenset[str] = frozenset()
    runtime_classes: frozenset[str] = frozenset()


@dataclass(slots=True)
class Decision:
    """What the plugin answers one request: a refusal (or None), warnings, audit annotations (unprefixed keys)."""

    refusal: StatusError | None = None
    warnings: list[str] = field(default_factory=list)
    annotations: dict[str, str] = field(default_factory=dict)


class AdmissionAttributes(Protocol):
    """What the plugin reads of a write (``webhooks/attributes.py``'s record, which the verbs build; named here,
    not imported, because the webhooks stand on ``auth/``)."""

    operation: str
    rt: ResourceType
    subresource: str
    name: str          # as the client sent it: empty on a create under generateName
    namespace: str     # the request's (a namespace's own name for its update)
    obj: dict | None
    old: dict | None
    user: Any


NamespaceGetter = Callable[[str], "dict | None"]
PodLister = Callable[[str], list[dict]]


def _get(obj: Any, path: tuple[str, ...]) -> Any:
    for key in path:
        if not isinstance(obj, Mapping):
            return None
        obj = obj.get(key)
    return obj


def _labels(obj: Mapping[str, Any] | None) -> dict[str, str]:
    labels = ((obj or {}).get("metadata") or {}).get("labels")
    return labels if isinstance(labels, dict) else {}


def _images(spec: Mapping[str, Any], key: str) -> list[Any]:
    return [c.get("image") if isinstance(c, Mapping) else None for c in (spec.get(key) or [])]


def significant_pod_update(new: Mapping[str, Any], old: Mapping[str, Any]) -> bool:
    """kube's ``isSignificantPodUpdate``: a container or init container added, removed or given another image, or
    an ephemeral container added or changed."""
    spec, old_spec = new.get("spec") or {}, old.get("spec") or {}
    if _images(spec, "containers") != _images(old_spec, "containers") or \
            _images(spec, "initContainers") != _images(old_spec, "initContainers"):
        return True
    before = {c.get("name"): c.get("image") for c in (old_spec.get("ephemeralContainers") or [])
              if isinstance(c, Mapping)}
    return any(not isinstance(c, Mapping) or c.get("name") not in before or before[c.get("name")] != c.get("image")
               for c in (spec.get("ephemeralContainers") or []))


def _controller_uid(pod: Mapping[str, Any]) -> str | None:
    for ref in (pod.get("metadata") or {}).get("ownerReferences") or []:
        if isinstance(ref, Mapping) and ref.get("controller") is True:
            return str(ref.get("uid") or "")
    return None


class PodSecurity:
    """The plugin; :meth:`admit` decides, :meth:`__call__` applies the decision to a request."""

    def __init__(self, config: PodSecurityConfiguration, namespace: NamespaceGetter, pods: PodLister,
                 evaluator: Evaluator | None = None, clock: Callable[[], float] = time.monotonic) -> None:
        self.config = config
        self._namespace = namespace
        self._pods = pods
        self.evaluator = evaluator or Evaluator()
        self._clock = clock
        self.metrics = PodSecurityMetrics(SERVER_MINOR)

    def __call__(self, attrs: AdmissionAttributes, warnings: list[str], annotations: dict[str, str]) -> None:
        """Add the warnings and (prefixed) audit annotations; raise the refusal, if any."""
        decision = self.admit(attrs)
        warnings.extend(decision.warnings)
        annotations.update({LABEL_PREFIX + k: v for k, v in decision.annotations.items()})
        if decision.refusal is not None:
            raise decision.refusal

    def admit(self, attrs: AdmissionAttributes) -> Decision:
        if attrs.operation not in (CREATE, UPDATE) or not isinstance(attrs.obj, dict):
            return Decision()
        resource = (attrs.rt.group, attrs.rt.plural)
        if resource == ("", "namespaces"):
            return self._namespace_write(attrs)
        if resource == ("", "pods"):
            return self._pod(attrs)
        if resource in _TEMPLATES:
            return self._pod_controller(attrs, _TEMPLATES[resource])
        return Decision()

    # --- exemptions -------------------------------------------------------------------------------------------

    def _exemption(self, attrs: AdmissionAttributes) -> Decision | None:
        user = getattr(attrs.user, "name", "") or ""
        if attrs.namespace and attrs.namespace in self.config.namespaces:
            reason = "namespace"
        elif user and user in self.config.usernames:
            reason = "user"
        else:
            return None
        self.metrics.exemption(attrs)
        return Decision(annotations={"exempt": reason})

    def _runtime_class_exempt(self, spec: Mapping[str, Any]) -> bool:
        runtime_class = spec.get("runtimeClassName")
        return bool(runtime_class) and runtime_class in self.config.runtime_classes

    def _policy(self, namespace: str) -> tuple[Policy, list[FieldError]] | None:
        """The namespace's policy and its label errors; None when there is no such namespace."""
        ns = self._namespace(namespace)
        return None if ns is None else policy_to_evaluate(_labels(ns), self.config.defaults)

    # --- pods and pod templates ---------------------------------------------------------------------------------

    def _pod(self, attrs: AdmissionAttributes) -> Decision:
        if attrs.subresource in _IGNORED_POD_SUBRESOURCES:
            return Decision()
        exempt = self._exemption(attrs)
        if exempt is not None:
            return exempt
        found = self._policy(attrs.namespace)
        if found is None:
            self.metrics.error(True, attrs)
            refusal = errors.internal(f'failed to lookup namespace "{attrs.namespace}"')
            return Decision(refusal, annotations={"error": f"{refusal.message}: not found"})
        policy, policy_errors = found
        if not policy_errors and policy.fully_privileged:
            self.metrics.evaluation("allow", policy.enforce, "enforce", attrs)
            return Decision(annotations={"enforce-policy": str(LevelVersion(PRIVILEGED))})
        if attrs.operation == UPDATE and isinstance(attrs.old, dict) and not significant_pod_update(attrs.obj,
                                                                                                     attrs.old):
            return Decision()
        obj = attrs.obj or {}
        return self.evaluate(attrs, policy, policy_errors, obj.get("metadata") or {}, obj.get("spec") or {},
                             enforce=True)

    def _pod_controller(self, attrs: AdmissionAttributes, path: tuple[str, ...]) -> Decision:
        if attrs.subresource:
            return Decision()
        exempt = self._exemption(attrs)
        if exempt is not None:
            return exempt
        found = self._policy(attrs.namespace)
        if found is None:   # never refused: a template is only warned and audited about
            self.metrics.error(True, attrs)
            return Decision(annotations={"error": f'failed to lookup namespace "{attrs.namespace}": not found'})
        policy, policy_errors = found
        if not policy_errors and policy.warn.level == PRIVILEGED and policy.audit.level == PRIVILEGED:
            return Decision()
        template = _get(attrs.obj, path)
        if not isinstance(template, Mapping):
            return Decision()   # a controller whose template is optional and absent
        return self.evaluate(attrs, policy, policy_errors, template.get("metadata") or {},
                             template.get("spec") or {}, enforce=False)

    def evaluate(self, attrs: AdmissionAttributes, policy: Policy, policy_errors: list[FieldError],
                 meta: Mapping[str, Any], spec: Mapping[str, Any], *, enforce: bool) -> Decision:
        """kube's ``EvaluatePod``: enforce (pods only), audit and warn, each level evaluated once."""
        if self._runtime_class_exempt(spec):
            self.metrics.exemption(attrs)
            return Decision(annotations={"exempt": "runtimeClass"})
        decision = Decision()
        if policy_errors:
            self.metrics.error(False, attrs)
            decision.annotations["error"] = f"Failed to parse policy: {aggregate(policy_errors)}"
        results: dict[LevelVersion, list[Forbidden]] = {}

        def result(lv: LevelVersion) -> list[Forbidden]:
            if lv not in results:
                results[lv] = self.evaluator.evaluate(lv, meta, spec)
            return results[lv]

        if enforce:
            decision.annotations["enforce-policy"] = str(policy.enforce)
            refused = result(policy.enforce)
            self.metrics.evaluation("deny" if refused else "allow", policy.enforce, "enforce", attrs)
            if refused:
                decision.refusal = errors.admission_forbidden(
                    attrs.rt.resource, attrs.name,
                    f'violates PodSecurity "{policy.enforce}": {forbidden_detail(refused)}')
        audited = result(policy.audit)
        if audited:
            self.metrics.evaluation("deny", policy.audit, "audit", attrs)
            decision.annotations["audit-violations"] = \
                f'would violate PodSecurity "{policy.audit}": {forbidden_detail(audited)}'
        if decision.refusal is None:   # no warnings on a request refused anyway
            warned = result(policy.warn)
            if warned:
                self.metrics.evaluation("deny", policy.warn, "warn", attrs)
                decision.warnings.append(f'would violate PodSecurity "{policy.warn}": {forbidden_detail(warned)}')
        return decision

    # --- namespaces ---------------------------------------------------------------------------------------------

    def _namespace_write(self, attrs: AdmissionAttributes) -> Decision:
        if attrs.subresource:
            return Decision()
        labels = _labels(attrs.obj)
        policy, new_errors = policy_to_evaluate(labels, self.config.defaults)
        name = str(((attrs.obj or {}).get("metadata") or {}).get("name") or attrs.name)
        if attrs.operation == CREATE:
            if new_errors:
                return Decision(errors.invalid(attrs.rt.resource, name, new_errors))
            return self._exempt_namespace_warning(attrs, name, policy, labels)
        old_policy, old_errors = policy_to_evaluate(_labels(attrs.old), self.config.defaults)
        if new_errors and (not old_errors or new_errors != old_errors):
            return Decision(errors.invalid(attrs.rt.resource, name, new_errors))
        new, old = policy.enforce, old_policy.enforce
        if new == old or new.level == PRIVILEGED or (new.minor == old.minor
                                                     and compare_levels(new.level, old.level) < 1):
            return Decision()
        if attrs.namespace and attrs.namespace in self.config.namespaces:
            return self._exempt_namespace_warning(attrs, name, policy, labels)
        return Decision(warnings=self.pods_in_namespace(name, new))

    def _exempt_namespace_warning(self, attrs: AdmissionAttributes, name: str, policy: Policy,
                                  labels: Mapping[str, str]) -> Decision:
        """In an exempt namespace (the request's, as kube's attributes name it: none on a create), kube's warning
        that the namespace's own stricter labels are ignored."""
        if not attrs.namespace or attrs.namespace not in self.config.namespaces or policy.fully_privileged or \
                policy.equivalent(self.config.defaults):
            return Decision()
        parts = [f"{mode}={lv}" for mode, lv, keys in (
            ("enforce", policy.enforce, (ENFORCE_LABEL, ENFORCE_VERSION_LABEL)),
            ("audit", policy.audit, (AUDIT_LABEL, AUDIT_VERSION_LABEL)),
            ("warn", policy.warn, (WARN_LABEL, WARN_VERSION_LABEL)))
            if lv.level != PRIVILEGED and any(k in labels for k in keys)]
        return Decision(warnings=[f'namespace "{name}" is exempt from Pod Security, and the policy '
                                  f'({", ".join(parts)}) will be ignored'])

    def pods_in_namespace(self, namespace: str, enforce: LevelVersion) -> list[str]:
        """kube's ``EvaluatePodsInNamespace``: which existing pods the new enforce level would refuse, one warning
        per distinct set of reasons (naming its lexically first pod and how many others share it)."""
        deadline = self._clock() + NAMESPACE_POD_CHECK_SECONDS
        pods = self._prioritized(self._pods(namespace))
        total = len(pods)
        pods = pods[:NAMESPACE_MAX_PODS]
        checked = len(pods)
        first: dict[str, str] = {}     # reasons → lexically first pod name
        counts: dict[str, int] = {}
        for i, pod in enumerate(pods):
            refused = self.evaluator.evaluate(enforce, pod.get("metadata") or {}, pod.get("spec") or {})
            if refused:
                reason = forbidden_reason(refused)
                pod_name = str((pod.get("metadata") or {}).get("name") or "")
                if reason not in first or pod_name < first[reason]:
                    first[reason] = pod_name
                counts[reason] = counts.get(reason, 0) + 1
            if self._clock() > deadline:
                checked = i + 1
                break
        warnings = []
        if checked < total:
            warnings.append(f"new PodSecurity enforce level only checked against the first {checked} of {total} "
                            "existing pods")
        if first:
            warnings.append(f'existing pods in namespace "{namespace}" violate the new PodSecurity enforce level '
                            f'"{enforce}"')
        return warnings + sorted(_decorated(first[r], counts[r], r) for r in first)

    def _prioritized(self, pods: list[dict]) -> list[dict]:
        """Pods of an exempt runtime class left out; the first pod of each controller, then the others."""
        first, later, seen = [], [], set()
        for pod in pods:
            if self._runtime_class_exempt(pod.get("spec") or {}):
                continue
            uid = _controller_uid(pod)
            if uid is not None and uid in seen:
                later.append(pod)
                continue
            if uid is not None:
                seen.add(uid)
            first.append(pod)
        return first + later


def _decorated(pod_name: str, count: int, reason: str) -> str:
    if count == 1:
        return f"{pod_name}: {reason}"
    if count == 2:
        return f"{pod_name} (and 1 other pod): {reason}"
    return f"{pod_name} (and {count - 1} other pods): {reason}"

"""Validating admission webhooks, dispatched as kube-apiserver's ``ValidatingAdmissionWebhook`` plugin does
(``k8s.io/apiserver/pkg/admission/plugin/webhook/{generic,validating,predicates,request}``).

For one write (:class:`~.attributes.AdmissionAttributes`), every webhook of every ValidatingWebhookConfiguration
(configurations by name, webhooks in order) is matched:

- ``namespaceSelector`` against the labels of the request's namespace (a namespace's own labels when it is the
  object being created or updated); cluster-scoped objects other than namespaces always match;
- ``objectSelector`` against the labels of the new or the old object;
- ``rules``: operation (or ``*``), group, version, resource with its subresource (``*``, ``*/*``, ``x/status``),
  scope; with ``matchPolicy: Equivalent`` a rule naming another served version of the same resource matches too,
  and the webhook then gets the objects converted to that version (``kind``/``resource`` say which, ``requestKind``
  /``requestResource`` what was asked).

Writes of the admission configurations themselves are exempt, as in kube. Each matching webhook gets an
``admission.k8s.io/v1`` (or ``v1beta1``) ``AdmissionReview`` as kube fills it, on the request's own thread, one after
the other (kube calls them in parallel: every one is called either way, and the first failure in order wins).

- ``allowed: false`` refuses the write: ``admission webhook "<name>" denied the request: <message>``, with the
  answer's code (below 400: 400), reason and details;
- ``warnings`` become ``Warning`` headers, on the answer and on a refusal;
- a webhook that cannot be called (unreachable, timed out, TLS, a bad answer) refuses with kube's 500 under
  ``failurePolicy: Fail`` (``Internal error occurred: failed calling webhook "<name>": failed to call webhook: Post
  "<url>?timeout=10s": ...``) and is skipped under ``Ignore``;
- a dry run reaching a webhook whose ``sideEffects`` is neither None nor NoneOnDryRun is a 400, whatever the policy.
"""

from __future__ import annotations

import logging
import threading
import uuid
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from typing import Any

from mxjob_controller.local.apiserver import builtin, errors
from mxjob_controller.local.apiserver.auth.user import ADMIN, UserInfo
from mxjob_controller.local.apiserver.errors import StatusError
from mxjob_controller.local.apiserver.resources import Registry, ResourceType
from mxjob_controller.local.apiserver.storage.store import Store
from mxjob_controller.local.apiserver.webhooks.attributes import CREATE, UPDATE, AdmissionAttributes
from mxjob_controller.local.apiserver.webhooks.client import CallError, HookClient
from mxjob_controller.local.apiserver.webhooks.config import Webhook, webhooks_of

log = logging.getLogger(__name__)

_EXEMPT_KINDS = frozenset({"ValidatingWebhookConfiguration", "MutatingWebhookConfiguration",
                           "ValidatingAdmissionPolicy", "ValidatingAdmissionPolicyBinding",
                           "MutatingAdmissionPolicy", "MutatingAdmissionPolicyBinding"})

Convert = Callable[..., list[dict]]
"""``(rt, objects, version)``: the conversion the REST layer uses (:class:`~.conversion.Converter`)."""


@dataclass(frozen=True, slots=True)
class _Invocation:
    webhook: Webhook
    rt: ResourceType  # the resource (version) the webhook is called for


class _CallFailure(Exception):  # noqa: N818 - kube's ErrCallingWebhook: failurePolicy decides
    def __init__(self, webhook: str, reason: str) -> None:
        super().__init__(f'failed calling webhook "{webhook}": {reason}')


class ValidatingWebhooks:
    """The dispatcher: ``REST`` calls it for every create, update and delete once the object passed validation."""

    def __init__(self, store: Store, registry: Registry, client: HookClient, convert: Convert,
                 namespaces_key: str = builtin.NAMESPACES.storage_key) -> None:
        self._store = store
        self._registry = registry
        self._client = client
        self._convert = convert
        self._namespaces_key = namespaces_key
        self._key = builtin.VALIDATING_WEBHOOK_CONFIGURATIONS.storage_key
        self._parsed: dict[tuple[str, int], tuple[Webhook, ...]] = {}  # (configuration, resourceVersion) → hooks
        self._lock = threading.Lock()

    def active(self) -> bool:
        """Whether any configuration exists (most servers have none: writes then pay nothing)."""
        return next(self._store.iter_all(self._key), None) is not None

    def _webhooks(self) -> list[Webhook]:
        items, _ = self._store.list(self._key)  # sorted by name, as kube sorts configurations
        hooks: list[Webhook] = []
        with self._lock:
            live = set()
            for (_, name), entry in items:
                key = (name, entry.rv)
                live.add(key)
                parsed = self._parsed.get(key)
                if parsed is None:
                    parsed = self._parsed[key] = webhooks_of(entry.obj)
                hooks.extend(parsed)
            for stale in set(self._parsed) - live:
                del self._parsed[stale]
        return hooks

    def __call__(self, attrs: AdmissionAttributes, warnings: list[str]) -> None:
        """Admit ``attrs`` or raise the StatusError kube answers; the webhooks' warnings are added to ``warnings``
        (also when the write is refused: they go on the refusal)."""
        rt = attrs.rt
        if rt.group == "admissionregistration.k8s.io" and rt.kind in _EXEMPT_KINDS:
            return
        invocations = [inv for hook in self._webhooks() if (inv := self._should_call(hook, attrs)) is not None]
        if not invocations:
            return
        versioned: dict[str, tuple[dict | None, dict | None]] = {}
        for inv in invocations:
            if inv.rt.version not in versioned:
                versioned[inv.rt.version] = self._versioned(attrs, inv.rt)
        failures: list[StatusError] = []
        for inv in invocations:
            obj, old = versioned[inv.rt.version]
            try:
                self._call(inv, attrs, obj, old, warnings)
            except _CallFailure as e:
                if inv.webhook.failure_policy == "Ignore":
                    log.warning("Failed calling webhook, failing open %s: %s", inv.webhook.name, e)
                    continue
                log.warning("Failed calling webhook, failing closed %s: %s", inv.webhook.name, e)
                failures.append(errors.internal(str(e)))
            except StatusError as e:
                log.warning("rejected by webhook %r: %s", inv.webhook.name, e)
                failures.append(e)
        if failures:
            raise failures[0]

    # --- matching -------------------------------------------------------------------------------------

    def _should_call(self, hook: Webhook, attrs: AdmissionAttributes) -> _Invocation | None:
        """kube's ``ShouldCallHook``: selectors, then rules (then equivalent versions); a selector error only
        counts for a webhook whose rules match."""
        ns_match, ns_error = self._namespace_matches(hook, attrs)
        if not ns_match and ns_error is None:
            return None
        obj_match, obj_error = self._object_matches(hook, attrs)
        if not obj_match and obj_error is None:
            return None
        invocation = None
        if any(_rule_matches(rule, attrs, attrs.rt) for rule in hook.rules):
            invocation = _Invocation(hook, attrs.rt)
        elif hook.match_policy == "Equivalent":
            equivalents = [rt for rt in self._registry.all()  # a CRD's served versions, in its order
                           if rt.storage_key == attrs.rt.storage_key and rt.version != attrs.rt.version
                           and rt.is_custom]
            invocation = next((_Invocation(hook, rt) for rule in hook.rules for rt in equivalents
                               if _rule_matches(rule, attrs, rt)), None)
        if invocation is None:
            return None
        if ns_error is not None:
            raise ns_error
        if obj_error is not None:
            raise obj_error
        return invocation

    def _namespace_matches(self, hook: Webhook, attrs: AdmissionAttributes) -> tuple[bool, StatusError | None]:
        resource = attrs.rt.plural if not attrs.rt.group else ""
        if not attrs.namespace and resource != "namespaces":
            return True, None
        if hook.namespace_selector is None:
            return False, errors.internal(hook.selector_error)
        if hook.namespace_selector.empty:
            return True, None
        if resource == "namespaces" and not attrs.subresource and attrs.operation in (CREATE, UPDATE):
            labels = ((attrs.obj or {}).get("metadata") or {}).get("labels")
        else:
            entry = self._store.get(self._namespaces_key, ("", attrs.namespace))
            if entry is None:
                return False, errors.not_found(builtin.NAMESPACES.resource, attrs.namespace)
            labels = (entry.obj.get("metadata") or {}).get("labels")
        return hook.namespace_selector.matches(labels if isinstance(labels, Mapping) else {}), None

    @staticmethod
    def _object_matches(hook: Webhook, attrs: AdmissionAttributes) -> tuple[bool, StatusError | None]:
        if hook.object_selector is None:
            return False, errors.internal(hook.selector_error)
        if hook.object_selector.empty:
            return True, None
        for obj in (attrs.obj, attrs.old):
            if obj is not None:
                labels = (obj.get("metadata") or {}).get("labels")
                if hook.object_selector.matches(labels if isinstance(labels, Mapping) else {}):
                    return True, None
        return False, None

    def _versioned(self, attrs: AdmissionAttributes, rt: ResourceType) -> tuple[dict | None, dict | None]:
        """The new and old objects at ``rt``'s version (kube's ``VersionedAttributes``)."""
        out: list[dict | None] = []
        for obj in (attrs.obj, attrs.old):
            if obj is None or obj.get("apiVersion") == rt.api_version:
                out.append(obj)
                continue
            try:
                out.append(self._convert(rt, [obj], rt.version)[0])
            except StatusError as e:  # kube: NewInternalError of the conversion's error
                raise errors.internal(e.message) from None
        return out[0], out[1]

    # --- calling --------------------------------------------------------------------------------------

    def _call(self, inv: _Invocation, attrs: AdmissionAttributes, obj: dict | None, old: dict | None,
              warnings: list[str]) -> None:
        """kube's ``callHook``: StatusError for a refusal, _CallFailure when the webhook could not be asked."""
        hook = inv.webhook
        if attrs.dry_run and hook.side_effects not in ("None", "NoneOnDryRun"):
            raise errors.bad_request(f'admission webhook "{hook.name}" does not support dry run')
        version = next((v for v in hook.review_versions if v in ("v1", "v1beta1")), None)
        if version is None:
            raise _CallFailure(hook.name, "could not create admission objects: webhook does not accept known "
                                          "AdmissionReview versions (v1, v1beta1)")
        uid = str(uuid.uuid4())
        review = {"kind": "AdmissionReview", "apiVersion": f"admission.k8s.io/{version}",
                  "request": _request(uid, inv, attrs, obj, old)}
        try:
            answer = self._client.post(hook.client, review, hook.timeout)
        except CallError as e:
            raise _CallFailure(hook.name, f"failed to call webhook: {e}") from None
        try:
            allowed, result, hook_warnings = _verify(answer, uid, version)
        except ValueError as e:
            raise _CallFailure(hook.name, f"received invalid webhook response: {e}") from None
        for warning in hook_warnings:
            if warning not in warnings and _printable(warning):
                warnings.append(warning)
        if not allowed:
            raise _rejection(hook.name, result)


def _rule_matches(rule: Any, attrs: AdmissionAttributes, rt: ResourceType) -> bool:
    """kube's rules ``Matcher``, for the request as made (or with ``rt`` as an equivalent resource)."""
    is_namespace = rt.group == "" and rt.plural == "namespaces"
    if rule.scope == "Namespaced" and (is_namespace or not attrs.namespace):
        return False
    if rule.scope == "Cluster" and not (is_namespace or not attrs.namespace):
        return False
    if rule.scope not in ("*", "Namespaced", "Cluster"):
        return False
    if "*" not in rule.operations and attrs.operation not in rule.operations:
        return False
    if "*" not in rule.groups and rt.group not in rule.groups:
        return False
    if "*" not in rule.versions and rt.version not in rule.versions:
        return False
    for resource in rule.resources:
        res, _, sub = resource.partition("/")
        if res in ("*", rt.plural) and sub in ("*", attrs.subresource):
            return True
    return False


def _group_version_kind(rt: ResourceType) -> dict[str, str]:
    return {"group": rt.group, "version": rt.version, "kind": rt.kind}


def _group_version_resource(rt: ResourceType) -> dict[str, str]:
    return {"group": rt.group, "version": rt.version, "resource": rt.plural}


def _user_info(user: Any) -> dict[str, Any]:
    """``authentication.k8s.io/v1`` UserInfo as the review carries it (empty fields left out)."""
    info = user if isinstance(user, UserInfo) else ADMIN
    out: dict[str, Any] = {"username": info.name}
    if info.uid:
        out["uid"] = info.uid
    if info.groups:
        out["groups"] = list(info.groups)
    if info.extra:
        out["extra"] = {k: list(v) for k, v in info.extra}
    return out


def _request(uid: str, inv: _Invocation, attrs: AdmissionAttributes, obj: dict | None,
             old: dict | None) -> dict[str, Any]:
    """``CreateV1AdmissionReview``'s request: every field, empty optional ones left out as Go leaves them out;
    ``object``/``oldObject`` null when there is none."""
    request: dict[str, Any] = {"uid": uid, "kind": _group_version_kind(inv.rt),
                               "resource": _group_version_resource(inv.rt)}
    if attrs.subresource:
        request["subResource"] = attrs.subresource
    request["requestKind"] = _group_version_kind(attrs.rt)
    request["requestResource"] = _group_version_resource(attrs.rt)
    if attrs.subresource:
        request["requestSubResource"] = attrs.subresource
    if attrs.name:
        request["name"] = attrs.name
    if attrs.namespace:
        request["namespace"] = attrs.namespace
    request.update({"operation": attrs.operation, "userInfo": _user_info(attrs.user), "object": obj,
                    "oldObject": old, "dryRun": attrs.dry_run, "options": attrs.options or None})
    return request


def _gvk_text(answer: Mapping[str, Any]) -> str:
    api_version = answer.get("apiVersion") if isinstance(answer.get("apiVersion"), str) else ""
    group, _, version = str(api_version).rpartition("/")
    return f"{group}/{version}, Kind={answer.get('kind') or ''}"


def _verify(answer: Mapping[str, Any], uid: str, version: str) -> tuple[bool, dict | None, list[str]]:
    """kube's ``VerifyAdmissionResponse`` for a validating webhook: (allowed, status, warnings), or ValueError."""
    response = answer.get("response")
    if not isinstance(response, dict):
        raise ValueError("webhook response was absent")
    if version == "v1":
        got = response.get("uid")
        if got != uid:
            raise ValueError(f'expected response.uid="{uid}", got "{got if isinstance(got, str) else ""}"')
        if (answer.get("apiVersion"), answer.get("kind")) != ("admission.k8s.io/v1", "AdmissionReview"):
            raise ValueError("expected webhook response of admission.k8s.io/v1, Kind=AdmissionReview, got "
                             + _gvk_text(answer))
        if response.get("patch"):
            raise ValueError("validating webhook may not return response.patch")
        if response.get("patchType") is not None:
            raise ValueError("validating webhook may not return response.patchType")
    allowed = response.get("allowed")
    status = response.get("status")
    warnings = response.get("warnings")
    return (allowed is True, status if isinstance(status, dict) else None,
            [w for w in warnings if isinstance(w, str)] if isinstance(warnings, list) else [])


def _rejection(name: str, result: dict | None) -> StatusError:
    """kube's ``ToStatusErr``: the webhook's Status, its message prefixed, its code at least 400."""
    result = result or {}
    code = result.get("code")
    code = code if isinstance(code, int) and not isinstance(code, bool) and code >= 400 else 400
    denied = f'admission webhook "{name}" denied the request'
    message, reason = result.get("message"), result.get("reason")
    if isinstance(message, str) and message:
        text = f"{denied}: {message}"
    elif isinstance(reason, str) and reason:
        text = f"{denied}: {reason}"
    else:
        text = f"{denied} without explanation"
    details = result.get("details")
    return StatusError(code, reason if isinstance(reason, str) else "", text,
                       details if isinstance(details, dict) else None)


def _printable(text: str) -> bool:
    """kube drops a warning it cannot put in a header (control characters)."""
    return not any((ord(c) < 0x20 and c != "\t") or ord(c) == 0x7F for c in text)


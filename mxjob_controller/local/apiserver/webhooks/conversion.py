"""Custom resources between versions: a CRD's ``spec.conversion``, validated and applied as apiextensions-apiserver
does (``pkg/apiserver/conversion/webhook_converter.go`` and ``pkg/apis/apiextensions/validation``).

``strategy: None`` only rewrites ``apiVersion``. ``strategy: Webhook`` POSTs an ``apiextensions.k8s.io/v1`` (or
``v1beta1``) ``ConversionReview`` with every object not yet at the desired version, one review per call (a page of a
list is one call), and takes the answer only if it is whole: the same ``uid``, ``result.status: Success``, as many
objects as were sent, each at the desired ``apiVersion`` with the original's kind, name, namespace and uid
(``validateConvertedObject``). The original's metadata is then restored, all but labels and annotations
(``restoreObjectMeta``), and the object is pruned to the target version's structural schema (and, when read from
storage, defaulted), as kube's ``schemaCoercingConverter`` and decoder do. Anything else fails the request as kube
fails it: a 500 whose message names the conversion (``conversion webhook for example.com/v1, Kind=Widget failed:
...``), with no reason, since kube's storage returns it as a plain error.

A conversion webhook call has kube's fixed 30 s timeout (:attr:`Converter.timeout`, settable for tests).
"""

from __future__ import annotations

import copy
import json
import logging
import uuid
from collections.abc import Callable, Mapping, Sequence
from typing import Any

from mxjob_controller.kube.field_errors import FieldError, forbidden, invalid, not_supported, required
from mxjob_controller.kube.schema.compiled import CompiledSchema
from mxjob_controller.local.apiserver import errors
from mxjob_controller.local.apiserver.errors import Cause
from mxjob_controller.local.apiserver.resources import Registry, ResourceType
from mxjob_controller.local.apiserver.storage.store import Store
from mxjob_controller.local.apiserver.validation.meta import validate_annotations, validate_labels
from mxjob_controller.local.apiserver.webhooks.client import CallError, ClientConfig, HookClient
from mxjob_controller.local.apiserver.webhooks.config import (
    default_service_port,
    validate_client_config,
    validate_review_versions,
)

log = logging.getLogger(__name__)

CONVERSION_TIMEOUT = 30.0  # kube's webhook client timeout: conversion webhooks have no timeoutSeconds
SchemaFor = Callable[[ResourceType], "CompiledSchema | None"]
BuiltinConversion = Callable[[dict, str], dict]
"""(object, target apiVersion) -> the object at that version: a built-in kind's conversion."""


# --- the CRD's conversion stanza -------------------------------------------------------------------------

def default_conversion(spec: dict) -> None:
    """v1 defaults: ``strategy: None`` when there is no stanza, port 443 for a webhook's Service."""
    conversion = spec.setdefault("conversion", {"strategy": "None"})
    if isinstance(conversion, dict):
        webhook = conversion.get("webhook")
        if isinstance(webhook, dict):
            default_service_port(webhook.get("clientConfig"))


def validate_conversion(spec: Mapping[str, Any], old_spec: Mapping[str, Any] | None) -> list[Cause]:
    """``validateCustomResourceConversion``, with kube's paths: they name the internal API's fields
    (``spec.conversion.webhookClientConfig``, ``spec.conversion.conversionReviewVersions``), as kube reports them
    for a v1 CRD too."""
    conversion = spec.get("conversion")
    if not isinstance(conversion, Mapping):
        return []
    path = "spec.conversion"
    strategy = conversion.get("strategy") or ""
    webhook = conversion.get("webhook") if isinstance(conversion.get("webhook"), Mapping) else {}
    client = webhook.get("clientConfig")
    versions = webhook.get("conversionReviewVersions")
    causes: list[Cause] = []
    if strategy != "None" and spec.get("preserveUnknownFields") is True:
        causes.append(invalid(f"{path}.strategy", strategy, "must be None if spec.preserveUnknownFields is true"))
    if not strategy:
        causes.append(required(f"{path}.strategy"))
    elif strategy not in ("None", "Webhook"):
        causes.append(not_supported(f"{path}.strategy", strategy, ("None", "Webhook")))
    if strategy == "Webhook":
        if client is None:
            causes.append(required(f"{path}.webhookClientConfig", "required when strategy is set to Webhook"))
        else:
            causes.extend(validate_client_config(client, f"{path}.webhookClientConfig"))
        old_conversion = (old_spec or {}).get("conversion") or {}
        old_versions = ((old_conversion.get("webhook") or {}) if isinstance(old_conversion, Mapping) else {}) \
            .get("conversionReviewVersions")
        recognized = old_spec is None or not old_versions or any(v in ("v1", "v1beta1") for v in old_versions)
        causes.extend(validate_review_versions(versions, f"{path}.conversionReviewVersions", recognized,
                                               "conversion"))
    else:
        if client is not None:
            causes.append(forbidden(f"{path}.webhookClientConfig",
                                    "should not be set when strategy is not set to Webhook"))
        if versions:
            causes.append(forbidden(f"{path}.conversionReviewVersions",
                                    "should not be set when strategy is not set to Webhook"))
    return causes


# --- converting ----------------------------------------------------------------------------------------------

class ConversionError(Exception):
    """A conversion that failed: ``str()`` is kube's error text (``conversion webhook for ... failed: ...``)."""


def _gv(api_version: Any) -> str:
    return api_version if isinstance(api_version, str) else ""


def _gvk(api_version: str, kind: str) -> str:
    """``schema.GroupVersionKind.String()``: ``example.com/v1, Kind=Widget`` (``/v1, Kind=Pod`` in the core group)."""
    group, _, version = api_version.rpartition("/")
    return f"{group}/{version}, Kind={kind}"


def _go_type(value: Any) -> str:
    """Go's ``%T`` of a value decoded from JSON into ``interface{}``."""
    if value is None:
        return "<nil>"
    if isinstance(value, bool):
        return "bool"
    if isinstance(value, int):
        return "int64"
    return {float: "float64", str: "string", list: "[]interface {}", dict: "map[string]interface {}"}.get(
        type(value), type(value).__name__)


class Converter:
    """Converts stored objects of a custom resource to the version a request is served at, and written ones to the
    storage version. Reads the CRD at every call, so a changed ``spec.conversion`` applies at once."""

    def __init__(self, store: Store, registry: Registry, client: HookClient, schema_for: SchemaFor,
                 crds_key: str, builtin: Mapping[str, BuiltinConversion] | None = None) -> None:
        self._builtin = dict(builtin or {})   # storage key → conversion of a built-in kind (kinds/conversions.py)
        self._store = store
        self._registry = registry
        self._client = client
        self._schema_for = schema_for
        self._crds_key = crds_key
        self.timeout = CONVERSION_TIMEOUT

    def __call__(self, rt: ResourceType, objects: Sequence[dict], version: str, *, as_list: bool = False,
                 reading: bool = True) -> list[dict]:
        """``objects`` (of ``rt``'s kind, at any version) at ``version``; the inputs are never changed.

        ``as_list``: they are a page of a list (errors then speak of the list, as kube's do). ``reading``: from
        storage (defaults of the target version are applied). Raises kube's 500 (no reason) when conversion fails.
        """
        try:
            return self._convert(rt, objects, version, as_list, reading)
        except ConversionError as e:
            log.warning("%s", e)
            raise errors.unclassified(str(e)) from None

    def _convert(self, rt: ResourceType, objects: Sequence[dict], version: str, as_list: bool,
                 reading: bool) -> list[dict]:
        if not reading and version == (rt.storage_version or rt.version):
            target = rt.storage_api_version   # another group's, for a kind stored with another's objects
        else:
            target = f"{rt.group}/{version}" if rt.group else version
        pending = [o for o in objects if o.get("apiVersion") != target]
        if not pending:
            return list(objects)
        builtin = self._builtin.get(rt.storage_key)
        if builtin is not None:
            return [o if o.get("apiVersion") == target else builtin(o, target) for o in objects]
        conversion = self._conversion(rt)
        if conversion.get("strategy") != "Webhook":
            return [o if o.get("apiVersion") == target else {**o, "apiVersion": target} for o in objects]
        converted = iter(self._webhook(rt, conversion, pending, target, as_list, reading))
        return [o if o.get("apiVersion") == target else next(converted) for o in objects]

    def _conversion(self, rt: ResourceType) -> Mapping[str, Any]:
        if not rt.crd_name:
            return {}
        entry = self._store.get(self._crds_key, ("", rt.crd_name))
        conversion = ((entry.obj.get("spec") or {}).get("conversion") if entry is not None else None) or {}
        return conversion if isinstance(conversion, Mapping) else {}

    def _webhook(self, rt: ResourceType, conversion: Mapping[str, Any], pending: list[dict], target: str,
                 as_list: bool, reading: bool) -> list[dict]:
        webhook = conversion.get("webhook") or {}
        what = _gvk(target, rt.list_kind) if as_list else _gvk(_gv(pending[0].get("apiVersion")), rt.kind)
        review_version = next((v for v in webhook.get("conversionReviewVersions") or () if v in ("v1", "v1beta1")),
                              None)
        if review_version is None:
            raise ConversionError("no supported conversion review versions")
        uid = str(uuid.uuid4())
        review = {"kind": "ConversionReview", "apiVersion": f"apiextensions.k8s.io/{review_version}",
                  "request": {"uid": uid, "desiredAPIVersion": target, "objects": pending},
                  "response": {"uid": "", "convertedObjects": None, "result": {"metadata": {}}}}
        try:
            answer = self._client.post(ClientConfig.from_json(webhook.get("clientConfig") or {}), review,
                                       self.timeout)
        except CallError as e:
            raise ConversionError(f"conversion webhook for {what} failed: {e}") from None
        try:
            objects = _converted_objects(answer, uid, review_version)
        except ValueError as e:
            raise ConversionError(f"conversion webhook for {what} failed: {e}") from None
        if len(objects) != len(pending):
            raise ConversionError(f"conversion webhook for {what} returned {len(objects)} objects, expected "
                                  f"{len(pending)}")
        target_rt = self._registry.get(rt.group, target.rpartition("/")[2], rt.plural)
        schema = self._schema_for(target_rt) if target_rt is not None else None
        out = []
        for index, (original, raw) in enumerate(zip(pending, objects, strict=True)):
            obj = self._checked(original, raw, target, what, index, as_list)
            if schema is not None:
                schema.apply(obj, prune=True, defaults=reading, rules=False)
            out.append(obj)
        return out

    @staticmethod
    def _checked(original: dict, raw: Any, target: str, what: str, index: int, as_list: bool) -> dict:
        """One converted object, checked and with the original's metadata restored (kube's order of checks)."""
        invalid_at = f"returned invalid converted object at index {index}" if as_list else \
            f"returned invalid object at index {index}"
        if not isinstance(raw, dict):
            problem = f"json: cannot unmarshal {_json_kind(raw)} into Go value of type map[string]interface {{}}"
            raise ConversionError(f"conversion webhook for {what} {invalid_at}: {problem}" if as_list else problem)
        if not raw.get("kind"):
            problem = f"Object 'Kind' is missing in '{json.dumps(raw, separators=(',', ':'))}'"
            raise ConversionError(f"conversion webhook for {what} {invalid_at}: {problem}" if as_list else problem)
        received = _gv(raw.get("apiVersion"))
        if received != target:
            raise ConversionError(f"conversion webhook for {what} {invalid_at}: invalid groupVersion (expected "
                                  f"{target}, received {received})")
        if raw.get("kind") != original.get("kind"):
            raise ConversionError(f"conversion webhook for {what} {invalid_at}: invalid kind (expected "
                                  f"{original.get('kind')}, received {raw.get('kind')})")
        problem = _validate_converted(original, raw)
        if problem:
            where = invalid_at if as_list else "returned invalid object"
            raise ConversionError(f"conversion webhook for {what} {where}: {problem}")
        converted = copy.deepcopy(raw)
        problem = _restore_object_meta(original, converted)
        if problem:
            where = f"returned invalid metadata in object at index {index}" if as_list else \
                "returned invalid metadata"
            raise ConversionError(f"conversion webhook for {what} {where}: {problem}")
        return converted


def _json_kind(value: Any) -> str:
    if isinstance(value, bool):
        return "bool"
    if isinstance(value, int | float):
        return "number"
    return {str: "string", list: "array"}.get(type(value), "value")


def _converted_objects(answer: Any, uid: str, review_version: str) -> list[Any]:
    """``getConvertedObjectsFromResponse``: ValueError with kube's text when the review is not a success."""
    if review_version == "v1":
        got = _gvk(_gv(answer.get("apiVersion")), str(answer.get("kind") or ""))
        if (answer.get("apiVersion"), answer.get("kind")) != ("apiextensions.k8s.io/v1", "ConversionReview"):
            raise ValueError(f"expected webhook response of apiextensions.k8s.io/v1, Kind=ConversionReview, got {got}")
    response = answer.get("response")
    if not isinstance(response, dict):
        raise ValueError("no response provided")
    if review_version == "v1" and response.get("uid") != uid:
        raise ValueError(f"expected response.uid={json.dumps(uid)}, got {json.dumps(str(response.get('uid') or ''))}")
    result = response.get("result") if isinstance(response.get("result"), dict) else {}
    if result.get("status") != "Success":
        if result.get("message"):
            raise ValueError(str(result["message"]))
        raise ValueError(f"response.result.status was '{result.get('status') or ''}', not 'Success'")
    objects = response.get("convertedObjects")
    return list(objects) if isinstance(objects, list) else []


def _validate_converted(original: Mapping[str, Any], converted: Mapping[str, Any]) -> str:
    """kube's ``validateConvertedObject``."""
    meta_in, meta_out = original.get("metadata") or {}, converted.get("metadata") or {}
    meta_out = meta_out if isinstance(meta_out, Mapping) else {}
    for label, a, b in (("kind", original.get("kind"), converted.get("kind")),
                        ("name", meta_in.get("name"), meta_out.get("name")),
                        ("namespace", meta_in.get("namespace"), meta_out.get("namespace")),
                        ("UID", meta_in.get("uid"), meta_out.get("uid"))):
        if (a or "") != (b or ""):
            return f"must have the same {label}: {a or ''} != {b or ''}"
    return ""


def _restore_object_meta(original: Mapping[str, Any], converted: dict) -> str:
    """kube's ``restoreObjectMeta``: the original's metadata, with the converted labels and annotations (checked
    when they changed). Returns the problem, "" when there is none."""
    if "metadata" not in converted:
        return "missing metadata in converted object"
    answered = converted["metadata"]
    if not isinstance(answered, dict):
        return f"invalid metadata of type {_go_type(answered)} in converted object"
    restored = copy.deepcopy(original.get("metadata")) if "metadata" in original else {}
    converted["metadata"] = restored
    for key in ("labels", "annotations"):
        value = answered.get(key)
        if value is None:
            restored.pop(key, None)
            continue
        if not isinstance(value, dict):
            return f"invalid metadata.{key} of type {_go_type(value)} in converted object"
        before = restored.get(key)
        if before is not None and not isinstance(before, dict):
            return f"invalid metadata.{key} of type {_go_type(before)} in original object"
        for k, v in value.items():
            if not isinstance(v, str):
                return f"metadata.{key}[{k}] must be a string, but is {_go_type(v)} in converted object"
        if value != (before or {}):
            causes: list[FieldError] = (validate_labels(value, "metadata.labels") if key == "labels"
                                        else validate_annotations(value, "metadata.annotation"))
            if causes:
                texts = [str(c) for c in causes]
                return texts[0] if len(texts) == 1 else "[" + ", ".join(texts) + "]"
        restored[key] = value
    return ""

"""``admissionregistration.k8s.io/v1`` ValidatingWebhookConfiguration: defaults, validation and how kubectl prints it,
as kube-apiserver has them (``pkg/apis/admissionregistration/{v1/defaults,validation/validation}.go``), and the
parsed form the dispatcher matches requests against.

Defaults (v1): ``failurePolicy: Fail``, ``matchPolicy: Equivalent``, ``namespaceSelector``/``objectSelector``
``{}``, ``timeoutSeconds: 10``, each rule's ``scope: "*"``, a service's ``port: 443``. ``sideEffects`` and
``admissionReviewVersions`` have no default: v1 requires them.

Validation follows kube's order and words, field paths included. The schema check that runs before it (types,
pruning, label selectors) is compiled without the ``required`` lists of the definitions kube's Go validation
reports itself (:data:`GO_VALIDATED`), so a missing ``sideEffects`` reads ``Required value: must specify one of
None, NoneOnDryRun`` as in kube, not twice. On update, kube relaxes three checks for configurations that already
broke them (side effects, unknown review versions, duplicate names): so does :class:`ValidatingWebhookStrategy`.
``matchConditions`` (CEL) are stored but not evaluated: every matching webhook is called.
"""

from __future__ import annotations

import functools
import json
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any
from urllib.parse import urlsplit

from mxjob_controller.kube import k8s_schemas
from mxjob_controller.kube.field_errors import FieldError, duplicate, invalid, not_supported, required
from mxjob_controller.kube.names import dns1035_label_errors, dns1123_subdomain_errors
from mxjob_controller.kube.schema import rules as schema_rules
from mxjob_controller.kube.schema.builtin import REQUIRED_ELSEWHERE
from mxjob_controller.kube.schema.compiled import CompiledSchema
from mxjob_controller.kube.schema.compiler import BUILTIN, Compiler
from mxjob_controller.kube.selectors import LabelSelector, SelectorError, selector_from_label_selector
from mxjob_controller.local.apiserver.encoding import printers
from mxjob_controller.local.apiserver.errors import Cause
from mxjob_controller.local.apiserver.strategy import Strategy, WriteContext
from mxjob_controller.local.apiserver.webhooks.client import ClientConfig

ACCEPTED_REVIEW_VERSIONS = ("v1", "v1beta1")
NO_SIDE_EFFECTS = ("None", "NoneOnDryRun")
SIDE_EFFECTS = ("None", "NoneOnDryRun", "Some", "Unknown")
FAILURE_POLICIES = ("Fail", "Ignore")
MATCH_POLICIES = ("Equivalent", "Exact")
OPERATIONS = ("*", "CONNECT", "CREATE", "DELETE", "UPDATE")
SCOPES = ("*", "Cluster", "Namespaced")
DEFAULT_TIMEOUT = 10
_URL_FORM = "; desired format: https://host[/path]"

#: Definitions whose missing fields kube's Go validation reports in its own words (see the module's docstring).
GO_VALIDATED = frozenset({
    "io.k8s.api.admissionregistration.v1.ValidatingWebhook",
    "io.k8s.api.admissionregistration.v1.MutatingWebhook",
    "io.k8s.api.admissionregistration.v1.ServiceReference",
    "io.k8s.apiextensions-apiserver.pkg.apis.apiextensions.v1.ServiceReference",
    "io.k8s.apiextensions-apiserver.pkg.apis.apiextensions.v1.WebhookConversion",
})


@functools.cache
def _compiler() -> Compiler:
    schema_rules.load()
    return Compiler(BUILTIN, k8s_schemas.definitions(), schema_rules.rules_for,
                    required_elsewhere=REQUIRED_ELSEWHERE | GO_VALIDATED)


@functools.cache
def object_schema(api_version: str, kind: str) -> CompiledSchema | None:
    """The schema check of a built-in kind whose webhook fields kube validates in Go (this kind, and CRDs for their
    conversion webhook): compiled once, like every built-in schema."""
    group, _, version = api_version.rpartition("/")
    name = k8s_schemas.definition_name(group, version, kind)
    return CompiledSchema(_compiler().definition(name)) if name else None


#: The kinds whose schema comes from :func:`object_schema`: ``(apiVersion, kind)``.
SCHEMA_KINDS = (("admissionregistration.k8s.io/v1", "ValidatingWebhookConfiguration"),
                ("admissionregistration.k8s.io/v1", "MutatingWebhookConfiguration"),
                ("apiextensions.k8s.io/v1", "CustomResourceDefinition"))


# --- defaults ------------------------------------------------------------------------------------------

def _webhooks(obj: Mapping[str, Any]) -> list[dict]:
    hooks = obj.get("webhooks")
    return [h for h in hooks if isinstance(h, dict)] if isinstance(hooks, list) else []


def default_service_port(client_config: Any) -> None:
    service = client_config.get("service") if isinstance(client_config, dict) else None
    if isinstance(service, dict) and service.get("port") is None:
        service["port"] = 443


class ValidatingWebhookStrategy(Strategy):
    def default(self, obj: dict, ctx: WriteContext) -> None:
        for hook in _webhooks(obj):
            hook.setdefault("failurePolicy", "Fail")
            hook.setdefault("matchPolicy", "Equivalent")
            for key in ("namespaceSelector", "objectSelector"):
                if hook.get(key) is None:
                    hook[key] = {}
            if hook.get("timeoutSeconds") is None:
                hook["timeoutSeconds"] = DEFAULT_TIMEOUT
            for rule in hook.get("rules") or ():
                if isinstance(rule, dict) and rule.get("scope") is None:
                    rule["scope"] = "*"
            default_service_port(hook.get("clientConfig"))

    def validate(self, obj: dict, old: dict | None, ctx: WriteContext) -> list[Cause]:
        causes = super().validate(obj, old, ctx)
        if old is None:
            causes.extend(validate_configuration(obj))
        else:
            old_hooks = _webhooks(old)
            causes.extend(validate_configuration(
                obj,
                require_no_side_effects=all(h.get("sideEffects") in NO_SIDE_EFFECTS for h in old_hooks),
                require_recognized_version=all(_recognized_or_empty(h.get("admissionReviewVersions"))
                                               for h in old_hooks),
                require_unique_names=len({h.get("name") for h in old_hooks}) == len(old_hooks)))
        return causes


class MutatingWebhookStrategy(ValidatingWebhookStrategy):
    """MutatingWebhookConfigurations are stored and served with kube's defaults and validation; this server calls
    no mutating webhook (docs/local-cluster.md): only validating ones are called on writes."""

    def default(self, obj: dict, ctx: WriteContext) -> None:
        super().default(obj, ctx)
        for hook in _webhooks(obj):
            hook.setdefault("reinvocationPolicy", "Never")

    def validate(self, obj: dict, old: dict | None, ctx: WriteContext) -> list[Cause]:
        causes = super().validate(obj, old, ctx)
        for i, hook in enumerate(_webhooks(obj)):
            policy = hook.get("reinvocationPolicy")
            if policy not in (None, "Never", "IfNeeded"):
                causes.append(not_supported(f"webhooks[{i}].reinvocationPolicy", policy, ("IfNeeded", "Never")))
        return causes


def _recognized_or_empty(versions: Any) -> bool:
    return not versions or any(v in ACCEPTED_REVIEW_VERSIONS for v in versions)


# --- validation ----------------------------------------------------------------------------------------

def go_slice(values: Sequence[Any], type_name: str = "[]string") -> str:
    """Go's ``%#v`` of a slice of strings: ``[]string{"*", "apps"}``."""
    return type_name + "{" + ", ".join(json.dumps(v) for v in values) + "}"


def _invalid_slice(path: str, values: Sequence[Any], detail: str, type_name: str = "[]string") -> FieldError:
    return FieldError(path, "FieldValueInvalid", f"Invalid value: {go_slice(values, type_name)}: {detail}")


def validate_configuration(obj: Mapping[str, Any], *, require_no_side_effects: bool = True,
                           require_recognized_version: bool = True,
                           require_unique_names: bool = True) -> list[Cause]:
    """``ValidateValidatingWebhookConfiguration`` (its ObjectMeta part is the server's, done for every kind)."""
    causes: list[Cause] = []
    names: set[str] = set()
    for i, hook in enumerate(_webhooks(obj)):
        path = f"webhooks[{i}]"
        causes.extend(_validate_webhook(hook, path, require_no_side_effects))
        causes.extend(validate_review_versions(hook.get("admissionReviewVersions"), f"{path}.admissionReviewVersions",
                                               require_recognized_version, "admission"))
        name = hook.get("name")
        if require_unique_names and isinstance(name, str) and name:
            if name in names:
                causes.append(duplicate(f"{path}.name", name))
            names.add(name)
    return causes


def _validate_webhook(hook: Mapping[str, Any], path: str, require_no_side_effects: bool) -> list[Cause]:
    causes = _fully_qualified_name(f"{path}.name", hook.get("name"))
    for j, rule in enumerate(hook.get("rules") or ()):
        if isinstance(rule, Mapping):
            causes.extend(_validate_rule(rule, f"{path}.rules[{j}]"))
    policy = hook.get("failurePolicy")
    if policy is not None and policy not in FAILURE_POLICIES:
        causes.append(not_supported(f"{path}.failurePolicy", policy, FAILURE_POLICIES))
    match_policy = hook.get("matchPolicy")
    if match_policy is not None and match_policy not in MATCH_POLICIES:
        causes.append(not_supported(f"{path}.matchPolicy", match_policy, MATCH_POLICIES))
    allowed = NO_SIDE_EFFECTS if require_no_side_effects else SIDE_EFFECTS
    side_effects = hook.get("sideEffects")
    if side_effects is None:
        causes.append(required(f"{path}.sideEffects", f"must specify one of {', '.join(allowed)}"))
    elif side_effects not in allowed:
        causes.append(not_supported(f"{path}.sideEffects", side_effects, allowed))
    timeout = hook.get("timeoutSeconds")
    if isinstance(timeout, int) and not 1 <= timeout <= 30:
        causes.append(invalid(f"{path}.timeoutSeconds", timeout, "the timeout value must be between 1 and 30 seconds"))
    causes.extend(validate_client_config(hook.get("clientConfig"), f"{path}.clientConfig"))
    return causes


def _fully_qualified_name(path: str, name: Any) -> list[Cause]:
    """apimachinery's ``IsFullyQualifiedName``."""
    if not name:
        return [required(path)]
    if not isinstance(name, str):
        return []
    errs = dns1123_subdomain_errors(name)
    if errs:
        return [invalid(path, name, ",".join(errs))]
    if len(name.split(".")) < 3:
        return [invalid(path, name, "should be a domain with at least three segments separated by dots")]
    return []


def _strings(value: Any) -> list[str]:
    return [v for v in value if isinstance(v, str)] if isinstance(value, list) else []


def _validate_rule(rule: Mapping[str, Any], path: str) -> list[Cause]:
    """``validateRuleWithOperations`` (subresources allowed)."""
    causes: list[Cause] = []
    operations = _strings(rule.get("operations"))
    if not operations:
        causes.append(required(f"{path}.operations"))
    if len(operations) > 1 and "*" in operations:
        causes.append(_invalid_slice(f"{path}.operations", operations, "if '*' is present, must not specify other "
                                     "operations", "[]admissionregistration.OperationType"))
    for i, op in enumerate(operations):
        if op not in OPERATIONS:
            causes.append(not_supported(f"{path}.operations[{i}]", op, OPERATIONS))
    groups = _strings(rule.get("apiGroups"))
    if not groups:
        causes.append(required(f"{path}.apiGroups"))
    if len(groups) > 1 and "*" in groups:
        causes.append(_invalid_slice(f"{path}.apiGroups", groups, "if '*' is present, must not specify other API "
                                     "groups"))
    versions = _strings(rule.get("apiVersions"))
    if not versions:
        causes.append(required(f"{path}.apiVersions"))
    if len(versions) > 1 and "*" in versions:
        causes.append(_invalid_slice(f"{path}.apiVersions", versions, "if '*' is present, must not specify other "
                                     "API versions"))
    for i, version in enumerate(versions):
        if version == "":
            causes.append(required(f"{path}.apiVersions[{i}]"))
    causes.extend(_validate_resources(_strings(rule.get("resources")), f"{path}.resources"))
    scope = rule.get("scope")
    if scope is not None and scope not in SCOPES:
        causes.append(not_supported(f"{path}.scope", scope, SCOPES))
    return causes


def _validate_resources(resources: list[str], path: str) -> list[Cause]:
    causes: list[Cause] = []
    if not resources:
        causes.append(required(path))
    with_wildcard_sub: set[str] = set()      # x/*
    sub_with_wildcard_res: set[str] = set()  # */x
    double = single = plain = False
    for i, res_sub in enumerate(resources):
        if res_sub == "":
            causes.append(required(f"{path}[{i}]"))
            continue
        double = double or res_sub == "*/*"
        single = single or res_sub == "*"
        if "/" not in res_sub:
            plain = res_sub != "*"  # as kube has it: the last one without a subresource decides
            continue
        res, sub = res_sub.split("/", 1)
        if res in with_wildcard_sub:
            causes.append(invalid(f"{path}[{i}]", res_sub, f"if '{res}/*' is present, must not specify {res_sub}"))
        if sub in sub_with_wildcard_res:
            causes.append(invalid(f"{path}[{i}]", res_sub, f"if '*/{sub}' is present, must not specify {res_sub}"))
        if sub == "*":
            with_wildcard_sub.add(res)
        if res == "*":
            sub_with_wildcard_res.add(sub)
    if len(resources) > 1 and double:
        causes.append(_invalid_slice(path, resources, "if '*/*' is present, must not specify other resources"))
    if single and plain:
        causes.append(_invalid_slice(path, resources, "if '*' is present, must not specify other resources without "
                                     "subresources"))
    return causes


def validate_review_versions(versions: Any, path: str, require_recognized: bool, what: str) -> list[Cause]:
    """``validateAdmissionReviewVersions`` / ``validateConversionReviewVersions`` (``what``: admission, conversion;
    they differ only in what a missing list says)."""
    values = _strings(versions)
    if not values:
        detail = f"must specify one of {', '.join(ACCEPTED_REVIEW_VERSIONS)}" if what == "admission" else ""
        return [required(path, detail)]
    causes: list[Cause] = []
    seen: set[str] = set()
    for i, version in enumerate(values):
        if version in seen:
            causes.append(invalid(f"{path}[{i}]", version, "duplicate version"))
            continue
        seen.add(version)
        causes.extend(invalid(f"{path}[{i}]", version, m) for m in dns1035_label_errors(version))
    if require_recognized and not any(v in ACCEPTED_REVIEW_VERSIONS for v in values):
        causes.append(_invalid_slice(path, values, "must include at least one of "
                                     + ", ".join(ACCEPTED_REVIEW_VERSIONS)))
    return causes


def validate_client_config(config: Any, path: str) -> list[Cause]:
    """A webhook's ``clientConfig``: exactly one of ``url`` (https) and ``service``."""
    config = config if isinstance(config, Mapping) else {}
    url, service = config.get("url"), config.get("service")
    if (url is None) == (service is None):
        return [required(path, "exactly one of url or service is required")]
    if url is not None:
        return validate_url(str(url), f"{path}.url")
    return validate_service(service if isinstance(service, Mapping) else {}, f"{path}.service")


def validate_url(url: str, path: str) -> list[Cause]:
    """apiserver's ``ValidateWebhookURL`` with https forced."""
    try:
        parts = urlsplit(url)
    except ValueError as e:
        why = "missing ']' in host" if "IPv6" in str(e) else str(e)
        return [required(path, f'url must be a valid URL: parse "{url}": {why}{_URL_FORM}')]
    port = parts.netloc.rpartition("@")[2].rpartition("]")[2].partition(":")[2]
    if port and not port.isdigit():  # Go's url.Parse takes any digits (the range is the dialer's business)
        return [required(path, f'url must be a valid URL: parse "{url}": invalid port ":{port}" after host'
                               f"{_URL_FORM}")]
    causes: list[Cause] = []
    if parts.scheme != "https":
        causes.append(invalid(path, parts.scheme, "'https' is the only allowed URL scheme" + _URL_FORM))
    host = parts.netloc.rpartition("@")[2]
    if not host:
        causes.append(invalid(path, host, "host must be specified" + _URL_FORM))
    if "@" in parts.netloc:
        causes.append(invalid(path, parts.netloc.rpartition("@")[0], "user information is not permitted in the URL"))
    if parts.fragment:
        causes.append(invalid(path, parts.fragment, "fragments are not permitted in the URL"))
    if parts.query:
        causes.append(invalid(path, parts.query, "query parameters are not permitted in the URL"))
    return causes


def validate_service(service: Mapping[str, Any], path: str) -> list[Cause]:
    """apiserver's ``ValidateWebhookService``."""
    causes: list[Cause] = []
    if not service.get("name"):
        causes.append(required(f"{path}.name", "service name is required"))
    if not service.get("namespace"):
        causes.append(required(f"{path}.namespace", "service namespace is required"))
    port = service.get("port")
    if isinstance(port, int) and not 1 <= port <= 65535:
        causes.append(invalid(f"{path}.port", port, "port is not valid: must be between 1 and 65535, inclusive"))
    url_path = service.get("path")
    if not isinstance(url_path, str) or url_path in ("", "/"):
        return causes
    if url_path == "//":
        return [*causes, invalid(f"{path}.path", url_path, "segment[0] may not be empty")]
    if not url_path.startswith("/"):
        causes.append(invalid(f"{path}.path", url_path, "must start with a '/'"))
    check = url_path[1:]
    if check.endswith("/"):
        check = check[:-1]
    for i, step in enumerate(check.split("/")):
        if not step:
            causes.append(invalid(f"{path}.path", url_path, f"segment[{i}] may not be empty"))
            continue
        causes.extend(invalid(f"{path}.path", url_path, f"segment[{i}]: {m}") for m in dns1123_subdomain_errors(step))
    return causes


# --- what the dispatcher matches against -------------------------------------------------------------------

@dataclass(frozen=True, slots=True)
class Rule:
    operations: tuple[str, ...]
    groups: tuple[str, ...]
    versions: tuple[str, ...]
    resources: tuple[str, ...]
    scope: str


@dataclass(frozen=True, slots=True)
class Webhook:
    """One webhook of a stored configuration, parsed once per configuration version."""

    configuration: str
    name: str
    rules: tuple[Rule, ...]
    failure_policy: str
    match_policy: str
    namespace_selector: LabelSelector | None  # None: unparsable (``selector_error`` says why)
    object_selector: LabelSelector | None
    selector_error: str
    side_effects: str
    timeout: int
    review_versions: tuple[str, ...]
    client: ClientConfig


def _selector(value: Any) -> tuple[LabelSelector | None, str]:
    try:
        return selector_from_label_selector(value if isinstance(value, Mapping) else {}), ""
    except (SelectorError, KeyError, TypeError) as e:
        return None, str(e)


def webhooks_of(configuration: Mapping[str, Any]) -> tuple[Webhook, ...]:
    """The webhooks of a stored (defaulted, validated) configuration, in order."""
    name = str((configuration.get("metadata") or {}).get("name") or "")
    out = []
    for hook in _webhooks(configuration):
        rules = tuple(Rule(tuple(_strings(r.get("operations"))), tuple(_strings(r.get("apiGroups"))),
                           tuple(_strings(r.get("apiVersions"))), tuple(_strings(r.get("resources"))),
                           str(r.get("scope") or "*"))
                      for r in hook.get("rules") or () if isinstance(r, Mapping))
        ns_selector, ns_error = _selector(hook.get("namespaceSelector"))
        obj_selector, obj_error = _selector(hook.get("objectSelector"))
        out.append(Webhook(
            configuration=name, name=str(hook.get("name") or ""), rules=rules,
            failure_policy=str(hook.get("failurePolicy") or "Fail"),
            match_policy=str(hook.get("matchPolicy") or "Equivalent"),
            namespace_selector=ns_selector, object_selector=obj_selector, selector_error=ns_error or obj_error,
            side_effects=str(hook.get("sideEffects") or ""), timeout=int(hook.get("timeoutSeconds") or DEFAULT_TIMEOUT),
            review_versions=tuple(_strings(hook.get("admissionReviewVersions"))),
            client=ClientConfig.from_json(hook.get("clientConfig") or {})))
    return tuple(out)


# --- kubectl get ---------------------------------------------------------------------------------------------

def _print_row(obj: Mapping[str, Any], now: float) -> tuple[list[Any], None]:
    hooks = obj.get("webhooks")
    return [(obj.get("metadata") or {}).get("name", ""), len(hooks) if isinstance(hooks, list) else 0,
            printers.age(obj, now)], None


def printer() -> printers.Printer:
    """kube's columns: NAME, WEBHOOKS, AGE."""
    return printers.Printer((printers.name_column(),
                             printers.Column("Webhooks", "integer", description="Webhooks indicates the number of "
                                             "webhooks registered in this configuration"),
                             printers.age_column()), _print_row)


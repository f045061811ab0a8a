"""The PodSecurity plugin's configuration, read as kube-apiserver reads it from ``--admission-control-config-file``.

That file is an ``AdmissionConfiguration`` (``apiserver.config.k8s.io/v1``) whose ``PodSecurity`` plugin carries a
``PodSecurityConfiguration`` (``pod-security.admission.config.k8s.io/v1``; ``v1beta1`` and ``v1alpha1`` read the
same) inline under ``configuration`` or in the file at ``path`` (relative to the admission file). Without one, kube's
defaults hold: every mode ``privileged`` at ``latest``, nobody exempt.

Errors are kube's: each field error of the configuration, in kube's order, after ``PodSecurity invalid:``; a file
that is not such a document says what it is instead. Raised as :class:`ConfigError` (a ValueError), which the CLI
reports before anything starts.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import replace
from pathlib import Path
from typing import Any

import yaml

from mxjob_controller.kube import field_errors
from mxjob_controller.kube.field_errors import FieldError
from mxjob_controller.kube.names import dns1123_label_errors, dns1123_subdomain_errors
from mxjob_controller.local.apiserver.auth.pod_security_admission import PodSecurityConfiguration
from mxjob_controller.local.apiserver.auth.pod_security_labels import LevelVersion, levels_and_versions

ADMISSION_API_VERSIONS = ("apiserver.config.k8s.io/v1", "apiserver.config.k8s.io/v1alpha1",
                          "apiserver.k8s.io/v1alpha1")
POD_SECURITY_API_VERSIONS = tuple(f"pod-security.admission.config.k8s.io/{v}" for v in ("v1", "v1beta1", "v1alpha1"))
PLUGIN = "PodSecurity"


class ConfigError(ValueError):
    """The configuration cannot be used; the message says why, as kube-apiserver would at start."""


def _names(exemptions: Mapping[str, Any], key: str, check: Any) -> tuple[set[str], list[FieldError]]:
    values = exemptions.get(key) or []
    if not isinstance(values, list):
        raise ConfigError(f"exemptions.{key}: must be a list of strings")
    errors, seen = [], set()
    for i, item in enumerate(values):
        path, value = f"exemptions.{key}[{i}]", str(item)
        problems = check(value)
        if problems:
            errors.append(field_errors.invalid(path, value, ", ".join(problems)))
        elif value in seen:
            errors.append(field_errors.duplicate(path, value))
        else:
            seen.add(value)
    return seen, errors


def pod_security_configuration(doc: Mapping[str, Any]) -> PodSecurityConfiguration:
    """A ``PodSecurityConfiguration`` document, validated as kube validates it."""
    if doc.get("kind") != "PodSecurityConfiguration" or doc.get("apiVersion") not in POD_SECURITY_API_VERSIONS:
        raise ConfigError(f"expected PodSecurityConfiguration ({', '.join(POD_SECURITY_API_VERSIONS)}), got "
                          f"{doc.get('apiVersion')}/{doc.get('kind')}")
    defaults, exemptions = doc.get("defaults") or {}, doc.get("exemptions") or {}
    if not isinstance(defaults, Mapping) or not isinstance(exemptions, Mapping):
        raise ConfigError("defaults and exemptions must be objects")
    policy, errors = levels_and_versions(defaults)
    namespaces, ns_errors = _names(exemptions, "namespaces", dns1123_label_errors)
    classes, class_errors = _names(exemptions, "runtimeClasses", dns1123_subdomain_errors)
    users, user_errors = _names(exemptions, "usernames", lambda v: [] if v else ["username must not be empty"])
    errors += ns_errors + class_errors + user_errors
    if errors:
        raise ConfigError(f"{PLUGIN} invalid: {field_errors.aggregate(errors)}")
    return PodSecurityConfiguration(policy, frozenset(users), frozenset(namespaces), frozenset(classes))


def _load_yaml(path: Path) -> Any:
    try:
        return yaml.safe_load(path.read_text(encoding="utf-8"))
    except OSError as e:
        raise ConfigError(f"cannot read {path}: {e.strerror or e}") from None
    except yaml.YAMLError as e:
        raise ConfigError(f"{path}: {e}") from None


def load_admission_configuration(path: str | Path) -> PodSecurityConfiguration:
    """The PodSecurity configuration of an ``AdmissionConfiguration`` file (kube's defaults when it has none)."""
    path = Path(path)
    doc = _load_yaml(path)
    if not isinstance(doc, Mapping) or doc.get("kind") != "AdmissionConfiguration" or \
            doc.get("apiVersion") not in ADMISSION_API_VERSIONS:
        raise ConfigError(f"{path}: expected an AdmissionConfiguration ({', '.join(ADMISSION_API_VERSIONS)})")
    for plugin in doc.get("plugins") or []:
        if not isinstance(plugin, Mapping) or plugin.get("name") != PLUGIN:
            continue
        config = plugin.get("configuration")
        if config is None and plugin.get("path"):
            config = _load_yaml(path.parent / str(plugin["path"]))
        if not isinstance(config, Mapping):
            raise ConfigError(f"{path}: the {PLUGIN} plugin has neither configuration nor a readable path")
        return pod_security_configuration(config)
    return PodSecurityConfiguration()


def with_enforce(config: PodSecurityConfiguration, level: str | None) -> PodSecurityConfiguration:
    """``config`` with its default enforce level replaced (``local up --pod-security``), at its default version."""
    if level is None:
        return config
    enforce = LevelVersion(level, config.defaults.enforce.minor)
    return replace(config, defaults=replace(config.defaults, enforce=enforce))

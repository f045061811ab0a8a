"""Pod Security levels, policy versions and the namespace labels that choose them (pod-security-admission's ``api``).

A namespace says what it enforces, audits and warns about with ``pod-security.kubernetes.io/{enforce,audit,warn}``
(``privileged``, ``baseline`` or ``restricted``) and each mode's ``-version`` (``latest`` or ``v1.<minor>``); what it
does not say comes from the cluster's defaults (``PodSecurityConfiguration.defaults``). As kube resolves them
(:func:`policy_to_evaluate`):

- a bad level or version is an error (a namespace create refuses it; a namespace that has one already is evaluated
  anyway): a bad enforce level enforces ``restricted`` (fail closed), a bad audit or warn level is ``privileged``
  (fail open), a bad version is ``latest``;
- an enforce level set on the namespace and stricter than the warn level warns at the enforce level (and version,
  unless a warn version is set), so that a user sees what a stricter namespace would refuse.

Pure: no I/O.
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from dataclasses import dataclass

from mxjob_controller.kube import field_errors
from mxjob_controller.kube.field_errors import FieldError

PRIVILEGED, BASELINE, RESTRICTED = "privileged", "baseline", "restricted"
LEVELS = (PRIVILEGED, BASELINE, RESTRICTED)
LATEST = "latest"

LABEL_PREFIX = "pod-security.kubernetes.io/"   # also the prefix of the audit annotations
ENFORCE_LABEL, ENFORCE_VERSION_LABEL = LABEL_PREFIX + "enforce", LABEL_PREFIX + "enforce-version"
AUDIT_LABEL, AUDIT_VERSION_LABEL = LABEL_PREFIX + "audit", LABEL_PREFIX + "audit-version"
WARN_LABEL, WARN_VERSION_LABEL = LABEL_PREFIX + "warn", LABEL_PREFIX + "warn-version"
MODES = ("enforce", "audit", "warn")

_VERSION = re.compile(r"v1\.(0|[1-9][0-9]*)")
_LEVEL_ERROR = "must be one of privileged, baseline, restricted"
_VERSION_ERROR = 'must be "latest" or "v1.x"'


@dataclass(frozen=True, slots=True)
class LevelVersion:
    """A level at a policy version: ``minor`` None is ``latest``."""

    level: str
    minor: int | None = None

    def __str__(self) -> str:
        return f"{self.level}:{version_text(self.minor)}"

    def equivalent(self, other: LevelVersion) -> bool:
        """Both privileged (whatever their versions), or the same level and version."""
        return (self.level == PRIVILEGED and other.level == PRIVILEGED) or self == other


@dataclass(frozen=True, slots=True)
class Policy:
    enforce: LevelVersion
    audit: LevelVersion
    warn: LevelVersion

    @property
    def fully_privileged(self) -> bool:
        return self.enforce.level == self.audit.level == self.warn.level == PRIVILEGED

    def equivalent(self, other: Policy) -> bool:
        return (self.enforce.equivalent(other.enforce) and self.audit.equivalent(other.audit)
                and self.warn.equivalent(other.warn))


PRIVILEGED_POLICY = Policy(LevelVersion(PRIVILEGED), LevelVersion(PRIVILEGED), LevelVersion(PRIVILEGED))


def version_text(minor: int | None) -> str:
    return LATEST if minor is None else f"v1.{minor}"


def parse_level(text: str) -> tuple[str, str | None]:
    """(the level, None) or (``restricted``, kube's error)."""
    return (text, None) if text in LEVELS else (RESTRICTED, _LEVEL_ERROR)


def parse_version(text: str) -> tuple[int | None, str | None]:
    """(the minor, None; None for ``latest``) or (None, kube's error)."""
    if text == LATEST:
        return None, None
    match = _VERSION.fullmatch(text)
    return (int(match.group(1)), None) if match else (None, _VERSION_ERROR)


def compare_levels(a: str, b: str) -> int:
    """-1, 0 or 1 as ``a`` is less strict than, as strict as, or stricter than ``b``."""
    rank = {PRIVILEGED: 0, BASELINE: 1, RESTRICTED: 2}
    ra, rb = rank.get(a, -1), rank.get(b, -1)
    return (ra > rb) - (ra < rb)


def _label_error(label: str, value: str, why: str) -> FieldError:
    return field_errors.invalid(field_errors.key_child("metadata.labels", label), value, why)


#: Policies of valid labels worked out lately, by (the labels' items, id(defaults)) → (defaults, the policy): every
#: pod admitted reads its namespace's labels again, and a namespace's labels seldom change. Cleared when full.
_POLICIES: dict[tuple[tuple, int], tuple[Policy, Policy]] = {}
_POLICIES_KEPT = 256


def policy_to_evaluate(labels: Mapping[str, str] | None, defaults: Policy) -> tuple[Policy, list[FieldError]]:
    """The policy a namespace with ``labels`` has, and the errors of its labels (the policy is valid either way)."""
    if not labels:
        return defaults, []
    try:
        key: tuple[tuple, int] | None = (tuple(labels.items()), id(defaults))
        hit = _POLICIES.get(key)   # type: ignore[arg-type]
    except TypeError:   # a label value that is not a string (never in a stored namespace)
        key = hit = None
    if hit is not None and hit[0] is defaults:
        return hit[1], []
    policy, errors = _policy_to_evaluate(labels, defaults)
    if key is not None and not errors:
        if len(_POLICIES) >= _POLICIES_KEPT:
            _POLICIES.clear()
        _POLICIES[key] = (defaults, policy)
    return policy, errors


def _policy_to_evaluate(labels: Mapping[str, str], defaults: Policy) -> tuple[Policy, list[FieldError]]:
    """:func:`policy_to_evaluate` worked out."""
    errors: list[FieldError] = []
    modes = {"enforce": defaults.enforce, "audit": defaults.audit, "warn": defaults.warn}
    set_level: dict[str, bool] = {}
    for mode in MODES:
        level_label, version_label = LABEL_PREFIX + mode, LABEL_PREFIX + mode + "-version"
        level, minor = modes[mode].level, modes[mode].minor
        if level_label in labels:
            level, why = parse_level(str(labels[level_label]))
            set_level[mode] = why is None
            if why is not None:
                errors.append(_label_error(level_label, str(labels[level_label]), why))
                if mode != "enforce":
                    level = PRIVILEGED   # audit and warn fail open
        if version_label in labels:
            minor, why = parse_version(str(labels[version_label]))
            if why is not None:
                errors.append(_label_error(version_label, str(labels[version_label]), why))
        modes[mode] = LevelVersion(level, minor)
    warn = modes["warn"]
    if WARN_LABEL not in labels and set_level.get("enforce") and compare_levels(modes["enforce"].level,
                                                                                 warn.level) > 0:
        warn = LevelVersion(modes["enforce"].level,
                            warn.minor if WARN_VERSION_LABEL in labels else modes["enforce"].minor)
    return Policy(modes["enforce"], modes["audit"], warn), errors


def levels_and_versions(defaults: Mapping[str, str]) -> tuple[Policy, list[FieldError]]:
    """A ``PodSecurityConfiguration``'s ``defaults`` (kube's field names; unset ones privileged at latest, as kube
    defaults them) as a policy, and its errors (paths ``defaults.<field>``)."""
    errors: list[FieldError] = []
    modes = {}
    for mode in ("enforce", "warn", "audit"):   # kube's order of validating them
        level_text = str(defaults.get(mode) or PRIVILEGED)
        version_text_ = str(defaults.get(f"{mode}-version") or LATEST)
        level, why = parse_level(level_text)
        if why is not None:
            errors.append(field_errors.invalid(f"defaults.{mode}", level_text, why))
        minor, why = parse_version(version_text_)
        if why is not None:
            errors.append(field_errors.invalid(f"defaults.{mode}-version", version_text_, why))
        modes[mode] = LevelVersion(level, minor)
    return Policy(modes["enforce"], modes["audit"], modes["warn"]), errors

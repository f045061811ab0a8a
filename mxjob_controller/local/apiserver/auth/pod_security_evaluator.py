"""Which Pod Security checks (``pod_security.py``) a level runs at a policy version, in kube's order: the
``policy`` package's registry.

Each check has versions, each the first policy version it applies to; a restricted check may stand in for a
baseline one (``restrictedVolumes`` for ``hostPathVolumes``), from the version it does so. :class:`Evaluator` runs
the checks of a level at a version in kube's order (baseline checks first, each group sorted by id), so that a
message lists its reasons as kube-apiserver's does.

``latest``, and any version past the server's own (``KUBE_VERSION``), is evaluated at the server's version, as kube
caps it at its (emulated) version: a ``v1.35`` label on this 1.32 server gets the 1.32 checks. Checks added after
1.32 are in the table all the same, so that raising ``KUBE_VERSION`` brings them in.
"""

from __future__ import annotations

from dataclasses import dataclass

from mxjob_controller.kube.k8s_schemas import KUBE_VERSION
from mxjob_controller.local.apiserver.auth.pod_security import (
    CheckFn,
    Forbidden,
    Meta,
    Spec,
    allow_privilege_escalation_1_8,
    allow_privilege_escalation_1_25,
    app_armor_profile_1_0,
    capabilities_baseline_1_0,
    capabilities_restricted_1_22,
    capabilities_restricted_1_25,
    host_namespaces_1_0,
    host_path_volumes_1_0,
    host_ports_1_0,
    host_probes_and_host_lifecycle_1_34,
    privileged_1_0,
    proc_mount_1_0,
    proc_mount_1_35_baseline,
    restricted_volumes_1_0,
    run_as_non_root_1_0,
    run_as_non_root_1_35,
    run_as_user_1_23,
    run_as_user_1_35,
    se_linux_options_1_0,
    se_linux_options_1_31,
    seccomp_profile_baseline_1_0,
    seccomp_profile_baseline_1_19,
    seccomp_profile_restricted_1_19,
    seccomp_profile_restricted_1_25,
    sysctls_1_0,
    sysctls_1_27,
    sysctls_1_29,
    sysctls_1_32,
    sysctls_1_37,
    windows_host_process_1_0,
)
from mxjob_controller.local.apiserver.auth.pod_security_labels import BASELINE, PRIVILEGED, RESTRICTED, LevelVersion


@dataclass(frozen=True, slots=True)
class VersionedCheck:
    minimum: int                      # the first policy version (v1.<minimum>) it applies to
    fn: CheckFn
    overrides: tuple[str, ...] = ()   # baseline checks it stands in for (restricted checks only)


@dataclass(frozen=True, slots=True)
class Check:
    id: str
    level: str
    versions: tuple[VersionedCheck, ...]   # minimums strictly increasing

    def at(self, minor: int) -> VersionedCheck | None:
        """The version of this check a policy at v1.<minor> runs, if any."""
        chosen = None
        for v in self.versions:
            if v.minimum <= minor:
                chosen = v
        return chosen


def _check(id_: str, level: str, *versions: tuple[int, CheckFn] | tuple[int, CheckFn, tuple[str, ...]]) -> Check:
    return Check(id_, level, tuple(VersionedCheck(*v) for v in versions))


CHECKS: tuple[Check, ...] = (
    _check("appArmorProfile", BASELINE, (0, app_armor_profile_1_0)),
    _check("capabilities_baseline", BASELINE, (0, capabilities_baseline_1_0)),
    _check("hostNamespaces", BASELINE, (0, host_namespaces_1_0)),
    _check("hostPathVolumes", BASELINE, (0, host_path_volumes_1_0)),
    _check("hostPorts", BASELINE, (0, host_ports_1_0)),
    _check("hostProbesAndHostLifecycle", BASELINE, (34, host_probes_and_host_lifecycle_1_34)),
    _check("privileged", BASELINE, (0, privileged_1_0)),
    _check("procMount", BASELINE, (0, proc_mount_1_0), (35, proc_mount_1_35_baseline)),
    _check("seLinuxOptions", BASELINE, (0, se_linux_options_1_0), (31, se_linux_options_1_31)),
    _check("seccompProfile_baseline", BASELINE, (0, seccomp_profile_baseline_1_0),
           (19, seccomp_profile_baseline_1_19)),
    _check("sysctls", BASELINE, (0, sysctls_1_0), (27, sysctls_1_27), (29, sysctls_1_29), (32, sysctls_1_32),
           (37, sysctls_1_37)),
    _check("windowsHostProcess", BASELINE, (0, windows_host_process_1_0)),
    _check("allowPrivilegeEscalation", RESTRICTED, (8, allow_privilege_escalation_1_8),
           (25, allow_privilege_escalation_1_25)),
    _check("capabilities_restricted", RESTRICTED, (22, capabilities_restricted_1_22, ("capabilities_baseline",)),
           (25, capabilities_restricted_1_25, ("capabilities_baseline",))),
    _check("procMount_restricted", RESTRICTED, (35, proc_mount_1_0, ("procMount",))),
    _check("restrictedVolumes", RESTRICTED, (0, restricted_volumes_1_0, ("hostPathVolumes",))),
    _check("runAsNonRoot", RESTRICTED, (0, run_as_non_root_1_0), (35, run_as_non_root_1_35)),
    _check("runAsUser", RESTRICTED, (23, run_as_user_1_23), (35, run_as_user_1_35)),
    _check("seccompProfile_restricted", RESTRICTED, (19, seccomp_profile_restricted_1_19, ("seccompProfile_baseline",)),
           (25, seccomp_profile_restricted_1_25, ("seccompProfile_baseline",))),
)


SERVER_MINOR = int(KUBE_VERSION.split(".")[1])   # the policy version ``latest`` is, on this server


class Evaluator:
    """The checks of a level at a version, in kube's order; ``emulation`` caps the versions evaluated (the server's
    own minor by default; None: the newest check's)."""

    def __init__(self, checks: tuple[Check, ...] = CHECKS, emulation: int | None = SERVER_MINOR) -> None:
        newest = max(v.minimum for c in checks for v in c.versions)
        self.max_minor = newest if emulation is None else min(newest, emulation)
        ordered = sorted((c for c in checks if c.level == BASELINE), key=lambda c: c.id) + \
            sorted((c for c in checks if c.level == RESTRICTED), key=lambda c: c.id)
        self._ordered = tuple(ordered)
        self._cache: dict[tuple[str, int], tuple[CheckFn, ...]] = {}

    def minor(self, lv: LevelVersion) -> int:
        """The version ``lv`` is evaluated at: its own, capped at the newest this evaluator knows."""
        return self.max_minor if lv.minor is None else min(lv.minor, self.max_minor)

    def checks(self, level: str, minor: int) -> tuple[CheckFn, ...]:
        key = (level, minor)
        cached = self._cache.get(key)
        if cached is None:
            active = [(c, c.at(minor)) for c in self._ordered
                      if c.level == BASELINE or (level == RESTRICTED and c.level == RESTRICTED)]
            overridden = {o for c, v in active if v is not None and c.level == RESTRICTED for o in v.overrides}
            cached = tuple(v.fn for c, v in active if v is not None and c.id not in overridden)
            self._cache[key] = cached
        return cached

    def evaluate(self, lv: LevelVersion, meta: Meta, spec: Spec) -> list[Forbidden]:
        """What the policy ``lv`` refuses of a pod (empty: allowed)."""
        if lv.level == PRIVILEGED:
            return []
        results = (fn(meta, spec) for fn in self.checks(lv.level, self.minor(lv)))
        return [r if r.reason else Forbidden("unknown forbidden reason", r.detail) for r in results if r is not None]


def forbidden_reason(results: list[Forbidden]) -> str:
    """The reasons alone (``host ports, privileged``): what a namespace's dry run lists per pod."""
    return ", ".join(r.reason for r in results)


def forbidden_detail(results: list[Forbidden]) -> str:
    """``runAsUser=0 (pod must not set runAsUser=0), seccompProfile (...)``: what a refusal or warning says."""
    return ", ".join(f"{r.reason} ({r.detail})" if r.detail else r.reason for r in results)

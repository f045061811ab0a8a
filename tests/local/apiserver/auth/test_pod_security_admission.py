"""The PodSecurity admission plugin's decisions, pure (its namespace and pod lookups given as dicts): the case lists of
pod-security-admission's ``admission/admission_test.go`` (namespace label changes and their dry run over existing
pods, pods and their controllers' templates, exemptions), and the configuration file kube-apiserver reads."""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import pytest

from mxjob_controller.local.apiserver.auth import pod_security_admission as psa
from mxjob_controller.local.apiserver.auth.pod_security import Forbidden
from mxjob_controller.local.apiserver.auth.pod_security_admission import (
    CREATE,
    UPDATE,
    PodSecurity,
    PodSecurityConfiguration,
    significant_pod_update,
)
from mxjob_controller.local.apiserver.auth.pod_security_config import (
    ConfigError,
    load_admission_configuration,
    pod_security_configuration,
    with_enforce,
)
from mxjob_controller.local.apiserver.auth.pod_security_labels import (
    BASELINE,
    PRIVILEGED,
    PRIVILEGED_POLICY,
    RESTRICTED,
    LevelVersion,
    Policy,
)
from mxjob_controller.local.apiserver.auth.user import UserInfo
from mxjob_controller.local.apiserver.builtin import DEPLOYMENTS, NAMESPACES, PODS
from mxjob_controller.local.apiserver.resources import ResourceType

ENFORCE, AUDIT, WARN = (f"pod-security.kubernetes.io/{m}" for m in ("enforce", "audit", "warn"))
ENFORCE_VERSION = "pod-security.kubernetes.io/enforce-version"


@dataclass
class Attrs:
    operation: str
    rt: ResourceType
    obj: dict | None
    old: dict | None = None
    subresource: str = ""
    name: str = "test-pod"
    namespace: str = ""
    user: Any = None


# --- namespaces: labels validated, a stricter enforce level dry-run over the namespace's pods ----------------------

@dataclass
class FakeEvaluator:
    """kube's testEvaluator: a pod's ``error`` annotation is what it is refused for; records the level evaluated."""

    evaluated: list[LevelVersion] = field(default_factory=list)

    def evaluate(self, lv: LevelVersion, meta: dict, spec: dict) -> list[Forbidden]:
        self.evaluated.append(lv)
        error = (meta.get("annotations") or {}).get("error")
        return [Forbidden(error)] if error else []


def fake_pod(name: str, error: str, runtime_class: str | None = None, controller: str | None = None) -> dict:
    meta: dict[str, Any] = {"name": name, "annotations": {"error": error}}
    if controller:
        meta["ownerReferences"] = [{"uid": controller, "controller": True}]
    return {"metadata": meta, "spec": {"runtimeClassName": runtime_class} if runtime_class else {}}


DEFAULT_PODS = [fake_pod("noruntimeclasspod", "message"), fake_pod("runtimeclass1pod", "message", "runtimeclass1"),
                fake_pod("runtimeclass2pod", "message", "runtimeclass2"),
                fake_pod("runtimeclass3pod", "message, message2")]
NS_CASES: list[dict[str, Any]] = [
    {"name": "create privileged", "new": {ENFORCE: PRIVILEGED, ENFORCE_VERSION: "v1.0"}},
    {"name": "create baseline", "new": {ENFORCE: BASELINE}},
    {"name": "create restricted", "new": {ENFORCE: RESTRICTED}},
    {"name": "create restricted exempt", "new": {ENFORCE: RESTRICTED}, "exempt_ns": ["test"], "warnings": [
        'namespace "test" is exempt from Pod Security, and the policy (enforce=restricted:latest) will be ignored']},
    {"name": "create malformed level", "new": {ENFORCE: "unknown"},
     "error": 'Namespace "test" is invalid: metadata.labels[pod-security.kubernetes.io/enforce]: Invalid value: '
              '"unknown": must be one of privileged, baseline, restricted'},
    {"name": "create malformed version", "new": {ENFORCE: PRIVILEGED, ENFORCE_VERSION: "unknown"},
     "error": 'Namespace "test" is invalid: metadata.labels[pod-security.kubernetes.io/enforce-version]: Invalid '
              'value: "unknown": must be "latest" or "v1.x"'},
    {"name": "update no-op", "new": {ENFORCE: RESTRICTED, ENFORCE_VERSION: "v1.0"},
     "old": {ENFORCE: RESTRICTED, ENFORCE_VERSION: "v1.0"}},
    {"name": "update no-op malformed level", "new": {ENFORCE: "unknown"}, "old": {ENFORCE: "unknown"}},
    {"name": "update no-op malformed version", "new": {ENFORCE: BASELINE, ENFORCE_VERSION: "unknown"},
     "old": {ENFORCE: BASELINE, ENFORCE_VERSION: "unknown"}},
    {"name": "update relax level identical version", "new": {ENFORCE: BASELINE, ENFORCE_VERSION: "v1.0"},
     "old": {ENFORCE: RESTRICTED, ENFORCE_VERSION: "v1.0"}},
    {"name": "update relax level explicit latest", "new": {ENFORCE: BASELINE, ENFORCE_VERSION: "latest"},
     "old": {ENFORCE: RESTRICTED, ENFORCE_VERSION: "latest"}},
    {"name": "update relax level implicit latest", "new": {ENFORCE: BASELINE}, "old": {ENFORCE: RESTRICTED}},
    {"name": "update to explicit privileged", "new": {ENFORCE: PRIVILEGED},
     "old": {ENFORCE: RESTRICTED, ENFORCE_VERSION: "v1.0"}},
    {"name": "update to implicit privileged", "new": {}, "old": {ENFORCE: RESTRICTED, ENFORCE_VERSION: "v1.0"}},
    {"name": "update exempt to restricted", "exempt_ns": ["test"],
     "new": {ENFORCE: RESTRICTED, ENFORCE_VERSION: "v1.0", AUDIT: RESTRICTED, WARN: BASELINE}, "old": {},
     "warnings": ['namespace "test" is exempt from Pod Security, and the policy (enforce=restricted:v1.0, '
                  "audit=restricted:latest, warn=baseline:latest) will be ignored"]},
    {"name": "update malformed level", "new": {ENFORCE: "unknown"},
     "old": {ENFORCE: RESTRICTED, ENFORCE_VERSION: "v1.0"}, "error": "must be one of privileged, baseline, restricted"},
    {"name": "update malformed version", "new": {ENFORCE: PRIVILEGED, ENFORCE_VERSION: "unknown"},
     "old": {ENFORCE: RESTRICTED, ENFORCE_VERSION: "v1.0"}, "error": 'must be "latest" or "v1.x"'},
    {"name": "update to implicit restricted", "new": {}, "old": {ENFORCE: BASELINE, ENFORCE_VERSION: "v1.0"},
     "defaults": Policy(LevelVersion(RESTRICTED), LevelVersion(PRIVILEGED), LevelVersion(PRIVILEGED)),
     "evaluate": LevelVersion(RESTRICTED), "warnings": [
         'existing pods in namespace "test" violate the new PodSecurity enforce level "restricted:latest"',
         "noruntimeclasspod (and 2 other pods): message", "runtimeclass3pod: message, message2"]},
    {"name": "update with runtimeclass exempt pods", "exempt_rc": ["runtimeclass1"],
     "new": {ENFORCE: RESTRICTED}, "old": {ENFORCE: BASELINE}, "evaluate": LevelVersion(RESTRICTED), "warnings": [
         'existing pods in namespace "test" violate the new PodSecurity enforce level "restricted:latest"',
         "noruntimeclasspod (and 1 other pod): message", "runtimeclass3pod: message, message2"]},
    {"name": "timeout on evaluate", "new": {ENFORCE: RESTRICTED}, "old": {ENFORCE: BASELINE},
     "clock_steps": [0.0, 0.55, 1.1], "evaluate": LevelVersion(RESTRICTED), "warnings": [
         "new PodSecurity enforce level only checked against the first 2 of 4 existing pods",
         'existing pods in namespace "test" violate the new PodSecurity enforce level "restricted:latest"',
         "noruntimeclasspod (and 1 other pod): message"]},
    {"name": "bound number of pods", "new": {ENFORCE: RESTRICTED}, "old": {ENFORCE: BASELINE}, "max_pods": 4,
     "pods": [fake_pod(f"pod{i}", "message") for i in range(1, 6)], "evaluate": LevelVersion(RESTRICTED),
     "warnings": ["new PodSecurity enforce level only checked against the first 4 of 5 existing pods",
                  'existing pods in namespace "test" violate the new PodSecurity enforce level "restricted:latest"',
                  "pod1 (and 3 other pods): message"]},
    {"name": "prioritized pods", "exempt_rc": ["runtimeclass1"], "new": {ENFORCE: RESTRICTED},
     "old": {ENFORCE: BASELINE}, "max_pods": 4, "evaluate": LevelVersion(RESTRICTED),
     "pods": [fake_pod(f"exemptpod{i}", "message1", "runtimeclass1") for i in range(1, 5)]
     + [fake_pod(f"replicaset1pod{i}", "replicaset1error", controller="1") for i in range(1, 5)]
     + [fake_pod(f"replicaset2pod{i}", "replicaset2error", controller="2") for i in range(1, 5)]
     + [fake_pod(f"uniquepod{i}", f"uniquemessage{i}") for i in range(1, 5)],
     "warnings": ["new PodSecurity enforce level only checked against the first 4 of 12 existing pods",
                  'existing pods in namespace "test" violate the new PodSecurity enforce level "restricted:latest"',
                  "replicaset1pod1: replicaset1error", "replicaset2pod1: replicaset2error",
                  "uniquepod1: uniquemessage1", "uniquepod2: uniquemessage2"]},
    {"name": "status subresource is not checked", "new": {ENFORCE: "unknown"}, "old": {}, "subresource": "status"},
]


@pytest.mark.parametrize("case", NS_CASES, ids=[c["name"] for c in NS_CASES])
def test_namespace(case: dict[str, Any], monkeypatch: pytest.MonkeyPatch):
    monkeypatch.setattr(psa, "NAMESPACE_MAX_PODS", case.get("max_pods", psa.NAMESPACE_MAX_PODS))
    steps = iter(case.get("clock_steps", []))
    listed: list[str] = []
    evaluator = FakeEvaluator()

    def pods(namespace: str) -> list[dict]:
        listed.append(namespace)
        return case.get("pods", DEFAULT_PODS)

    config = PodSecurityConfiguration(case.get("defaults", PRIVILEGED_POLICY),
                                      namespaces=frozenset(case.get("exempt_ns", ())),
                                      runtime_classes=frozenset(case.get("exempt_rc", ())))
    plugin = PodSecurity(config, lambda name: None, pods, evaluator,   # type: ignore[arg-type]
                         clock=lambda: next(steps, 0.0))
    new = {"metadata": {"name": "test", "labels": case["new"]}}
    old = {"metadata": {"name": "test", "labels": case["old"]}} if "old" in case else None
    decision = plugin.admit(Attrs(UPDATE if old is not None else CREATE, NAMESPACES, new, old,
                                  subresource=case.get("subresource", ""), name="test", namespace="test"))
    if "error" in case:
        assert decision.refusal is not None and decision.refusal.code == 422
        assert case["error"] in decision.refusal.message
    else:
        assert decision.refusal is None
    assert decision.warnings == case.get("warnings", [])
    assert listed == (["test"] if "evaluate" in case else [])
    assert set(evaluator.evaluated) == ({case["evaluate"]} if "evaluate" in case else set())


@pytest.mark.parametrize(("given", "defaults", "contains"), [
    ({}, PRIVILEGED_POLICY, None),
    ({ENFORCE: PRIVILEGED, ENFORCE_VERSION: "v1.24", "pod-security.kubernetes.io/warn-version": "v1.25"},
     PRIVILEGED_POLICY, None),
    ({ENFORCE: BASELINE}, PRIVILEGED_POLICY, "(enforce=baseline:latest)"),
    ({WARN: BASELINE}, PRIVILEGED_POLICY, "(warn=baseline:latest)"),
    ({AUDIT: RESTRICTED}, PRIVILEGED_POLICY, "(audit=restricted:latest)"),
    ({}, Policy(*(LevelVersion(BASELINE, 23),) * 3), None),
    ({"pod-security.kubernetes.io/warn-version": "latest"}, Policy(*(LevelVersion(BASELINE, 23),) * 3),
     "(warn=baseline:latest)"),
])
def test_exempt_namespace_warning(given: dict, defaults: Policy, contains: str | None):
    """Only what the namespace's own pod-security labels set is named (kube's sentinel label is never shown)."""
    plugin = PodSecurity(PodSecurityConfiguration(defaults, namespaces=frozenset({"ns"})), lambda n: None,
                         lambda n: [])
    labels = {**given, "qqincegidneocgu": "vpmxkpcjphxrcpx"}
    decision = plugin.admit(Attrs(CREATE, NAMESPACES, {"metadata": {"name": "ns", "labels": labels}}, name="ns",
                                  namespace="ns"))
    if contains is None:
        assert decision.warnings == []
    else:
        [warning] = decision.warnings
        assert contains in warning and "qqincegidneocgu" not in warning and "vpmxkpcjphxrcpx" not in warning


# --- pods and pod controllers (TestValidatePodAndController) -----------------------------------------------------

def ns(enforce: str = "", warn: str = "", audit: str = "") -> dict:
    labels = {k: v for k, v in ((ENFORCE, enforce), (WARN, warn), (AUDIT, audit)) if v}
    return {"metadata": {"labels": labels}}


NAMESPACES_BY_NAME = {
    "exempt-ns": ns(RESTRICTED, RESTRICTED, RESTRICTED), "implicit-ns": ns(),
    "privileged-ns": ns(PRIVILEGED, PRIVILEGED, PRIVILEGED), "baseline-ns": ns(BASELINE, BASELINE, BASELINE),
    "baseline-warn-ns": ns(warn=BASELINE), "baseline-audit-ns": ns(audit=BASELINE),
    "restricted-ns": ns(RESTRICTED, RESTRICTED, RESTRICTED), "invalid-ns": ns("not-a-valid-level"),
}
RESTRICTED_POD = {"metadata": {"name": "test-pod", "labels": {"foo": "bar"}}, "spec": {
    "securityContext": {"runAsNonRoot": True, "seccompProfile": {"type": "RuntimeDefault"}},
    "containers": [{"name": "c", "image": "img", "securityContext": {
        "allowPrivilegeEscalation": False, "capabilities": {"drop": ["ALL"]}}}]}}
BASELINE_POD = {"metadata": {"name": "test-pod", "labels": {"foo": "bar"}},
                "spec": {"containers": [{"name": "c", "image": "img"}]}}


def variant(pod: dict, **spec: Any) -> dict:
    out = {"metadata": dict(pod["metadata"]), "spec": {**pod["spec"], **spec}}
    return out


PRIVILEGED_POD = variant(BASELINE_POD, containers=[{"name": "c", "image": "img",
                                                    "securityContext": {"privileged": True}}])
EXEMPT_RC_POD = variant(PRIVILEGED_POD, runtimeClassName="exempt-runtimeclass")
TOLERANT_POD = variant(PRIVILEGED_POD, tolerations=[{"operator": "Exists"}])
DIFFERENT_PRIVILEGED_POD = variant(PRIVILEGED_POD, containers=[
    {"name": "c", "image": "https://example.com/a-different-image", "securityContext": {"privileged": True}}])
DIFFERENT_RESTRICTED_POD = variant(RESTRICTED_POD, containers=[
    {**RESTRICTED_POD["spec"]["containers"][0], "image": "https://example.com/a-different-image"}])
PRIV_DETAIL = 'privileged (container "c" must not set securityContext.privileged=true)'

# (desc, namespace, user, pod, old pod, subresource, allowed, refusal reason, annotations, warning levels)
POD_CASES: list[tuple[Any, ...]] = [
    ("ignored subresource", "restricted-ns", "", PRIVILEGED_POD, None, "status", True, "", {}, []),
    ("exempt namespace", "exempt-ns", "", PRIVILEGED_POD, None, "", True, "", {"exempt": "namespace"}, []),
    ("exempt user", "restricted-ns", "exempt-user", PRIVILEGED_POD, None, "", True, "", {"exempt": "user"}, []),
    ("exempt runtimeClass", "restricted-ns", "", EXEMPT_RC_POD, None, "", True, "", {"exempt": "runtimeClass"}, []),
    ("short-circuit privileged:latest (implicit)", "implicit-ns", "", PRIVILEGED_POD, None, "", True, "",
     {"enforce-policy": "privileged:latest"}, []),
    ("short-circuit privileged:latest (explicit)", "privileged-ns", "", PRIVILEGED_POD, None, "", True, "",
     {"enforce-policy": "privileged:latest"}, []),
    ("insignificant update", "restricted-ns", "", TOLERANT_POD, PRIVILEGED_POD, "", True, "", {}, []),
    ("significant update denied", "restricted-ns", "", DIFFERENT_PRIVILEGED_POD, PRIVILEGED_POD, "", False,
     "Forbidden", {"enforce-policy": "restricted:latest", "audit-violations": "restricted:latest"}, ["restricted"]),
    ("significant update allowed", "restricted-ns", "", DIFFERENT_RESTRICTED_POD, RESTRICTED_POD, "", True, "",
     {"enforce-policy": "restricted:latest"}, []),
    ("invalid namespace labels", "invalid-ns", "", BASELINE_POD, None, "", False, "Forbidden",
     {"enforce-policy": "restricted:latest", "error": "Failed to parse policy"}, []),
    ("enforce deny", "restricted-ns", "", PRIVILEGED_POD, None, "", False, "Forbidden",
     {"enforce-policy": "restricted:latest", "audit-violations": "restricted:latest"}, ["restricted"]),
    ("enforce allow", "baseline-ns", "", BASELINE_POD, None, "", True, "", {"enforce-policy": "baseline:latest"}, []),
    ("warn deny", "baseline-warn-ns", "", PRIVILEGED_POD, None, "", True, "", {"enforce-policy": "privileged:latest"},
     ["baseline"]),
    ("audit deny", "baseline-audit-ns", "", PRIVILEGED_POD, None, "", True, "",
     {"enforce-policy": "privileged:latest", "audit-violations": "baseline:latest"}, []),
    ("namespace not found", "missing-ns", "", RESTRICTED_POD, None, "", False, "InternalError",
     {"error": 'Internal error occurred: failed to lookup namespace "missing-ns": not found'}, []),
]


def plugin_for_cases() -> PodSecurity:
    config = PodSecurityConfiguration(usernames=frozenset({"exempt-user"}), namespaces=frozenset({"exempt-ns"}),
                                      runtime_classes=frozenset({"exempt-runtimeclass"}))
    return PodSecurity(config, NAMESPACES_BY_NAME.get, lambda n: [])


def as_deployment(pod: dict | None) -> dict | None:
    return None if pod is None else {"metadata": pod["metadata"], "spec": {"template": pod}}


def check_annotations(got: dict[str, str], expect: dict[str, str]) -> None:
    """Each expected annotation present, its value beginning as expected (a violation's text is tested apart)."""
    assert sorted(got) == sorted(expect)
    for key, start in expect.items():
        value = got[key]
        assert value.startswith(start) or value.startswith(f'would violate PodSecurity "{start}"'), (key, value)


@pytest.mark.parametrize("case", POD_CASES, ids=[c[0] for c in POD_CASES])
def test_pod(case: tuple[Any, ...]):
    _, namespace, user, pod, old, sub, allowed, reason, annotations, warned = case
    decision = plugin_for_cases().admit(Attrs(UPDATE if old else CREATE, PODS, pod, old, sub, namespace=namespace,
                                              user=UserInfo(user or "test-user")))
    assert (decision.refusal is None) == allowed
    if not allowed:
        assert decision.refusal is not None and decision.refusal.reason == reason
    check_annotations(decision.annotations, annotations)
    assert [w.split('"')[1].split(":")[0] for w in decision.warnings] == (warned if allowed else [])


@pytest.mark.parametrize("case", [c for c in POD_CASES if c[0] not in (
    "insignificant update", "namespace not found")], ids=lambda c: c[0])
def test_deployment_templates_are_warned_and_audited_never_refused(case: tuple[Any, ...]):
    desc, namespace, user, pod, old, sub, _, _, annotations, warned = case
    decision = plugin_for_cases().admit(Attrs(UPDATE if old else CREATE, DEPLOYMENTS, as_deployment(pod),
                                              as_deployment(old), sub, namespace=namespace,
                                              user=UserInfo(user or "test-user")))
    assert decision.refusal is None
    expect = {k: v for k, v in annotations.items() if k != "enforce-policy"}
    if desc == "ignored subresource":
        expect = {}
    check_annotations(decision.annotations, expect)
    assert [w.split('"')[1].split(":")[0] for w in decision.warnings] == warned


def test_deployment_without_template_and_missing_namespace():
    plugin = plugin_for_cases()
    assert plugin.admit(Attrs(CREATE, DEPLOYMENTS, {"metadata": {}, "spec": {}}, namespace="restricted-ns")) \
        .annotations == {}
    decision = plugin.admit(Attrs(CREATE, DEPLOYMENTS, as_deployment(PRIVILEGED_POD), namespace="missing-ns"))
    assert decision.refusal is None
    assert decision.annotations == {"error": 'failed to lookup namespace "missing-ns": not found'}


def test_refusal_warning_and_audit_texts_are_kubes():
    plugin = plugin_for_cases()
    decision = plugin.admit(Attrs(CREATE, PODS, PRIVILEGED_POD, namespace="baseline-ns"))
    assert decision.refusal is not None
    assert decision.refusal.code == 403
    assert decision.refusal.message == f'pods "test-pod" is forbidden: violates PodSecurity "baseline:latest": ' \
                                       f"{PRIV_DETAIL}"
    assert decision.refusal.details == {"name": "test-pod", "kind": "pods"}
    assert decision.warnings == []   # never warnings on a refused request
    assert decision.annotations == {"enforce-policy": "baseline:latest",
                                    "audit-violations": f'would violate PodSecurity "baseline:latest": {PRIV_DETAIL}'}
    warned = plugin.admit(Attrs(CREATE, PODS, PRIVILEGED_POD, namespace="baseline-warn-ns"))
    assert warned.warnings == [f'would violate PodSecurity "baseline:latest": {PRIV_DETAIL}']
    # A create under generateName has no name yet, as kube's admission sees it.
    unnamed = plugin.admit(Attrs(CREATE, PODS, PRIVILEGED_POD, name="", namespace="baseline-ns"))
    assert unnamed.refusal is not None and unnamed.refusal.message.startswith("pods is forbidden: violates")
    assert unnamed.refusal.details == {"kind": "pods"}


def test_apply_prefixes_annotations_and_raises():
    plugin = plugin_for_cases()
    warnings: list[str] = []
    annotations: dict[str, str] = {}
    plugin(Attrs(CREATE, PODS, PRIVILEGED_POD, namespace="baseline-warn-ns"), warnings, annotations)
    assert warnings == [f'would violate PodSecurity "baseline:latest": {PRIV_DETAIL}']
    assert annotations == {"pod-security.kubernetes.io/enforce-policy": "privileged:latest"}
    with pytest.raises(Exception, match="violates PodSecurity") as refused:
        plugin(Attrs(CREATE, PODS, PRIVILEGED_POD, namespace="restricted-ns"), warnings, annotations)
    assert getattr(refused.value, "code", None) == 403
    assert annotations["pod-security.kubernetes.io/enforce-policy"] == "restricted:latest"


def test_deletes_and_other_kinds_are_not_evaluated():
    plugin = plugin_for_cases()
    assert plugin.admit(Attrs("DELETE", PODS, PRIVILEGED_POD, namespace="restricted-ns")).annotations == {}
    assert plugin.admit(Attrs(CREATE, NAMESPACES, None, namespace="restricted-ns")).refusal is None


@pytest.mark.parametrize(("new", "old", "significant"), [
    ({"containers": [{"image": "a"}]}, {"containers": [{"image": "a"}]}, False),
    ({"containers": [{"image": "b"}]}, {"containers": [{"image": "a"}]}, True),
    ({"containers": [{"image": "a"}, {"image": "a"}]}, {"containers": [{"image": "a"}]}, True),
    ({"initContainers": [{"image": "b"}]}, {"initContainers": [{"image": "a"}]}, True),
    ({"containers": [{"image": "a"}], "tolerations": [{}]}, {"containers": [{"image": "a"}]}, False),
    ({"ephemeralContainers": [{"name": "d", "image": "x"}]}, {}, True),
    ({"ephemeralContainers": [{"name": "d", "image": "x"}]}, {"ephemeralContainers": [{"name": "d", "image": "x"}]},
     False),
    ({"ephemeralContainers": [{"name": "d", "image": "y"}]}, {"ephemeralContainers": [{"name": "d", "image": "x"}]},
     True),
])
def test_significant_pod_update(new: dict, old: dict, significant: bool):
    assert significant_pod_update({"spec": new}, {"spec": old}) is significant


# --- the configuration file ------------------------------------------------------------------------------------

def test_default_configuration_is_kubes():
    config = PodSecurityConfiguration()
    assert config.defaults == PRIVILEGED_POLICY
    assert not (config.usernames or config.namespaces or config.runtime_classes)


def test_admission_configuration_inline_and_by_path(tmp_path: Path):
    inline = tmp_path / "admission.yaml"
    inline.write_text("""
apiVersion: apiserver.config.k8s.io/v1
kind: AdmissionConfiguration
plugins:
- name: PodSecurity
  configuration:
    apiVersion: pod-security.admission.config.k8s.io/v1
    kind: PodSecurityConfiguration
    defaults: {enforce: baseline, enforce-version: v1.30, warn: restricted}
    exemptions: {usernames: [admin], namespaces: [kube-system], runtimeClasses: [kata]}
""")
    config = load_admission_configuration(inline)
    assert config.defaults == Policy(LevelVersion(BASELINE, 30), LevelVersion(PRIVILEGED), LevelVersion(RESTRICTED))
    assert (config.usernames, config.namespaces, config.runtime_classes) == (
        frozenset({"admin"}), frozenset({"kube-system"}), frozenset({"kata"}))
    (tmp_path / "psa.yaml").write_text("apiVersion: pod-security.admission.config.k8s.io/v1beta1\n"
                                       "kind: PodSecurityConfiguration\ndefaults: {audit: restricted}\n")
    by_path = tmp_path / "by-path.yaml"
    by_path.write_text("apiVersion: apiserver.config.k8s.io/v1\nkind: AdmissionConfiguration\n"
                       "plugins: [{name: PodSecurity, path: psa.yaml}]\n")
    assert load_admission_configuration(by_path).defaults.audit == LevelVersion(RESTRICTED)
    none = tmp_path / "none.yaml"
    none.write_text("apiVersion: apiserver.config.k8s.io/v1\nkind: AdmissionConfiguration\nplugins: []\n")
    assert load_admission_configuration(none) == PodSecurityConfiguration()


def test_configuration_errors_are_kubes(tmp_path: Path):
    with pytest.raises(ConfigError) as e:
        pod_security_configuration({
            "apiVersion": "pod-security.admission.config.k8s.io/v1", "kind": "PodSecurityConfiguration",
            "defaults": {"enforce": "strict", "warn-version": "2"},
            "exemptions": {"namespaces": ["ok", "Bad_NS", "ok"], "runtimeClasses": ["a.b", "a.b"],
                           "usernames": ["", "u"]}})
    assert str(e.value) == (
        'PodSecurity invalid: [defaults.enforce: Invalid value: "strict": must be one of privileged, baseline, '
        'restricted, defaults.warn-version: Invalid value: "2": must be "latest" or "v1.x", '
        'exemptions.namespaces[1]: Invalid value: "Bad_NS": a lowercase RFC 1123 label must consist of lower case '
        "alphanumeric characters or '-', and must start and end with an alphanumeric character (e.g. 'my-name',  or "
        "'123-abc', regex used for validation is '[a-z0-9]([-a-z0-9]*[a-z0-9])?'), "
        'exemptions.namespaces[2]: Duplicate value: "ok", exemptions.runtimeClasses[1]: Duplicate value: "a.b", '
        'exemptions.usernames[0]: Invalid value: "": username must not be empty]')
    with pytest.raises(ConfigError, match="expected PodSecurityConfiguration"):
        pod_security_configuration({"apiVersion": "v1", "kind": "ConfigMap"})
    bad = tmp_path / "bad.yaml"
    bad.write_text("kind: Pod\n")
    with pytest.raises(ConfigError, match="expected an AdmissionConfiguration"):
        load_admission_configuration(bad)
    with pytest.raises(ConfigError, match="cannot read"):
        load_admission_configuration(tmp_path / "missing.yaml")


def test_with_enforce_keeps_the_rest():
    config = PodSecurityConfiguration(Policy(LevelVersion(PRIVILEGED, 30), LevelVersion(RESTRICTED),
                                             LevelVersion(BASELINE)), namespaces=frozenset({"x"}))
    assert with_enforce(config, None) is config
    assert with_enforce(config, BASELINE) == PodSecurityConfiguration(
        Policy(LevelVersion(BASELINE, 30), LevelVersion(RESTRICTED), LevelVersion(BASELINE)),
        namespaces=frozenset({"x"}))


# --- metrics ---------------------------------------------------------------------------------------------------

def test_metrics_count_as_kubes_recorder():
    plugin = plugin_for_cases()
    plugin.admit(Attrs(CREATE, PODS, PRIVILEGED_POD, namespace="restricted-ns"))      # enforce deny, audit deny
    plugin.admit(Attrs(CREATE, PODS, BASELINE_POD, namespace="baseline-ns"))          # enforce allow
    plugin.admit(Attrs(CREATE, PODS, PRIVILEGED_POD, namespace="implicit-ns"))        # privileged short-circuit
    plugin.admit(Attrs(CREATE, PODS, PRIVILEGED_POD, namespace="baseline-warn-ns"))   # enforce allow, warn deny
    plugin.admit(Attrs(CREATE, PODS, PRIVILEGED_POD, namespace="exempt-ns"))          # exempt
    plugin.admit(Attrs(CREATE, PODS, BASELINE_POD, namespace="invalid-ns"))           # a label error
    plugin.admit(Attrs(UPDATE, DEPLOYMENTS, as_deployment(PRIVILEGED_POD), as_deployment(PRIVILEGED_POD),
                       namespace="missing-ns"))                                        # a fatal error
    m = plugin.metrics
    evaluations = "pod_security_evaluations_total"
    assert m.value(evaluations, decision="deny", mode="enforce") == 2   # restricted-ns, invalid-ns (restricted)
    assert m.value(evaluations, decision="allow", mode="enforce") == 3
    assert m.value(evaluations, decision="allow", mode="enforce", policy_level="privileged") == 2
    assert m.value(evaluations, decision="deny", mode="audit") == 1
    assert m.value(evaluations, decision="deny", mode="warn", policy_level="baseline") == 1
    assert m.value("pod_security_exemptions_total", resource="pod") == 1
    assert m.value("pod_security_errors_total", fatal="false") == 1
    assert m.value("pod_security_errors_total", fatal="true", resource="controller", request_operation="update") == 1
    lines = m.render()
    assert "# TYPE pod_security_evaluations_total counter" in lines
    assert ('pod_security_evaluations_total{decision="deny",policy_level="restricted",policy_version="latest",'
            'mode="enforce",request_operation="create",resource="pod",subresource=""} 2') in lines


def test_metrics_version_label():
    plugin = plugin_for_cases()
    attrs = Attrs(CREATE, PODS, BASELINE_POD)
    for lv in (LevelVersion(BASELINE, 30), LevelVersion(BASELINE, 40), LevelVersion(PRIVILEGED, 20)):
        plugin.metrics.evaluation("allow", lv, "enforce", attrs)
    versions = [line.split('policy_version="')[1].split('"')[0] for line in plugin.metrics.render()
                if line.startswith("pod_security_evaluations_total{")]
    assert sorted(versions) == ["future", "latest", "v1.30"]

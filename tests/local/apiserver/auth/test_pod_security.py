"""The Pod Security Standards' checks, their registry and the namespace labels, as pure functions: each table is the
case list of k8s.io/pod-security-admission's own tests (``policy/check_*_test.go``, ``api/helpers_test.go``), with
kube's reason and detail word for word, plus the cases that pin this server's choices (the version cap at 1.32)."""

from __future__ import annotations

from typing import Any

import pytest

from mxjob_controller.local.apiserver.auth import pod_security as ps
from mxjob_controller.local.apiserver.auth.pod_security_evaluator import (
    CHECKS,
    Evaluator,
    forbidden_detail,
    forbidden_reason,
)
from mxjob_controller.local.apiserver.auth.pod_security_labels import (
    BASELINE,
    PRIVILEGED,
    PRIVILEGED_POLICY,
    RESTRICTED,
    LevelVersion,
    Policy,
    compare_levels,
    levels_and_versions,
    parse_version,
    policy_to_evaluate,
)


def c(name: str, **sc: Any) -> dict:
    """A container; keyword arguments are its securityContext (none when there are none)."""
    return {"name": name, **({"securityContext": sc} if sc else {})}


def bare(name: str, **fields: Any) -> dict:
    return {"name": name, **fields}


def spec(*containers: dict, **fields: Any) -> dict:
    return {"containers": list(containers), **fields}


WINDOWS, LINUX = {"os": {"name": "windows"}}, {"os": {"name": "linux"}}
UNCONFINED, RUNTIME = {"type": "Unconfined"}, {"type": "RuntimeDefault"}

# (check, case, metadata, spec, reason, detail); reason None: allowed.
CASES: list[tuple[Any, str, dict, dict, str | None, str]] = [
    # check_allowPrivilegeEscalation_test.go
    (ps.allow_privilege_escalation_1_25, "multiple containers", {}, spec(
        c("a"), bare("b", securityContext={}), c("c", allowPrivilegeEscalation=True),
        c("d", allowPrivilegeEscalation=False)),
     "allowPrivilegeEscalation != false",
     'containers "a", "b", "c" must set securityContext.allowPrivilegeEscalation=false'),
    (ps.allow_privilege_escalation_1_25, "windows pod, admit without checking privilegeEscalation", {},
     spec(c("a"), **WINDOWS), None, ""),
    (ps.allow_privilege_escalation_1_25, "linux pod, reject if security context is not set", {},
     spec(c("a"), **LINUX), "allowPrivilegeEscalation != false",
     'container "a" must set securityContext.allowPrivilegeEscalation=false'),
    (ps.allow_privilege_escalation_1_8, "1.8: windows pods are not exempt", {}, spec(c("a"), **WINDOWS),
     "allowPrivilegeEscalation != false", 'container "a" must set securityContext.allowPrivilegeEscalation=false'),
    # check_appArmorProfile_test.go
    (ps.app_armor_profile_1_0, "default AppArmor + extra annotations",
     {"annotations": {"container.apparmor.security.beta.kubernetes.io/test": "runtime/default", "env": "prod"}},
     {}, None, ""),
    (ps.app_armor_profile_1_0, "local AppArmor + extra annotations",
     {"annotations": {"container.apparmor.security.beta.kubernetes.io/test": "localhost/sec-profile01"}}, {},
     None, ""),
    (ps.app_armor_profile_1_0, "pod with runtime default", {},
     {"securityContext": {"appArmorProfile": RUNTIME}}, None, ""),
    (ps.app_armor_profile_1_0, "unconfined pod", {}, {"securityContext": {"appArmorProfile": UNCONFINED}},
     "forbidden AppArmor profile", 'pod must not set AppArmor profile type to "Unconfined"'),
    (ps.app_armor_profile_1_0, "unconfined container", {},
     spec(c("foo", appArmorProfile=UNCONFINED), securityContext={"appArmorProfile": RUNTIME}),
     "forbidden AppArmor profile", 'container "foo" must not set AppArmor profile type to "Unconfined"'),
    (ps.app_armor_profile_1_0, "unconfined init container", {},
     spec(c("foo"), initContainers=[c("bar", appArmorProfile=UNCONFINED)]),
     "forbidden AppArmor profile", 'container "bar" must not set AppArmor profile type to "Unconfined"'),
    (ps.app_armor_profile_1_0, "multiple annotations", {"annotations": {
        "container.apparmor.security.beta.kubernetes.io/": "bogus",
        "container.apparmor.security.beta.kubernetes.io/a": "",
        "container.apparmor.security.beta.kubernetes.io/b": "runtime/default",
        "container.apparmor.security.beta.kubernetes.io/c": "localhost/",
        "container.apparmor.security.beta.kubernetes.io/d": "localhost/foo",
        "container.apparmor.security.beta.kubernetes.io/e": "unconfined",
        "container.apparmor.security.beta.kubernetes.io/f": "unknown"}}, {},
     "forbidden AppArmor profiles",
     'annotations must not set AppArmor profile type to "container.apparmor.security.beta.kubernetes.io/="bogus"", '
     '"container.apparmor.security.beta.kubernetes.io/e="unconfined"", '
     '"container.apparmor.security.beta.kubernetes.io/f="unknown""'),
    # check_capabilities_baseline_test.go
    (ps.capabilities_baseline_1_0, "multiple containers", {}, spec(
        c("a", capabilities={"add": ["FOO", "BAR"]}), c("b", capabilities={"add": ["BAR", "BAZ"]})),
     "non-default capabilities",
     'containers "a", "b" must not include "BAR", "BAZ", "FOO" in securityContext.capabilities.add'),
    (ps.capabilities_baseline_1_0, "the default set", {}, spec(
        c("a", capabilities={"add": ["CHOWN", "NET_BIND_SERVICE", "SETUID", "KILL"]})), None, ""),
    # check_capabilities_restricted_test.go
    (ps.capabilities_restricted_1_25, "multiple containers", {}, spec(
        c("a", capabilities={"add": ["FOO", "BAR"]}), c("b", capabilities={"add": ["BAR", "BAZ"]}),
        c("c", capabilities={"add": ["NET_BIND_SERVICE", "CHOWN"], "drop": ["ALL", "FOO"]})),
     "unrestricted capabilities",
     'containers "a", "b" must set securityContext.capabilities.drop=["ALL"]; containers "a", "b", "c" must not '
     'include "BAR", "BAZ", "CHOWN", "FOO" in securityContext.capabilities.add'),
    (ps.capabilities_restricted_1_25, "windows pod, admit without checking capabilities", {},
     spec(c("a"), **WINDOWS), None, ""),
    (ps.capabilities_restricted_1_25, "linux pod, reject if security context is not set", {},
     spec(c("a"), **LINUX), "unrestricted capabilities",
     'container "a" must set securityContext.capabilities.drop=["ALL"]'),
    (ps.capabilities_restricted_1_22, "drop ALL, add NET_BIND_SERVICE", {}, spec(
        c("a", capabilities={"drop": ["ALL"], "add": ["NET_BIND_SERVICE"]})), None, ""),
    # check_hostNamespaces_test.go
    (ps.host_namespaces_1_0, "multiple host namespaces", {}, {"hostNetwork": True, "hostIPC": True, "hostPID": True},
     "host namespaces", "hostNetwork=true, hostPID=true, hostIPC=true"),
    (ps.host_namespaces_1_0, "false is allowed", {}, {"hostNetwork": False, "hostPID": False}, None, ""),
    # check_hostPathVolumes_test.go
    (ps.host_path_volumes_1_0, "host path volumes", {}, {"volumes": [
        {"name": "a", "hostPath": {}}, {"name": "b", "hostPath": {}}, {"name": "c", "emptyDir": {}}]},
     "hostPath volumes", 'volumes "a", "b"'),
    # check_hostPorts_test.go
    (ps.host_ports_1_0, "one container, one host port", {}, spec(
        bare("a", ports=[{"hostPort": 0}]), bare("b", ports=[{"hostPort": 0}, {"hostPort": 20}])),
     "hostPort", 'container "b" uses hostPort 20'),
    (ps.host_ports_1_0, "multiple containers, multiple host port", {}, spec(
        bare("a", ports=[{"hostPort": 0}]), bare("b", ports=[{"hostPort": 0}, {"hostPort": 10}, {"hostPort": 20}]),
        bare("c", ports=[{"hostPort": 0}, {"hostPort": 10}, {"hostPort": 30}])),
     "hostPort", 'containers "b", "c" use hostPorts 10, 20, 30'),
    # check_hostProbesAndHostLifecycle_test.go (a v1.34 check)
    (ps.host_probes_and_host_lifecycle_1_34, "probe and lifecycle hosts", {}, spec(
        bare("a", livenessProbe={"httpGet": {"host": "10.0.0.1", "port": 80}}),
        bare("b", lifecycle={"preStop": {"tcpSocket": {"host": "example.com", "port": 1}}}),
        bare("c", readinessProbe={"httpGet": {"host": "", "port": 80}})),
     "probe or lifecycle host", 'containers "a", "b" use probe or lifecycle hosts "10.0.0.1", "example.com"'),
    # check_privileged_test.go
    (ps.privileged_1_0, "privileged", {}, spec(
        c("a"), bare("b", securityContext={}), c("c", privileged=False), c("d", privileged=True),
        c("e", privileged=True)),
     "privileged", 'containers "d", "e" must not set securityContext.privileged=true'),
    # check_procMount_baseline_test.go
    (ps.proc_mount_1_35_baseline, "procMount", {}, spec(
        c("a"), bare("b", securityContext={}), c("c", procMount="Default"), c("d", procMount="Unmasked"),
        c("e", procMount="other"), hostUsers=True),
     "procMount", 'containers "d", "e" must not set securityContext.procMount to "Unmasked", "other"'),
    (ps.proc_mount_1_35_baseline, "procMount with userns", {}, spec(
        c("d", procMount="Unmasked"), c("e", procMount="other"), hostUsers=False), None, ""),
    (ps.proc_mount_1_0, "1.0: a user namespace is no exemption", {}, spec(c("d", procMount="Unmasked"),
                                                                         hostUsers=False),
     "procMount", 'container "d" must not set securityContext.procMount to "Unmasked"'),
    # check_restrictedVolumes_test.go
    (ps.restricted_volumes_1_0, "host path volumes", {}, {"volumes": [
        {"name": "a1", "emptyDir": {}}, {"name": "a2", "secret": {}}, {"name": "a3", "persistentVolumeClaim": {}},
        {"name": "a4", "downwardAPI": {}}, {"name": "a5", "configMap": {}}, {"name": "a6", "projected": {}},
        {"name": "a7", "csi": {}}, {"name": "a8", "ephemeral": {}}, {"name": "a9", "image": {}},
        {"name": "b1", "hostPath": {}}, {"name": "b2", "gcePersistentDisk": {}},
        {"name": "b3", "awsElasticBlockStore": {}}, {"name": "b4", "gitRepo": {}}, {"name": "b5", "nfs": {}},
        {"name": "b6", "iscsi": {}}, {"name": "b7", "glusterfs": {}}, {"name": "b8", "rbd": {}},
        {"name": "b9", "flexVolume": {}}, {"name": "b10", "cinder": {}}, {"name": "b11", "cephfs": {}},
        {"name": "b12", "flocker": {}}, {"name": "b13", "fc": {}}, {"name": "b14", "azureFile": {}},
        {"name": "b15", "vsphereVolume": {}}, {"name": "b16", "quobyte": {}}, {"name": "b17", "azureDisk": {}},
        {"name": "b18", "photonPersistentDisk": {}}, {"name": "b19", "portworxVolume": {}},
        {"name": "b20", "scaleIO": {}}, {"name": "b21", "storageos": {}}, {"name": "c1"}]},
     "restricted volume types",
     'volumes "b1", "b2", "b3", "b4", "b5", "b6", "b7", "b8", "b9", "b10", "b11", "b12", "b13", "b14", "b15", '
     '"b16", "b17", "b18", "b19", "b20", "b21", "c1" use restricted volume types "awsElasticBlockStore", '
     '"azureDisk", "azureFile", "cephfs", "cinder", "fc", "flexVolume", "flocker", "gcePersistentDisk", "gitRepo", '
     '"glusterfs", "hostPath", "iscsi", "nfs", "photonPersistentDisk", "portworxVolume", "quobyte", "rbd", '
     '"scaleIO", "storageos", "unknown", "vsphereVolume"'),
    (ps.restricted_volumes_1_0, "one volume", {}, {"volumes": [{"name": "host", "hostPath": {"path": "/"}}]},
     "restricted volume types", 'volume "host" uses restricted volume type "hostPath"'),
    # check_runAsNonRoot_test.go
    (ps.run_as_non_root_1_35, "no explicit runAsNonRoot", {}, spec(c("a")),
     "runAsNonRoot != true", 'pod or container "a" must set securityContext.runAsNonRoot=true'),
    (ps.run_as_non_root_1_35, "pod runAsNonRoot=false", {}, spec(c("a"), securityContext={"runAsNonRoot": False}),
     "runAsNonRoot != true", "pod must not set securityContext.runAsNonRoot=false"),
    (ps.run_as_non_root_1_35, "containers runAsNonRoot=false", {}, spec(
        c("a"), bare("b", securityContext={}), c("c", runAsNonRoot=False), c("d", runAsNonRoot=False),
        c("e", runAsNonRoot=True), c("f", runAsNonRoot=True), securityContext={"runAsNonRoot": True}),
     "runAsNonRoot != true", 'containers "c", "d" must not set securityContext.runAsNonRoot=false'),
    (ps.run_as_non_root_1_35, "pod nil, container fallthrough", {}, spec(
        c("a"), bare("b", securityContext={}), c("d", runAsNonRoot=True), c("e", runAsNonRoot=True)),
     "runAsNonRoot != true", 'pod or containers "a", "b" must set securityContext.runAsNonRoot=true'),
    (ps.run_as_non_root_1_35, "host users false allowed", {}, spec(c("a"), hostUsers=False), None, ""),
    (ps.run_as_non_root_1_0, "1.0: host users false is no exemption", {}, spec(c("a"), hostUsers=False),
     "runAsNonRoot != true", 'pod or container "a" must set securityContext.runAsNonRoot=true'),
    # check_runAsUser_test.go
    (ps.run_as_user_1_35, "pod runAsUser=0", {}, spec(c("a"), securityContext={"runAsUser": 0}),
     "runAsUser=0", "pod must not set runAsUser=0"),
    (ps.run_as_user_1_35, "pod runAsUser=non-zero", {}, spec(c("a"), securityContext={"runAsUser": 1000}), None, ""),
    (ps.run_as_user_1_35, "pod runAsUser=nil", {}, spec(c("a"), securityContext={}), None, ""),
    (ps.run_as_user_1_35, "containers runAsUser=0", {}, spec(
        c("a"), bare("b", securityContext={}), c("c", runAsUser=0), c("d", runAsUser=0), c("e", runAsUser=1),
        c("f", runAsUser=1), securityContext={"runAsUser": 1000}),
     "runAsUser=0", 'containers "c", "d" must not set runAsUser=0'),
    (ps.run_as_user_1_35, "containers runAsUser=non-zero", {}, spec(c("c", runAsUser=1), c("d", runAsUser=2)),
     None, ""),
    (ps.run_as_user_1_35, "host users false allowed", {}, spec(c("a", runAsUser=0), hostUsers=False), None, ""),
    (ps.run_as_user_1_23, "pod and container", {}, spec(c("a", runAsUser=0), securityContext={"runAsUser": 0},
                                                          hostUsers=False),
     "runAsUser=0", 'pod and container "a" must not set runAsUser=0'),
    # check_seLinuxOptions_test.go
    (ps.se_linux_options_1_31, "invalid pod and containers", {}, spec(
        c("a", seLinuxOptions={"type": "container_t"}), c("b", seLinuxOptions={"type": "container_init_t"}),
        c("c", seLinuxOptions={"type": "container_kvm_t"}), c("d", seLinuxOptions={"type": "container_engine_t"}),
        c("e", seLinuxOptions={"type": "bar"}), c("f", seLinuxOptions={"user": "bar"}),
        c("g", seLinuxOptions={"role": "baz"}),
        securityContext={"seLinuxOptions": {"type": "foo", "user": "bar", "role": "baz"}}),
     "seLinuxOptions", 'pod and containers "e", "f", "g" set forbidden securityContext.seLinuxOptions: types "bar", '
                       '"foo"; user may not be set; role may not be set'),
    (ps.se_linux_options_1_31, "invalid pod", {}, spec(
        c("a", seLinuxOptions={"type": "container_t"}), c("d", seLinuxOptions={"type": "container_engine_t"}),
        securityContext={"seLinuxOptions": {"type": "foo", "user": "bar", "role": "baz"}}),
     "seLinuxOptions", 'pod set forbidden securityContext.seLinuxOptions: type "foo"; user may not be set; role may '
                       "not be set"),
    (ps.se_linux_options_1_31, "invalid containers", {}, spec(
        c("a", seLinuxOptions={"type": "container_t"}), c("e", seLinuxOptions={"type": "bar"}),
        c("f", seLinuxOptions={"user": "bar"}), c("g", seLinuxOptions={"role": "baz"}),
        securityContext={"seLinuxOptions": {}}),
     "seLinuxOptions", 'containers "e", "f", "g" set forbidden securityContext.seLinuxOptions: type "bar"; user may '
                       "not be set; role may not be set"),
    (ps.se_linux_options_1_31, "bad type", {}, {"securityContext": {"seLinuxOptions": {"type": "bad"}}},
     "seLinuxOptions", 'pod set forbidden securityContext.seLinuxOptions: type "bad"'),
    (ps.se_linux_options_1_31, "bad user", {}, {"securityContext": {"seLinuxOptions": {"user": "bad"}}},
     "seLinuxOptions", "pod set forbidden securityContext.seLinuxOptions: user may not be set"),
    (ps.se_linux_options_1_31, "bad role", {}, {"securityContext": {"seLinuxOptions": {"role": "bad"}}},
     "seLinuxOptions", "pod set forbidden securityContext.seLinuxOptions: role may not be set"),
    (ps.se_linux_options_1_0, "1.0: container_engine_t is not allowed", {},
     spec(c("d", seLinuxOptions={"type": "container_engine_t"})),
     "seLinuxOptions", 'container "d" set forbidden securityContext.seLinuxOptions: type "container_engine_t"'),
    # check_seccompProfile_baseline_test.go
    (ps.seccomp_profile_baseline_1_0, "pod seccomp invalid",
     {"annotations": {"seccomp.security.alpha.kubernetes.io/pod": "unconfined"}}, {},
     "seccompProfile", 'forbidden annotation seccomp.security.alpha.kubernetes.io/pod="unconfined"'),
    (ps.seccomp_profile_baseline_1_0, "containers seccomp invalid",
     {"annotations": {"container.seccomp.security.alpha.kubernetes.io/a": "unconfined",
                      "container.seccomp.security.alpha.kubernetes.io/b": "unknown"}},
     spec(c("a"), c("b"), c("c")),
     "seccompProfile", 'forbidden annotations container.seccomp.security.alpha.kubernetes.io/a="unconfined", '
                       'container.seccomp.security.alpha.kubernetes.io/b="unknown"'),
    (ps.seccomp_profile_baseline_1_0, "pod and containers seccomp invalid",
     {"annotations": {"seccomp.security.alpha.kubernetes.io/pod": "unconfined",
                      "container.seccomp.security.alpha.kubernetes.io/a": "unconfined",
                      "container.seccomp.security.alpha.kubernetes.io/b": "unknown"}},
     spec(c("a"), c("b"), c("c")),
     "seccompProfile", 'forbidden annotations container.seccomp.security.alpha.kubernetes.io/a="unconfined", '
                       'container.seccomp.security.alpha.kubernetes.io/b="unknown", '
                       'seccomp.security.alpha.kubernetes.io/pod="unconfined"'),
    (ps.seccomp_profile_baseline_1_19, "pod seccomp invalid", {},
     spec(c("a"), securityContext={"seccompProfile": UNCONFINED}),
     "seccompProfile", 'pod must not set securityContext.seccompProfile.type to "Unconfined"'),
    (ps.seccomp_profile_baseline_1_19, "containers seccomp invalid", {}, spec(
        c("a"), bare("b", securityContext={}), c("c", seccompProfile=UNCONFINED), c("d", seccompProfile=UNCONFINED),
        c("e", seccompProfile=RUNTIME), c("f", seccompProfile=RUNTIME), securityContext={"seccompProfile": RUNTIME}),
     "seccompProfile", 'containers "c", "d" must not set securityContext.seccompProfile.type to "Unconfined"'),
    (ps.seccomp_profile_baseline_1_19, "pod and containers seccomp invalid", {}, spec(
        c("a"), c("c", seccompProfile=UNCONFINED), c("d", seccompProfile=UNCONFINED),
        c("e", seccompProfile=RUNTIME), securityContext={"seccompProfile": UNCONFINED}),
     "seccompProfile", 'pod and containers "c", "d" must not set securityContext.seccompProfile.type to '
                       '"Unconfined"'),
    (ps.seccomp_profile_baseline_1_19, "none set is allowed", {}, spec(c("a")), None, ""),
    # check_seccompProfile_restricted_test.go
    (ps.seccomp_profile_restricted_1_25, "no explicit seccomp", {}, spec(c("a")),
     "seccompProfile", 'pod or container "a" must set securityContext.seccompProfile.type to "RuntimeDefault" or '
                       '"Localhost"'),
    (ps.seccomp_profile_restricted_1_25, "no explicit seccomp, windows Pod", {}, spec(c("a"), **WINDOWS), None, ""),
    (ps.seccomp_profile_restricted_1_25, "no explicit seccomp, linux pod", {}, spec(c("a"), **LINUX),
     "seccompProfile", 'pod or container "a" must set securityContext.seccompProfile.type to "RuntimeDefault" or '
                       '"Localhost"'),
    (ps.seccomp_profile_restricted_1_25, "pod seccomp invalid", {},
     spec(c("a"), securityContext={"seccompProfile": UNCONFINED}),
     "seccompProfile", 'pod must not set securityContext.seccompProfile.type to "Unconfined"'),
    (ps.seccomp_profile_restricted_1_25, "containers seccomp invalid", {}, spec(
        c("a"), bare("b", securityContext={}), c("c", seccompProfile=UNCONFINED), c("d", seccompProfile=UNCONFINED),
        c("e", seccompProfile=RUNTIME), c("f", seccompProfile=RUNTIME), securityContext={"seccompProfile": RUNTIME}),
     "seccompProfile", 'containers "c", "d" must not set securityContext.seccompProfile.type to "Unconfined"'),
    (ps.seccomp_profile_restricted_1_19, "pod nil, container fallthrough", {}, spec(
        c("a"), bare("b", securityContext={}), c("d", seccompProfile=RUNTIME), c("e", seccompProfile=RUNTIME)),
     "seccompProfile", 'pod or containers "a", "b" must set securityContext.seccompProfile.type to "RuntimeDefault" '
                       'or "Localhost"'),
    (ps.seccomp_profile_restricted_1_19, "Localhost at pod level", {},
     spec(c("a"), securityContext={"seccompProfile": {"type": "Localhost", "localhostProfile": "p.json"}}),
     None, ""),
    # check_sysctls_test.go
    (ps.sysctls_1_0, "forbidden sysctls", {}, {"securityContext": {"sysctls": [{"name": "a"}, {"name": "b"}]}},
     "forbidden sysctls", "a, b"),
    (ps.sysctls_1_0, "1.0: net.ipv4.ip_local_reserved_ports not yet", {},
     {"securityContext": {"sysctls": [{"name": "net.ipv4.ip_local_reserved_ports", "value": "1024-4999"}]}},
     "forbidden sysctls", "net.ipv4.ip_local_reserved_ports"),
    (ps.sysctls_1_27, "1.27: net.ipv4.ip_local_reserved_ports", {},
     {"securityContext": {"sysctls": [{"name": "net.ipv4.ip_local_reserved_ports", "value": "1024-4999"}]}},
     None, ""),
    (ps.sysctls_1_27, "1.27: net.ipv4.tcp_keepalive_time not yet", {},
     {"securityContext": {"sysctls": [{"name": "net.ipv4.tcp_keepalive_time", "value": "7200"}]}},
     "forbidden sysctls", "net.ipv4.tcp_keepalive_time"),
    (ps.sysctls_1_29, "1.29: the tcp keepalive sysctls", {}, {"securityContext": {"sysctls": [
        {"name": "net.ipv4.tcp_keepalive_time"}, {"name": "net.ipv4.tcp_fin_timeout"},
        {"name": "net.ipv4.tcp_keepalive_intvl"}, {"name": "net.ipv4.tcp_keepalive_probes"}]}}, None, ""),
    (ps.sysctls_1_29, "1.29: net.ipv4.tcp_rmem not yet", {},
     {"securityContext": {"sysctls": [{"name": "net.ipv4.tcp_rmem"}]}}, "forbidden sysctls", "net.ipv4.tcp_rmem"),
    (ps.sysctls_1_32, "1.32: net.ipv4.tcp_rmem and tcp_wmem", {}, {"securityContext": {"sysctls": [
        {"name": "net.ipv4.tcp_rmem", "value": "4096 87380 16777216"}, {"name": "net.ipv4.tcp_wmem"}]}}, None, ""),
    (ps.sysctls_1_32, "1.32: net.ipv4.tcp_slow_start_after_idle not yet", {},
     {"securityContext": {"sysctls": [{"name": "net.ipv4.tcp_slow_start_after_idle"}]}},
     "forbidden sysctls", "net.ipv4.tcp_slow_start_after_idle"),
    (ps.sysctls_1_37, "1.37: tcp_slow_start_after_idle and tcp_notsent_lowat", {}, {"securityContext": {"sysctls": [
        {"name": "net.ipv4.tcp_slow_start_after_idle"}, {"name": "net.ipv4.tcp_notsent_lowat"}]}}, None, ""),
    # check_windowsHostProcess_test.go
    (ps.windows_host_process_1_0, "host process", {}, spec(
        c("a"), bare("b", securityContext={}), c("c", windowsOptions={}), c("d", windowsOptions={"hostProcess": False}),
        c("e", windowsOptions={"hostProcess": True}), c("f", windowsOptions={"hostProcess": True}),
        securityContext={"windowsOptions": {"hostProcess": True}}),
     "hostProcess", 'pod and containers "e", "f" must not set securityContext.windowsOptions.hostProcess=true'),
]


@pytest.mark.parametrize(("check", "meta", "pod_spec", "reason", "detail"),
                         [case[:1] + case[2:] for case in CASES],
                         ids=[f"{case[0].__name__}:{case[1]}" for case in CASES])
def test_check(check: Any, meta: dict, pod_spec: dict, reason: str | None, detail: str):
    result = check(meta, pod_spec)
    if reason is None:
        assert result is None
    else:
        assert result == ps.Forbidden(reason, detail)


def test_ephemeral_and_init_containers_are_checked_in_kube_order():
    pod_spec = spec(c("main", privileged=True), initContainers=[c("init", privileged=True)],
                    ephemeralContainers=[c("debug", privileged=True)])
    assert ps.privileged_1_0({}, pod_spec) == ps.Forbidden(
        "privileged", 'containers "init", "main", "debug" must not set securityContext.privileged=true')


# --- the registry: which checks a level runs at a version, in kube's order ----------------------------------------

ROOT_POD = spec(c("x"), securityContext={"runAsUser": 0})
ROOT_DETAIL = ('allowPrivilegeEscalation != false (container "x" must set securityContext.allowPrivilegeEscalation='
               'false), unrestricted capabilities (container "x" must set securityContext.capabilities.drop=["ALL"]), '
               'runAsNonRoot != true (pod or container "x" must set securityContext.runAsNonRoot=true), runAsUser=0 '
               '(pod must not set runAsUser=0), seccompProfile (pod or container "x" must set '
               'securityContext.seccompProfile.type to "RuntimeDefault" or "Localhost")')


def test_restricted_message_lists_every_reason_in_kube_order():
    results = Evaluator().evaluate(LevelVersion(RESTRICTED), {}, ROOT_POD)
    assert forbidden_detail(results) == ROOT_DETAIL
    assert forbidden_reason(results) == ("allowPrivilegeEscalation != false, unrestricted capabilities, "
                                         "runAsNonRoot != true, runAsUser=0, seccompProfile")


def test_baseline_checks_come_first_sorted_by_id():
    pod_spec = spec(c("x", privileged=True, capabilities={"add": ["SYS_ADMIN"]},
                      seccompProfile=UNCONFINED), hostPID=True, volumes=[{"name": "h", "hostPath": {"path": "/"}}])
    results = Evaluator().evaluate(LevelVersion(BASELINE), {}, pod_spec)
    assert [r.reason for r in results] == ["non-default capabilities", "host namespaces", "hostPath volumes",
                                           "privileged", "seccompProfile"]
    # Restricted: capabilities, hostPath and seccomp are stood in for by their restricted checks.
    results = Evaluator().evaluate(LevelVersion(RESTRICTED), {}, pod_spec)
    assert [r.reason for r in results] == ["host namespaces", "privileged", "allowPrivilegeEscalation != false",
                                           "unrestricted capabilities", "restricted volume types",
                                           "runAsNonRoot != true", "seccompProfile"]


def test_privileged_level_checks_nothing():
    assert Evaluator().evaluate(LevelVersion(PRIVILEGED), {}, spec(c("x", privileged=True), hostPID=True)) == []


def test_a_fully_restricted_pod_passes_every_level():
    pod_spec = spec(c("x", allowPrivilegeEscalation=False, capabilities={"drop": ["ALL"]}),
                    securityContext={"runAsNonRoot": True, "seccompProfile": RUNTIME})
    for level in (BASELINE, RESTRICTED):
        assert Evaluator().evaluate(LevelVersion(level), {}, pod_spec) == []


def test_versions_choose_the_checks_of_their_time():
    ev = Evaluator()
    pod_spec = spec(c("x", capabilities={"add": ["SYS_ADMIN"]}, runAsUser=0))
    # v1.21: no restricted capabilities check yet, the baseline one runs; no runAsUser check before v1.23.
    old = [r.reason for r in ev.evaluate(LevelVersion(RESTRICTED, 21), {}, pod_spec)]
    assert "non-default capabilities" in old and "unrestricted capabilities" not in old and "runAsUser=0" not in old
    new = [r.reason for r in ev.evaluate(LevelVersion(RESTRICTED, 23), {}, pod_spec)]
    assert "unrestricted capabilities" in new and "non-default capabilities" not in new and "runAsUser=0" in new
    # v1.7: no allowPrivilegeEscalation check (v1.8+), and no seccomp field check (v1.19+: annotations before).
    assert [r.reason for r in ev.evaluate(LevelVersion(RESTRICTED, 7), {}, spec(c("x")))] == ["runAsNonRoot != true"]


def test_latest_and_future_versions_are_the_servers_own():
    ev = Evaluator()
    assert ev.max_minor == 32
    tcp_rmem = {"securityContext": {"sysctls": [{"name": "net.ipv4.tcp_rmem"}]}}
    slow_start = {"securityContext": {"sysctls": [{"name": "net.ipv4.tcp_slow_start_after_idle"}]}}
    probe_host = spec(bare("a", livenessProbe={"httpGet": {"host": "1.2.3.4", "port": 1}}))
    user_ns_root = spec(c("a", runAsUser=0), hostUsers=False)
    for minor in (None, 32, 35, 40):
        lv = LevelVersion(BASELINE, minor)
        assert ev.evaluate(lv, {}, tcp_rmem) == []
        assert [r.reason for r in ev.evaluate(lv, {}, slow_start)] == ["forbidden sysctls"]
        assert ev.evaluate(lv, {}, probe_host) == []   # hostProbesAndHostLifecycle is v1.34's
        assert "runAsUser=0" in forbidden_reason(ev.evaluate(LevelVersion(RESTRICTED, minor), {}, user_ns_root))
    # Without the cap (a newer server), the newer checks apply.
    newest = Evaluator(emulation=None)
    assert newest.max_minor == 37
    assert newest.evaluate(LevelVersion(BASELINE), {}, slow_start) == []
    assert [r.reason for r in newest.evaluate(LevelVersion(BASELINE), {}, probe_host)] == ["probe or lifecycle host"]
    assert "runAsUser=0" not in forbidden_reason(newest.evaluate(LevelVersion(RESTRICTED), {}, user_ns_root))


def test_every_check_has_increasing_versions_and_overrides_only_baseline():
    ids = {check.id: check.level for check in CHECKS}
    assert len(ids) == len(CHECKS)
    for check in CHECKS:
        minimums = [v.minimum for v in check.versions]
        assert minimums == sorted(set(minimums)), check.id
        for v in check.versions:
            assert not v.overrides or check.level == RESTRICTED
            assert all(ids[o] == BASELINE for o in v.overrides)


def test_a_check_without_a_reason_is_reported_as_unknown():
    ev = Evaluator()
    ev._cache[(BASELINE, 32)] = (lambda meta, pod_spec: ps.Forbidden("", "x"),)
    assert ev.evaluate(LevelVersion(BASELINE), {}, {}) == [ps.Forbidden("unknown forbidden reason", "x")]


# --- levels, versions and namespace labels (api/helpers_test.go) -----------------------------------------------

def labels(**modes: str) -> dict[str, str]:
    return {f"pod-security.kubernetes.io/{k.replace('_', '-')}": v for k, v in modes.items()}


P = LevelVersion(PRIVILEGED)


@pytest.mark.parametrize(("text", "minor", "ok"), [
    ("latest", None, True), ("v1.0", 0, True), ("v1.1", 1, True), ("v1.22", 22, True), ("v1.999", 999, True),
    ("", None, False), ("v1", None, False), ("v1.01", None, False), ("v2.0", None, False), ("1.22", None, False),
    ("v1.-1", None, False), ("V1.2", None, False), ("v1.2 ", None, False)])
def test_parse_version(text: str, minor: int | None, ok: bool):
    assert parse_version(text) == (minor, None if ok else 'must be "latest" or "v1.x"')


@pytest.mark.parametrize(("desc", "given", "expect", "errors"), [
    ("simple enforce", labels(enforce="baseline"), Policy(LevelVersion(BASELINE), P, LevelVersion(BASELINE)), 0),
    ("simple warn", labels(warn="restricted"), Policy(P, P, LevelVersion(RESTRICTED)), 0),
    ("simple audit", labels(audit="baseline"), Policy(P, LevelVersion(BASELINE), P), 0),
    ("enforce & warn", labels(enforce="baseline", warn="restricted"),
     Policy(LevelVersion(BASELINE), P, LevelVersion(RESTRICTED)), 0),
    ("enforce version", labels(enforce="baseline", enforce_version="v1.22"),
     Policy(LevelVersion(BASELINE, 22), P, LevelVersion(BASELINE, 22)), 0),
    ("enforce version & warn-version", labels(enforce="baseline", enforce_version="v1.22", warn_version="latest"),
     Policy(LevelVersion(BASELINE, 22), P, LevelVersion(BASELINE)), 0),
    ("enforce & warn-version", labels(enforce="baseline", warn_version="v1.23"),
     Policy(LevelVersion(BASELINE), P, LevelVersion(BASELINE, 23)), 0),
    ("fully specd", labels(enforce="baseline", enforce_version="v1.20", warn="restricted", warn_version="v1.21",
                           audit="restricted", audit_version="v1.22"),
     Policy(LevelVersion(BASELINE, 20), LevelVersion(RESTRICTED, 22), LevelVersion(RESTRICTED, 21)), 0),
    ("enforce no warn", labels(enforce="baseline", warn="privileged"), Policy(LevelVersion(BASELINE), P, P), 0),
    ("enforce warn error", labels(enforce="baseline", warn="foo"), Policy(LevelVersion(BASELINE), P, P), 1),
    ("enforce error", labels(enforce="foo"), Policy(LevelVersion(RESTRICTED), P, P), 1),
    ("audit error fails open", labels(audit="foo", audit_version="v2"), Policy(P, P, P), 2),
    ("no labels", {}, PRIVILEGED_POLICY, 0),
    ("other labels only", {"app": "x"}, PRIVILEGED_POLICY, 0),
])
def test_policy_to_evaluate(desc: str, given: dict, expect: Policy, errors: int):
    policy, errs = policy_to_evaluate(given, PRIVILEGED_POLICY)
    assert policy == expect
    assert len(errs) == errors


def test_label_errors_are_kubes():
    _, errs = policy_to_evaluate(labels(enforce="foo", enforce_version="1.2"), PRIVILEGED_POLICY)
    assert [str(e) for e in errs] == [
        'metadata.labels[pod-security.kubernetes.io/enforce]: Invalid value: "foo": must be one of privileged, '
        "baseline, restricted",
        'metadata.labels[pod-security.kubernetes.io/enforce-version]: Invalid value: "1.2": must be "latest" or '
        '"v1.x"']


def test_defaults_fill_what_labels_leave():
    defaults = Policy(LevelVersion(BASELINE, 30), LevelVersion(RESTRICTED), P)
    assert policy_to_evaluate({}, defaults)[0] == defaults
    assert policy_to_evaluate(labels(enforce_version="v1.31"), defaults)[0] == \
        Policy(LevelVersion(BASELINE, 31), LevelVersion(RESTRICTED), P)


def test_level_version_text_and_equivalence():
    assert str(LevelVersion(RESTRICTED)) == "restricted:latest"
    assert str(LevelVersion(BASELINE, 22)) == "baseline:v1.22"
    assert LevelVersion(PRIVILEGED, 1).equivalent(LevelVersion(PRIVILEGED))
    assert not LevelVersion(BASELINE, 1).equivalent(LevelVersion(BASELINE))
    assert [compare_levels(a, b) for a, b in ((PRIVILEGED, BASELINE), (RESTRICTED, BASELINE), (BASELINE, BASELINE))] \
        == [-1, 1, 0]


def test_configuration_defaults():
    assert levels_and_versions({}) == (PRIVILEGED_POLICY, [])
    policy, errs = levels_and_versions({"enforce": "baseline", "warn-version": "v1.30"})
    assert policy == Policy(LevelVersion(BASELINE), P, LevelVersion(PRIVILEGED, 30)) and errs == []
    _, errs = levels_and_versions({"enforce": "strict", "audit-version": "1"})
    assert [str(e) for e in errs] == [
        'defaults.enforce: Invalid value: "strict": must be one of privileged, baseline, restricted',
        'defaults.audit-version: Invalid value: "1": must be "latest" or "v1.x"']

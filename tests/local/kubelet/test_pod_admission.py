"""What the local kubelet cannot honour, named at admission (local/kubelet/pod_admission.py), table-tested: each
refused field with its message, and the fields that pass with a warning."""

from __future__ import annotations

import pytest

from mxjob_controller.local.kubelet import pod_admission


def _pod(**spec) -> dict:
    container = {"name": "main", "image": "x", "command": ["true"], **spec.pop("container", {})}
    return {"metadata": {"name": "p"}, "spec": {"containers": [container], **spec}}


@pytest.mark.parametrize(("spec", "refused"), [
    ({}, []),
    ({"hostNetwork": True}, []),   # every pod here shares the machine's network: honoured
    ({"hostUsers": False}, []),
    ({"container": {"ports": [{"containerPort": 80, "hostPort": 80}]}}, []),
    ({"container": {"securityContext": {"privileged": False, "procMount": "Default",
                                        "seccompProfile": {"type": "RuntimeDefault"},
                                        "appArmorProfile": {"type": "Unconfined"}}}}, []),
    ({"hostPID": True, "hostIPC": True}, ["spec.hostPID: Forbidden: every pod has a PID namespace of its own here",
                                          "spec.hostIPC: Forbidden: every pod has an IPC namespace of its own here"]),
    ({"hostUsers": True}, ["spec.hostUsers: Forbidden: every pod has a user namespace of its own here "
                           "(hostUsers: false)"]),
    ({"volumes": [{"name": "h", "hostPath": {"path": "/"}}, {"name": "e", "emptyDir": {}}]},
     ["spec.volumes[0].hostPath: Forbidden: the local kubelet mounts no volumes (a pod writes to its own /tmp and "
      "/var/tmp)",
      "spec.volumes[1].emptyDir: Forbidden: the local kubelet mounts no volumes (a pod writes to its own /tmp and "
      "/var/tmp)"]),
    ({"container": {"securityContext": {"privileged": True}}},
     ["spec.containers[0].securityContext.privileged: Forbidden: the local kubelet runs no privileged container "
      "(root in a pod is an unprivileged user of this machine)"]),
    ({"container": {"securityContext": {"procMount": "Unmasked"}}},
     ["spec.containers[0].securityContext.procMount: Forbidden: only the Default /proc can be mounted here"]),
    ({"container": {"ports": [{"containerPort": 80, "hostPort": 8080}]}},
     ["spec.containers[0].ports[0].hostPort: Forbidden: pods share this machine's network, so a container listens "
      "on its own port; a different hostPort cannot be mapped"]),
    ({"securityContext": {"sysctls": [{"name": "kernel.shm_rmid_forced", "value": "1"}],
                          "seccompProfile": {"type": "Localhost", "localhostProfile": "p.json"}}},
     ["spec.securityContext.seccompProfile.type: Forbidden: Localhost seccomp profiles cannot be loaded by the "
      "local kubelet (RuntimeDefault and Unconfined can)",
      "spec.securityContext.sysctls: Forbidden: sysctls cannot be set by the local kubelet"]),
    ({"os": {"name": "windows"}}, ["spec.os.name: Forbidden: this node runs linux, not windows"]),
])
def test_what_the_local_kubelet_cannot_honour_is_named(spec, refused):
    assert pod_admission.refusals(_pod(**spec)) == refused


def test_probes_and_hooks_pass_with_a_warning():
    pod = _pod(container={"readinessProbe": {"exec": {"command": ["true"]}}, "lifecycle": {"preStop": {}}})
    assert pod_admission.refusals(pod) == []
    assert pod_admission.warnings(pod) == [
        "spec.containers[0].readinessProbe, spec.containers[0].lifecycle: not run by the local kubelet (containers "
        "are started and stopped without probes or hooks)"]

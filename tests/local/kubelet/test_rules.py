"""The local kubelet's pure rules, table-tested: the pod phase from container statuses (the kubelet's getPhase), a
container's environment (order, ``$(VAR)`` expansion, the downward API, Service names on one machine), and the pods'
loopback addresses."""

from __future__ import annotations

import socket

import pytest

from mxjob_controller.local.kubelet.addresses import PodAddresses, loopback_range_usable
from mxjob_controller.local.kubelet.container_env import (
    ContainerConfigError,
    NoCommandError,
    container_argv,
    container_env,
    expand,
    rewrite_service_hosts,
)
from mxjob_controller.local.kubelet.exec_bounds import ARG_MAX, MAX_ARG_STRLEN
from mxjob_controller.local.kubelet.reported_status import conditions, phase

RUN = {"state": {"running": {"startedAt": "t"}}}
OK = {"state": {"terminated": {"exitCode": 0}}}
BAD = {"state": {"terminated": {"exitCode": 1}}}
WAIT = {"state": {"waiting": {"reason": "ContainerCreating"}}}
BACKOFF = {"state": {"waiting": {"reason": "CrashLoopBackOff"}}, "lastState": {"terminated": {"exitCode": 1}}}


@pytest.mark.parametrize(("policy", "init", "app", "terminal", "expected"), [
    ("Never", [], [WAIT], False, "Pending"),
    ("Never", [], [RUN, WAIT], False, "Pending"),
    ("Never", [], [RUN, OK], False, "Running"),
    ("Never", [], [OK, OK], False, "Succeeded"),
    ("Never", [], [OK, BAD], False, "Failed"),
    ("OnFailure", [], [OK, BAD], False, "Running"),     # the failed one restarts
    ("OnFailure", [], [OK, OK], False, "Succeeded"),
    ("Always", [], [OK, OK], False, "Running"),          # everything restarts
    ("Always", [], [BACKOFF], False, "Running"),
    ("Never", [RUN], [WAIT], False, "Pending"),
    ("Never", [BAD], [WAIT], False, "Failed"),           # a failed init container fails a Never pod
    ("OnFailure", [BACKOFF], [WAIT], False, "Pending"),  # ... and is retried otherwise
    ("OnFailure", [OK], [RUN], False, "Running"),
    ("Always", [], [OK, BAD], True, "Failed"),           # stopped for good: nothing restarts
    ("Always", [], [OK, OK], True, "Succeeded"),
    ("OnFailure", [BAD], [WAIT], True, "Failed"),
])
def test_phase(policy, init, app, terminal, expected):
    assert phase(policy, init, app, terminal) == expected


def test_conditions_keep_their_transition_time():
    app = [{"name": "a", "ready": True}]
    first = conditions("Running", [], app, [{"type": "PodScheduled", "status": "True", "lastTransitionTime": "t0"}],
                       "t1")
    assert [c["type"] for c in first] == ["PodScheduled", "PodReadyToStartContainers", "Initialized", "Ready",
                                          "ContainersReady"]
    again = conditions("Running", [], app, first, "t2")
    assert {c["lastTransitionTime"] for c in again[1:]} == {"t1"}
    done = conditions("Succeeded", [], [{"name": "a", "ready": False}], again, "t3")
    ready = next(c for c in done if c["type"] == "Ready")
    assert (ready["status"], ready["reason"], ready["lastTransitionTime"]) == ("False", "PodCompleted", "t3")


POD = {"metadata": {"name": "job-worker-0", "namespace": "team", "uid": "u1", "labels": {"a": "1"}},
       "spec": {"nodeName": "local", "serviceAccountName": "sa"}}
# (namespace, name) → the address the kubelet resolves it to: a job's per-replica Services (with a selector) have
# addresses of their own; db (no selector: something on this machine outside the cluster) is 127.0.0.1.
SERVICES = {("team", "job-scheduler-0"): "127.9.0.1", ("team", "job-worker-1"): "127.9.0.2",
            ("other", "db"): "127.0.0.1"}


def known(namespace: str, name: str, qualified: bool) -> str | None:
    """As the kubelet resolves: a qualified name (``svc.ns.svc``) of a Service not created yet gets its name's
    address (here 127.9.9.9)."""
    return SERVICES.get((namespace, name)) or ("127.9.9.9" if qualified else None)


@pytest.mark.parametrize(("value", "expected"), [
    ("job-scheduler-0", "127.9.0.1"),
    ("JOB-SCHEDULER-0", "127.9.0.1"),
    ("job-scheduler-0.team", "127.9.0.1"),
    ("job-scheduler-0.team.svc", "127.9.0.1"),
    ("job-scheduler-0.team.svc.cluster.local", "127.9.0.1"),
    ("http://job-scheduler-0:9091/x", "http://127.9.0.1:9091/x"),
    ('{"url":"job-worker-1","port":1}', '{"url":"127.9.0.2","port":1}'),
    ('["job-worker-1.team.svc:2222","job-scheduler-0.team.svc:2222"]', '["127.9.0.2:2222","127.9.0.1:2222"]'),
    ("job-worker-10", "job-worker-10"),            # a longer name is another name
    ("xjob-worker-1", "xjob-worker-1"),
    ("job-worker-1.other", "job-worker-1.other"),  # no such service in namespace other
    ("job-worker-2.team.svc:2222", "127.9.9.9:2222"),  # a Service's own form: a Service, created or not yet
    ("job-worker-2:2222", "job-worker-2:2222"),        # a bare word: a Service's only once it exists
    ("db", "db"),                                  # db is in another namespace: not by its bare name
    ("db.other.svc.cluster.local:5432", "127.0.0.1:5432"),
    ("job-scheduler-0.team.svc.cluster.example", "job-scheduler-0.team.svc.cluster.example"),
])
def test_service_names_become_their_loopback_addresses(value, expected):
    assert rewrite_service_hosts(value, "team", known) == expected


def test_each_name_gets_its_own_address_for_good():
    addresses = PodAddresses(enabled=True, first_block=254)
    first = [addresses.address("team", f"job-worker-{i}") for i in range(300)]
    assert len(set(first)) == 300, "no two names share an address"
    assert first[:2] == ["127.254.0.1", "127.254.0.2"] and first[254] == "127.254.1.1", "no .0 or .255 host"
    assert addresses.address("team", "job-worker-7") == first[7], "a name keeps its address"
    assert addresses.address("other", "job-worker-7") not in first, "the namespace is part of the name"
    wrapped = PodAddresses(enabled=True, first_block=254)._nth(254 * 256)
    assert wrapped == "127.1.0.1", "past a block, the next one (round to 1, never 127.0.x.x or 127.255.x.x)"
    assert PodAddresses(enabled=False).address("team", "job-worker-1") == "127.0.0.1"


def test_this_machine_routes_all_of_127_0_0_0_8_to_the_loopback():
    """The premise of the addresses above (Linux): a listener on one of them is reached there, and another
    listener on the same port but another address does not collide with it."""
    assert loopback_range_usable()
    with socket.create_server(("127.3.0.1", 0)) as first:
        port = first.getsockname()[1]
        with socket.create_server(("127.3.0.2", port)), socket.create_connection(("127.3.0.1", port), timeout=5):
            conn, _ = first.accept()
            conn.close()


@pytest.mark.parametrize(("value", "expected"), [
    ("$(A)-$(B)", "1-$(B)"), ("$$(A)", "$(A)"), ("$$$(A)", "$1"), ("$A $(A", "$A $(A"), ("", ""),
])
def test_expand(value, expected):
    assert expand(value, {"A": "1"}) == expected


def test_env_order_sources_and_errors():
    container = {"name": "mxnet", "command": ["run", "$(ROLE)"], "args": ["--id=$(IDX)"],
                 "envFrom": [{"configMapRef": {"name": "cm"}, "prefix": "CM_"}],
                 "env": [{"name": "ROLE", "value": "worker"},
                         {"name": "IDX", "valueFrom": {"fieldRef": {"fieldPath": "metadata.labels['a']"}}},
                         {"name": "SCHED", "value": "job-scheduler-0"},
                         {"name": "IP", "valueFrom": {"fieldRef": {"fieldPath": "status.podIP"}}},
                         {"name": "HOST", "valueFrom": {"fieldRef": {"fieldPath": "status.hostIP"}}},
                         {"name": "CPU", "valueFrom": {"resourceFieldRef": {"resource": "limits.cpu"}}},
                         {"name": "OPT", "valueFrom": {"secretKeyRef": {"name": "nope", "key": "k",
                                                                        "optional": True}}},
                         {"name": "CM_K", "value": "override $(CM_K)"}]}

    def lookup(kind, namespace, name):
        return {"kind": "ConfigMap", "data": {"K": "v"}} if (kind, name) == ("ConfigMap", "cm") else None
    env = container_env(POD, container, {"PATH": "/bin", "ROLE": "base"}, lookup=lookup, service_address=known,
                        pod_ip="127.9.0.3", node_allocatable={"cpu": "2"})
    assert env["ROLE"] == "worker" and env["IDX"] == "1" and env["SCHED"] == "127.9.0.1"
    assert env["IP"] == "127.9.0.3" and env["HOST"] == "127.0.0.1"
    assert env["CPU"] == "2" and "OPT" not in env and env["CM_K"] == "override v"
    assert env["PATH"] == "/bin" and env["OMP_NUM_THREADS"] == "1"
    assert container_argv(container, env) == ["run", "worker", "--id=1"]
    missing = {"name": "c", "env": [{"name": "S", "valueFrom": {"secretKeyRef": {"name": "s", "key": "k"}}}]}
    with pytest.raises(ContainerConfigError, match='secret "s" not found'):
        container_env(POD, missing, {}, lookup=lookup, service_address=known)
    with pytest.raises(NoCommandError, match='no command specified for container "c": images are not run') as e:
        container_argv({"name": "c", "args": ["x"]}, {})
    assert e.value.reason == "CreateContainerError"


def _env(*variables: tuple[str, str], base: dict[str, str] | None = None) -> dict[str, str]:
    container = {"name": "c", "env": [{"name": n, "value": v} for n, v in variables]}
    return container_env(POD, container, base or {}, lookup=lambda *_: None, service_address=lambda *_: None)


def test_a_doubling_chain_stops_at_the_first_variable_past_max_arg_strlen():
    chain = [("V0", "xxxxxxxx")] + [(f"V{n}", f"$(V{n - 1})$(V{n - 1})") for n in range(1, 40)]
    with pytest.raises(ContainerConfigError, match=r"^environment variable V14 is longer than Linux takes") as e:
        _env(*chain)
    assert e.value.reason == "CreateContainerConfigError"
    assert len(_env(*chain[:14])["V13"]) == 65536


def test_one_string_may_reach_max_arg_strlen_with_its_name_and_nul_not_more():
    fits = "x" * (MAX_ARG_STRLEN - len("A=") - 1)
    assert _env(("A", fits))["A"] == fits
    assert _env(("B", fits[:1000]), ("A", "$(B)" + fits[1000:]))["A"] == fits
    with pytest.raises(ContainerConfigError, match="environment variable A is longer"):
        _env(("A", fits + "x"))
    with pytest.raises(ContainerConfigError, match="environment variable A is longer"):
        _env(("B", "é"), ("A", "$(B)" + fits[1:]))   # two bytes in UTF-8: one too many
    env = {"A": fits}
    assert container_argv({"name": "c", "command": ["run", "$(A)"]}, {}) == ["run", "$(A)"]
    assert len(container_argv({"name": "c", "command": ["run"], "args": ["xx$(A)"]}, env)[1]) == MAX_ARG_STRLEN - 1
    with pytest.raises(ContainerConfigError, match="argument 1 is longer"):
        container_argv({"name": "c", "command": ["run"], "args": ["xxx$(A)"]}, env)


def test_all_strings_together_stay_within_arg_max_naming_the_one_that_passes_it():
    big = "x" * 100_000
    count = ARG_MAX // 100_000
    with pytest.raises(ContainerConfigError, match=f"^environment variable V{count - 1} takes the environment and "
                                                   "arguments past this machine's ARG_MAX"):
        _env(("BIG", big), *((f"V{i}", "$(BIG)") for i in range(count + 5)))
    env = _env(("BIG", big), *((f"V{i}", "$(BIG)") for i in range(count - 2)))
    with pytest.raises(ContainerConfigError, match=r"^argument \d+ takes the environment and arguments past"):
        container_argv({"name": "c", "command": ["run"], "args": ["$(BIG)"] * 5}, env)
    with pytest.raises(ContainerConfigError, match="past this machine's ARG_MAX"):
        _env(("A", "x"), base={f"B{i}": big for i in range(count + 1)})


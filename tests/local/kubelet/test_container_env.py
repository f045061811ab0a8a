"""A container's environment and command line (local/kubelet/container_env.py), table-tested: order, ``$(VAR)``
expansion, the downward API, and Service names turned into their loopback addresses on one machine."""

from __future__ import annotations

import pytest

from mxjob_controller.local.kubelet.container_env import (
    ContainerConfigError,
    NoCommandError,
    container_argv,
    container_env,
    expand,
    rewrite_service_hosts,
)

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


def test_each_host_of_a_value_is_resolved_once():
    # A 1,000-replica MX_CONFIG names each peer once and "url", "port"... once per peer: one lookup per name.
    asked: list[tuple[str, str, bool]] = []

    def counting(ns: str, name: str, qualified: bool) -> str | None:
        asked.append((ns, name, qualified))
        return known(ns, name, qualified)

    peers = ",".join('{"url":"job-worker-1","port":9091}' for _ in range(50))
    assert rewrite_service_hosts(f"[{peers}]", "team", counting) == "[" + ",".join(
        '{"url":"127.9.0.2","port":9091}' for _ in range(50)) + "]"
    assert sorted(asked) == sorted(set(asked)) and ("team", "job-worker-1", False) in asked


def test_a_memo_of_the_names_answers_later_starts_until_their_service_changes():
    """With the kubelet's memo (``ServiceNames``): a value whose names it all has is rewritten with no lookup; one
    with a name it lacks is resolved and kept; a Service's event makes the names naming it asked again, and only
    them (a job's Services are created while its pods start); a name resolved across its Service's event is not
    kept."""
    from mxjob_controller.local.kubelet.addresses import PodAddresses
    from mxjob_controller.local.kubelet.service_names import ServiceNames
    from mxjob_controller.runtime.cache_store import Indexer

    asked: list[str] = []

    def counting(ns: str, name: str, qualified: bool) -> str | None:
        asked.append(name)
        return known(ns, name, qualified)

    memo = ServiceNames(Indexer(), PodAddresses(enabled=False))
    value = '{"url":"job-worker-1","port":1},{"url":"job-scheduler-0.team.svc","port":2}'
    want = '{"url":"127.9.0.2","port":1},{"url":"127.9.0.1","port":2}'
    assert rewrite_service_hosts(value, "team", counting, memo) == want and "job-worker-1" in asked
    asked.clear()
    assert rewrite_service_hosts(value, "team", counting, memo) == want and not asked
    # Another namespace's: its own (the bare name is not a Service there; the qualified one still is).
    assert rewrite_service_hosts(value, "other", counting, memo) == \
        '{"url":"job-worker-1","port":1},{"url":"127.9.0.1","port":2}' and asked
    asked.clear()
    assert rewrite_service_hosts(value + ",db", "team", counting, memo) == want + ",db" and "db" in asked
    asked.clear()
    memo.changed({"metadata": {"namespace": "elsewhere", "name": "x"}})
    assert rewrite_service_hosts(value, "team", counting, memo) == want and not asked
    memo.changed({"metadata": {"namespace": "team", "name": "job-worker-1"}})
    assert rewrite_service_hosts(value, "team", counting, memo) == want and "job-worker-1" in asked
    assert "job-scheduler-0" not in asked
    known_now, as_of = memo.hosts("team")
    memo.changed({"metadata": {"namespace": "team", "name": "job-worker-1"}})
    assert "job-worker-1" not in known_now and "job-scheduler-0.team.svc" in known_now
    memo.keep_hosts("team", {"job-worker-1": "127.1.1.1", "port": "port"},
                    {"job-worker-1": ("team", "job-worker-1", False), "port": None}, as_of)
    assert "job-worker-1" not in memo.hosts("team")[0] and memo.hosts("team")[0]["port"] == "port"


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

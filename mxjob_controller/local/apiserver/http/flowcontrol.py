"""API Priority and Fairness, lite: kube-apiserver's default FlowSchemas and priority levels, each level's share of
the server's concurrency, fair queues with a bounded wait, and 429 with ``Retry-After`` past them.

As kube's ``WithPriorityAndFairness`` filter: every request (after authentication and impersonation, before
authorization) is classified by the FlowSchemas in precedence order (``exempt`` for ``system:masters`` and the
health probes, ``service-accounts`` → ``workload-low``, ``global-default`` for everyone else, anonymous included...),
and every answer to a classified request carries the
``X-Kubernetes-PF-FlowSchema-UID`` / ``X-Kubernetes-PF-PriorityLevel-UID`` headers, which clients read to know they
may drop their own rate limiting. A limited level runs at most its nominal share of ``--max-requests-inflight`` +
``--max-mutating-requests-inflight`` (``ceil(total · shares / Σ shares)``) at once; others wait in one of its queues
(the shortest of the flow's hand of queues, shuffle-sharded by flow, so one noisy user fills few queues), dispatched
round-robin across queues as seats free. A full queue, or a wait past a quarter of the request timeout counted from
when the request was received (kube's ``getRequestWaitContext``: time spent before the queue counts, so a queued
request is refused with a 429 well before its deadline's 504), is a 429 (``catch-all``, which does not queue: at
once); one still queued at its deadline, in a process too busy to keep that wait, is withdrawn from its queue and
answered the same 429 (it never runs). Watches are classified but take no seat; the other long-running requests
(logs, exec, proxy) pass unclassified, without the PF headers, as kube's filter lets them.
What authentication or impersonation refuses never gets here (no PF headers on a 401); an authorization's 403
does. Not done: borrowing between levels, seat widths, FlowSchema objects from the API.

The pure part (classification, limits, Retry-After) is on top; :class:`FlowControl` holds the queues.
"""

from __future__ import annotations

import bisect
import functools
import hashlib
import itertools
import math
import random
import threading
import time
import uuid
from collections import deque
from dataclasses import dataclass, field
from typing import Any

from mxjob_controller.local.apiserver.auth.user import (
    ANONYMOUS,
    AUTHENTICATED,
    MASTERS,
    SERVICE_ACCOUNT_PREFIX,
    SERVICE_ACCOUNTS,
    UNAUTHENTICATED,
    UserInfo,
)
from mxjob_controller.local.apiserver.http.inflight_limits import MAX_MUTATING_REQUESTS_INFLIGHT, MAX_REQUESTS_INFLIGHT
from mxjob_controller.local.apiserver.request import EarlyResponseError, Exchange, RequestInfo, Response
from mxjob_controller.runtime.client.budget import FLOW_SCHEMA_HEADER, PRIORITY_LEVEL_HEADER

MAX_RETRY_AFTER = 32  # kube's dropped-requests tracker never asks for more
TOO_MANY_REQUESTS = b"Too many requests, please try again later.\n"
_ALL = "*"


@functools.cache
def _uid(kind: str, name: str) -> str:
    """A stable UID per bootstrap object (kube's are random per cluster; stable ones make runs comparable). Every
    request's answer carries two (its FlowSchema's and PriorityLevel's): a uuid5 computed once per object, not
    per request."""
    return str(uuid.uuid5(uuid.NAMESPACE_URL, f"flowcontrol.apiserver.k8s.io/{kind}/{name}"))


# --- configuration: kube's bootstrap objects -----------------------------------------------------------------

@dataclass(frozen=True, slots=True)
class PriorityLevel:
    name: str
    shares: int = 0  # nominalConcurrencyShares
    queues: int = 0  # 0: the level rejects instead of queuing (LimitResponse Reject)
    hand_size: int = 0
    queue_length: int = 0
    exempt: bool = False

    @property
    def uid(self) -> str:
        return _uid("prioritylevelconfigurations", self.name)


@dataclass(frozen=True, slots=True)
class Rule:
    """A FlowSchema rule: resource rules match ``resources`` (with ``namespaces`` / ``cluster_scope``),
    non-resource rules ``urls``; an empty tuple matches nothing."""

    verbs: tuple[str, ...] = (_ALL,)
    groups: tuple[str, ...] = (_ALL,)
    resources: tuple[str, ...] = ()
    namespaces: tuple[str, ...] = (_ALL,)
    cluster_scope: bool = False
    urls: tuple[str, ...] = ()


@dataclass(frozen=True, slots=True)
class FlowSchema:
    name: str
    priority_level: str
    precedence: int
    distinguisher: str  # "ByUser", "ByNamespace" or "" (every request of the schema is one flow)
    subjects: tuple[tuple[str, str], ...]  # ("Group"|"User", name) or ("ServiceAccount", "namespace/name")
    rules: tuple[Rule, ...]

    @property
    def uid(self) -> str:
        return _uid("flowschemas", self.name)


_EVERYTHING = (Rule(resources=(_ALL,), cluster_scope=True), Rule(urls=(_ALL,)))
_EVERYONE = (("Group", UNAUTHENTICATED), ("Group", AUTHENTICATED))
_KUBE_SYSTEM_SAS = (("ServiceAccount", "kube-system/*"),)


def _election(namespaces: tuple[str, ...]) -> tuple[Rule, ...]:
    return (Rule(verbs=("get", "create", "update"), groups=("",), resources=("endpoints", "configmaps"),
                 namespaces=namespaces),
            Rule(verbs=("get", "create", "update"), groups=("coordination.k8s.io",), resources=("leases",)))


PRIORITY_LEVELS = (
    PriorityLevel("exempt", exempt=True),
    PriorityLevel("catch-all", shares=5),
    PriorityLevel("system", 30, 64, 6, 50),
    PriorityLevel("node-high", 40, 64, 6, 50),
    PriorityLevel("leader-election", 10, 16, 4, 50),
    PriorityLevel("workload-high", 40, 128, 6, 50),
    PriorityLevel("workload-low", 100, 128, 6, 50),
    PriorityLevel("global-default", 20, 128, 6, 50),
)
FLOW_SCHEMAS = tuple(sorted((
    FlowSchema("exempt", "exempt", 1, "", (("Group", MASTERS),), _EVERYTHING),
    FlowSchema("probes", "exempt", 2, "", _EVERYONE,
               (Rule(verbs=("get",), urls=("/healthz", "/readyz", "/livez")),)),
    FlowSchema("system-leader-election", "leader-election", 100, "ByUser",
               (("User", "system:kube-controller-manager"), ("User", "system:kube-scheduler"), *_KUBE_SYSTEM_SAS),
               _election(("kube-system",))),
    FlowSchema("endpoint-controller", "workload-high", 150, "ByUser",
               (("User", "system:kube-controller-manager"),
                ("ServiceAccount", "kube-system/endpoint-controller"),
                ("ServiceAccount", "kube-system/endpointslicemirroring-controller")),
               (Rule(verbs=("get", "create", "update"), groups=("",), resources=("endpoints",)),)),
    FlowSchema("workload-leader-election", "leader-election", 200, "ByUser", _KUBE_SYSTEM_SAS, _election((_ALL,))),
    FlowSchema("system-node-high", "node-high", 400, "ByUser", (("Group", "system:nodes"),),
               (Rule(groups=("",), resources=("nodes", "nodes/status"), cluster_scope=True),
                Rule(groups=("coordination.k8s.io",), resources=("leases",)))),
    FlowSchema("system-nodes", "system", 500, "ByUser", (("Group", "system:nodes"),), _EVERYTHING),
    FlowSchema("kube-controller-manager", "workload-high", 800, "ByNamespace",
               (("User", "system:kube-controller-manager"),), _EVERYTHING),
    FlowSchema("kube-scheduler", "workload-high", 800, "ByNamespace", (("User", "system:kube-scheduler"),),
               _EVERYTHING),
    FlowSchema("kube-system-service-accounts", "workload-high", 900, "ByNamespace", _KUBE_SYSTEM_SAS, _EVERYTHING),
    FlowSchema("service-accounts", "workload-low", 9000, "ByUser", (("Group", SERVICE_ACCOUNTS),), _EVERYTHING),
    FlowSchema("global-default", "global-default", 9900, "ByUser", _EVERYONE, _EVERYTHING),
    FlowSchema("catch-all", "catch-all", 10000, "ByUser", _EVERYONE, _EVERYTHING),
), key=lambda fs: (fs.precedence, fs.name)))


# --- decisions --------------------------------------------------------------------------------------------------

def _subject_matches(subject: tuple[str, str], user: UserInfo) -> bool:
    kind, name = subject
    if kind == "Group":
        return name == _ALL or name in user.groups
    if kind == "User":
        return name in (_ALL, user.name)
    if not user.name.startswith(SERVICE_ACCOUNT_PREFIX):
        return False
    namespace, _, account = name.partition("/")
    user_namespace, _, user_account = user.name[len(SERVICE_ACCOUNT_PREFIX):].partition(":")
    return namespace == user_namespace and account in (_ALL, user_account)


def _rule_matches(rule: Rule, info: RequestInfo) -> bool:
    if _ALL not in rule.verbs and info.verb not in rule.verbs:
        return False
    if not info.resource_request:
        return any(url in (_ALL, info.path) or (url.endswith("/*") and info.path.startswith(url[:-1]))
                   for url in rule.urls)
    if not rule.resources or (_ALL not in rule.groups and info.group not in rule.groups):
        return False
    if _ALL not in rule.resources and info.combined_resource not in rule.resources:
        return False
    if not info.namespace:
        return rule.cluster_scope
    return _ALL in rule.namespaces or info.namespace in rule.namespaces


#: Decisions already made, by everything a decision reads (``_decision_key``): a client sends the same few kinds of
#: request over and over, and matching them against every schema cost each request about as much as its routing.
#: Cleared when full (the key holds a URL path for non-resource requests, which a client may vary at will).
_DECISIONS: dict[tuple, FlowSchema] = {}
_DECISIONS_LIMIT = 4096


def _decision_key(who: UserInfo, info: RequestInfo) -> tuple:
    """What matching a request against the schemas reads: its user's name and groups, its verb, and either its
    path (a non-resource request) or its group, resource and namespace."""
    if info.resource_request:
        return (who.name, who.groups, info.verb, True, info.group, info.combined_resource, info.namespace)
    return (who.name, who.groups, info.verb, False, info.path)


def classify(user: UserInfo | None, info: RequestInfo,
             schemas: tuple[FlowSchema, ...] = FLOW_SCHEMAS) -> FlowSchema:
    """The first FlowSchema (by precedence, then name) matching the request. ``user`` None (the server asks nobody
    who they are) is classified as kube classifies a request without credentials: ``system:anonymous``."""
    who = user or ANONYMOUS
    if schemas is not FLOW_SCHEMAS:   # the cache holds the built-in schemas' decisions only
        return _first_match(who, info, schemas)
    key = _decision_key(who, info)
    schema = _DECISIONS.get(key)
    if schema is None:
        schema = _first_match(who, info, schemas)
        if len(_DECISIONS) >= _DECISIONS_LIMIT:
            _DECISIONS.clear()
        _DECISIONS[key] = schema
    return schema


def _first_match(who: UserInfo, info: RequestInfo, schemas: tuple[FlowSchema, ...]) -> FlowSchema:
    for schema in schemas:
        if any(_subject_matches(s, who) for s in schema.subjects) and any(_rule_matches(r, info)
                                                                          for r in schema.rules):
            return schema
    return schemas[-1]


def flow_of(schema: FlowSchema, user: UserInfo | None, info: RequestInfo) -> str:
    """The flow a request belongs to: its schema and, by the schema's distinguisher, its user or namespace."""
    if schema.distinguisher == "ByUser":
        return f"{schema.name}\0{(user or ANONYMOUS).name}"
    if schema.distinguisher == "ByNamespace":
        return f"{schema.name}\0{info.namespace}"
    return schema.name


def hand(flow: str, queues: int, hand_size: int) -> list[int]:
    """The queues a flow may use (shuffle sharding): ``hand_size`` distinct ones, fixed per flow."""
    seed = int.from_bytes(hashlib.blake2b(flow.encode(), digest_size=8).digest(), "big")
    return random.Random(seed).sample(range(queues), min(hand_size, queues))


def nominal_limits(server_limit: int, levels: tuple[PriorityLevel, ...] = PRIORITY_LEVELS) -> dict[str, int]:
    """Each limited level's seats: ``ceil(server_limit · shares / Σ shares)``, as kube computes NominalCL."""
    total = sum(level.shares for level in levels if not level.exempt)
    return {level.name: math.ceil(server_limit * level.shares / total) for level in levels if not level.exempt}


@dataclass(slots=True)
class RetryAfter:
    """kube's dropped-requests tracker for one level: ``Retry-After`` starts at 1 s, doubles (to 32) after a second
    with at least three times as many rejections as its value, and falls back by one when they are fewer."""

    value: int = 1
    current_second: int = 0
    current_count: int = 0
    updated_at: int = 0
    history: list[tuple[int, int]] = field(default_factory=list)

    def record(self, second: int) -> None:
        if second == self.current_second:
            self.current_count += 1
            return
        self.history.append((self.current_second, self.current_count))
        keep = min(2 * self.value, MAX_RETRY_AFTER)
        self.history = [(t, n) for t, n in self.history if second - t <= keep]
        self.current_second, self.current_count = second, 1
        dropped = sum(n for t, n in self.history if second - t <= self.value and t < second)
        if second - self.updated_at >= self.value and dropped >= 3 * self.value:
            self.value = min(2 * self.value, MAX_RETRY_AFTER)
            self.updated_at = second
        elif dropped < self.value and self.value > 1:
            self.value -= 1


def too_many_requests(retry_after: int, headers: dict[str, str] | None = None) -> Response:
    """kube's refusal past a share (APF's and max-in-flight's): Go's ``http.Error``, plain text, ``Retry-After``."""
    return Response(429, TOO_MANY_REQUESTS, content_type="text/plain; charset=utf-8",
                    headers={**(headers or {}), "Retry-After": str(retry_after), "X-Content-Type-Options": "nosniff"})


# --- the queues ---------------------------------------------------------------------------------------------------

class RequestRejectedError(Exception):
    def __init__(self, schema: FlowSchema, retry_after: int) -> None:
        super().__init__("Too many requests, please try again later.")
        self.schema = schema
        self.retry_after = retry_after


@dataclass(slots=True)
class _Waiter:
    """A queued request: dispatched by a freed seat, or withdrawn by its deadline (:meth:`FlowControl.withdraw`)."""

    # Made when it queues: most requests take a seat at once, and every request makes a waiter (it may be withdrawn).
    event: threading.Event = None  # type: ignore[assignment]
    dispatched: bool = False
    withdrawn: bool = False
    queue: deque[_Waiter] | None = None   # where it waits; None before it queues and once it left
    schema: FlowSchema | None = None
    level: _Level | None = None


@dataclass(slots=True)
class _Level:
    config: PriorityLevel
    limit: int
    executing: int = 0
    queues: list[deque[_Waiter]] = field(default_factory=list)
    next_queue: int = 0
    retry_after: RetryAfter = field(default_factory=RetryAfter)


@dataclass(slots=True)
class Seat:
    """A request's admission; :meth:`FlowControl.release` it when the request's handler returns."""

    schema: FlowSchema
    level: _Level | None  # None: it holds no seat (exempt or long-running)


class FlowControl:
    """The priority levels' seats and queues, and the counts behind the ``apiserver_flowcontrol_*`` metrics."""

    def __init__(self, max_inflight: int = MAX_REQUESTS_INFLIGHT,
                 max_mutating_inflight: int = MAX_MUTATING_REQUESTS_INFLIGHT, wait_limit: float = 15.0) -> None:
        self.wait_limit = wait_limit  # kube: a quarter of the request timeout, at most a minute
        limits = nominal_limits(max_inflight + max_mutating_inflight)
        self._levels = {pl.name: _Level(pl, limits.get(pl.name, 0), queues=[deque() for _ in range(pl.queues)])
                        for pl in PRIORITY_LEVELS}
        self._lock = threading.Lock()
        self._stopping = False
        self.stats = FlowStats()
        self._pf: dict[str, dict[str, str]] = {}   # schema name → its answers' PF headers

    def limit(self, level: str) -> int:
        return self._levels[level].limit

    def admit(self, user: UserInfo | None, info: RequestInfo, received: float | None = None,
              waiter: _Waiter | None = None) -> Seat:
        """Classify, then take a seat (waiting in a queue if need be); RequestRejectedError when refused. The wait
        ends ``wait_limit`` after ``received`` (``time.monotonic()``; now if not given), not after queueing.
        ``waiter``: the one to queue, for a caller that may :meth:`withdraw` it."""
        schema = classify(user, info)
        level = self._levels[schema.priority_level]
        if level.config.exempt or info.long_running:
            self.stats.dispatched(schema, 0.0)
            return Seat(schema, None)
        arrived = time.monotonic()
        with self._lock:
            if level.executing < level.limit and not any(level.queues):
                level.executing += 1
                self.stats.seated(schema)
                return Seat(schema, level)
            if not level.queues or self._stopping:
                raise self._reject(schema, level, "concurrency-limit", arrived)
            queue = min((level.queues[i] for i in hand(flow_of(schema, user, info), len(level.queues),
                                                        level.config.hand_size)), key=len)
            if len(queue) >= level.config.queue_length:
                raise self._reject(schema, level, "queue-full", arrived)
            waiter = waiter or _Waiter()
            waiter.event, waiter.queue, waiter.schema, waiter.level = threading.Event(), queue, schema, level
            queue.append(waiter)
            self.stats.inqueue(schema, 1)
        waiter.event.wait(max(0.0, (arrived if received is None else received) + self.wait_limit - time.monotonic()))
        with self._lock:
            self.stats.inqueue(schema, -1)
            waiter.queue = None
            if waiter.dispatched:
                self.stats.executing(schema, 1)
                self.stats.dispatched(schema, time.monotonic() - arrived)
                return Seat(schema, level)
            if not waiter.withdrawn:
                queue.remove(waiter)
            raise self._reject(schema, level, "time-out", arrived)

    def withdraw(self, waiter: _Waiter) -> Response | None:
        """A queued request's deadline came first (a process too busy to keep the quarter-timeout wait): take it out
        of its queue, never to run, and give the 429 to answer in place of the 504 (a 429 tells the client it may
        send again, which is true: nothing ran). None when it is not waiting (dispatched, refused, or not queued)."""
        with self._lock:
            if waiter.queue is None or waiter.dispatched or waiter.withdrawn:
                return None
            waiter.queue.remove(waiter)
            waiter.withdrawn = True
            assert waiter.schema is not None and waiter.level is not None
            schema, retry_after = waiter.schema, waiter.level.retry_after.value
        waiter.event.set()
        return too_many_requests(retry_after, self._pf_headers(schema))

    def stop(self) -> None:
        """Server shutdown: every queued request is refused now instead of at the end of its wait."""
        with self._lock:
            self._stopping = True
            for level in self._levels.values():
                for queue in level.queues:
                    for waiter in queue:
                        waiter.event.set()

    def release(self, seat: Seat) -> None:
        level = seat.level
        if level is None:
            return
        with self._lock:
            self.stats.executing(seat.schema, -1)
            level.executing -= 1
            self._dispatch(level)

    def _dispatch(self, level: _Level) -> None:
        """Seats freed: the next waiters, taking the queues in turn (fair between flows)."""
        if not any(level.queues):   # nobody waits (nearly every release): no turn through each of its queues
            return
        count = len(level.queues)
        while level.executing < level.limit:
            for step in range(count):
                queue = level.queues[(level.next_queue + step) % count]
                if queue:
                    level.next_queue = (level.next_queue + step + 1) % count
                    waiter = queue.popleft()
                    waiter.dispatched = True
                    level.executing += 1
                    waiter.event.set()
                    break
            else:
                return

    def _reject(self, schema: FlowSchema, level: _Level, reason: str, arrived: float) -> RequestRejectedError:
        level.retry_after.record(int(time.time()))
        self.stats.rejected(schema, reason, time.monotonic() - arrived)
        return RequestRejectedError(schema, level.retry_after.value)

    # --- the HTTP side ----------------------------------------------------------------------------------------

    def intercept(self, ex: Exchange) -> None:
        """A router interceptor, after authentication: admit ``ex`` (its seat released when the handler returns)
        or answer 429 as kube's filter does (Go's ``http.Error``: plain text); the PF headers either way."""
        if ex.info.long_running and ex.info.verb != "watch":
            return
        waiter = _Waiter()
        ex.on_deadline = functools.partial(self.withdraw, waiter)
        try:
            seat = self.admit(ex.user, ex.info, ex.started, waiter)
        except RequestRejectedError as e:
            raise EarlyResponseError(too_many_requests(e.retry_after, self._pf_headers(e.schema))) from None
        finally:
            ex.on_deadline = None
        ex.response_headers.update(self._pf_headers(seat.schema))
        if seat.level is not None:
            ex.finishers.append(lambda: self.release(seat))

    def _pf_headers(self, schema: FlowSchema) -> dict[str, str]:
        """The answer's ``X-Kubernetes-PF-*`` headers (a copy: the caller may change it), built once per schema."""
        headers = self._pf.get(schema.name)
        if headers is None:
            headers = self._pf[schema.name] = {
                FLOW_SCHEMA_HEADER: schema.uid, PRIORITY_LEVEL_HEADER: self._levels[schema.priority_level].config.uid}
        return dict(headers)

    def metrics(self) -> list[str]:
        return self.stats.render({name: level.limit for name, level in self._levels.items() if level.limit})


_WAIT_BUCKETS = (0.0, 0.005, 0.02, 0.05, 0.1, 0.2, 0.5, 1.0, 2.0, 5.0, 10.0, 15.0, 30.0)  # kube's


class FlowStats:
    """Counters and gauges by (flow_schema, priority_level), rendered as kube's ``apiserver_flowcontrol_*``."""

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self._inqueue: dict[tuple[str, str], int] = {}
        self._executing: dict[tuple[str, str], int] = {}
        self._dispatched: dict[tuple[str, str], int] = {}
        self._rejected: dict[tuple[str, str, str], int] = {}
        # (execute, fs, pl) → [counts by the first bucket that holds the wait (made cumulative when rendered), sum,
        # count]: one count per request instead of one per bucket.
        self._waits: dict[tuple[str, str, str], list[Any]] = {}

    def inqueue(self, schema: FlowSchema, delta: int) -> None:
        self._add(self._inqueue, (schema.name, schema.priority_level), delta)

    def executing(self, schema: FlowSchema, delta: int) -> None:
        self._add(self._executing, (schema.name, schema.priority_level), delta)

    def seated(self, schema: FlowSchema) -> None:
        """``executing(schema, 1)`` and ``dispatched(schema, 0.0)`` (a seat taken at once, most requests) in one
        acquisition of the lock."""
        key = (schema.name, schema.priority_level)
        with self._lock:
            self._executing[key] = self._executing.get(key, 0) + 1
            self._dispatched[key] = self._dispatched.get(key, 0) + 1
            self._count_wait("true", schema, 0.0)

    def dispatched(self, schema: FlowSchema, waited: float) -> None:
        self._add(self._dispatched, (schema.name, schema.priority_level), 1)
        self._wait("true", schema, waited)

    def rejected(self, schema: FlowSchema, reason: str, waited: float) -> None:
        self._add(self._rejected, (schema.name, schema.priority_level, reason), 1)
        self._wait("false", schema, waited)

    def _add(self, table: dict, key: tuple, delta: int) -> None:
        with self._lock:
            table[key] = table.get(key, 0) + delta

    def _wait(self, execute: str, schema: FlowSchema, seconds: float) -> None:
        with self._lock:
            self._count_wait(execute, schema, seconds)

    def _count_wait(self, execute: str, schema: FlowSchema, seconds: float) -> None:
        entry = self._waits.get((execute, schema.name, schema.priority_level))
        if entry is None:
            entry = self._waits[(execute, schema.name, schema.priority_level)] = [[0] * len(_WAIT_BUCKETS), 0.0, 0]
        first = bisect.bisect_left(_WAIT_BUCKETS, seconds)   # the first bound >= seconds
        if first < len(_WAIT_BUCKETS):
            entry[0][first] += 1
        entry[1] += seconds
        entry[2] += 1

    def render(self, limits: dict[str, int]) -> list[str]:
        with self._lock:
            gauges = (("current_inqueue_requests", "Number of requests currently pending in queues of the API "
                       "Priority and Fairness subsystem", dict(self._inqueue)),
                      ("current_executing_requests", "Number of requests in initial (for a WATCH) or any (for a "
                       "non-WATCH) execution stage in the API Priority and Fairness subsystem", dict(self._executing)))
            dispatched, rejected = dict(self._dispatched), dict(self._rejected)
            waits = {k: (list(itertools.accumulate(v[0])), v[1], v[2]) for k, v in self._waits.items()}
        out: list[str] = []
        for name, text, values in gauges:
            out += [f"# HELP apiserver_flowcontrol_{name} [BETA] {text}",
                    f"# TYPE apiserver_flowcontrol_{name} gauge"]
            out += [f'apiserver_flowcontrol_{name}{{flow_schema="{fs}",priority_level="{pl}"}} {n}'
                    for (fs, pl), n in sorted(values.items())]
        out += ["# HELP apiserver_flowcontrol_dispatched_requests_total [BETA] Number of requests executed by API "
                "Priority and Fairness subsystem", "# TYPE apiserver_flowcontrol_dispatched_requests_total counter"]
        out += [f'apiserver_flowcontrol_dispatched_requests_total{{flow_schema="{fs}",priority_level="{pl}"}} {n}'
                for (fs, pl), n in sorted(dispatched.items())]
        out += ["# HELP apiserver_flowcontrol_rejected_requests_total [BETA] Number of requests rejected by API "
                "Priority and Fairness subsystem", "# TYPE apiserver_flowcontrol_rejected_requests_total counter"]
        out += [f'apiserver_flowcontrol_rejected_requests_total{{flow_schema="{fs}",priority_level="{pl}",'
                f'reason="{reason}"}} {n}' for (fs, pl, reason), n in sorted(rejected.items())]
        out += ["# HELP apiserver_flowcontrol_request_wait_duration_seconds [BETA] Length of time a request spent "
                "waiting in its queue", "# TYPE apiserver_flowcontrol_request_wait_duration_seconds histogram"]
        for (execute, fs, pl), (buckets, total, count) in sorted(waits.items()):
            labels = f'execute="{execute}",flow_schema="{fs}",priority_level="{pl}"'
            out += [f'apiserver_flowcontrol_request_wait_duration_seconds_bucket{{{labels},le="{bound:g}"}} {n}'
                    for bound, n in zip(_WAIT_BUCKETS, buckets, strict=True)]
            out += [f'apiserver_flowcontrol_request_wait_duration_seconds_bucket{{{labels},le="+Inf"}} {count}',
                    f"apiserver_flowcontrol_request_wait_duration_seconds_sum{{{labels}}} {total:g}",
                    f"apiserver_flowcontrol_request_wait_duration_seconds_count{{{labels}}} {count}"]
        out += ["# HELP apiserver_flowcontrol_nominal_limit_seats [BETA] Nominal number of execution seats "
                "configured for each priority level", "# TYPE apiserver_flowcontrol_nominal_limit_seats gauge"]
        out += [f'apiserver_flowcontrol_nominal_limit_seats{{priority_level="{pl}"}} {n}'
                for pl, n in sorted(limits.items())]
        return out

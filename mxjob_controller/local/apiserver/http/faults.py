"""Fault injection: make the embedded API server misbehave on purpose, reproducibly.

In-process (tests)::

    rule = server.faults.add(FaultRule(verb="list", resource="pods", code=429, retry_after=2, count=3))
    ...                                   # the next 3 pod lists get 429 with Retry-After: 2
    assert rule.fired == 3
    server.faults.clear()                 # no more faults
    server.faults.compact("pods")         # forget pod history: the next watch resume gets 410 Expired

Whole-system runs: ``mxjob-controller local up --fault 'verb=list,resource=pods,code=429,retry-after=2,count=3'
--fault-seed 7`` (see :func:`parse_rule` for the keys); ``--compact-every 5`` forgets all watch history every 5 s
(:meth:`FaultInjector.compact_every`), as etcd's compaction does.

A rule matches resource requests (never discovery or health paths) on every field it sets: ``verb`` (get list
watch create update patch delete deletecollection), ``group``, ``resource``, ``subresource``, ``namespace``,
``name`` (each a value or a tuple of values) and ``user_agent`` (a prefix). A matching request *fires* the rule
with ``probability``, at most ``count`` times (None: forever). Firing does, in order: ``compact`` (forget the
resource's watch history), ``latency`` (a fixed delay, or uniform in [latency, latency_max]), then ``code`` (an
error ``Status`` as kube-apiserver words it; 429 and 503 carry ``Retry-After``; a 410 on a watch is an ``ERROR``
event in a 200 stream, as from kube's watch cache), or, for watches, ``watch_events`` / ``watch_seconds`` (the
stream ends cleanly after that many events / seconds, so the client must resume).

Reproducible: every rule draws from its own generator, seeded from the injector's seed and the rule's position,
one draw per matching request. The same seed, rules and sequence of requests give the same faults; ``events``
records which request got what.
"""

from __future__ import annotations

import itertools
import random
import threading
from collections import deque
from dataclasses import dataclass, field
from typing import Any

from mxjob_controller.local.apiserver import errors
from mxjob_controller.local.apiserver.errors import StatusError
from mxjob_controller.local.apiserver.request import Exchange, Frame, RequestInfo, Response, WatchStream, dumps
from mxjob_controller.local.apiserver.storage.store import Store
from mxjob_controller.local.apiserver.storage.watch import Event

Match = str | tuple[str, ...] | None

# The codes a rule may answer, with kube's reason for each.
REASONS = {400: "BadRequest", 401: "Unauthorized", 403: "Forbidden", 404: "NotFound", 405: "MethodNotAllowed",
           408: "Timeout", 409: "Conflict", 410: "Expired", 422: "Invalid", 429: "TooManyRequests",
           500: "InternalError", 503: "ServiceUnavailable", 504: "Timeout"}
_EVENTS_KEPT = 10_000


@dataclass(eq=False)
class FaultRule:
    """What to match, what to do, how often. ``matched`` counts matching requests while the rule was active
    (not exhausted), ``fired`` those it acted on."""

    verb: Match = None
    group: Match = None
    resource: Match = None
    subresource: Match = None
    namespace: Match = None
    name: Match = None
    user_agent: str | None = None
    code: int | None = None
    retry_after: int | None = None
    message: str = ""
    latency: float = 0.0
    latency_max: float | None = None
    watch_events: int | None = None
    watch_seconds: float | None = None
    compact: bool = False
    count: int | None = None
    probability: float = 1.0
    id: int = field(default=0, init=False)
    fired: int = field(default=0, init=False)
    matched: int = field(default=0, init=False)
    _rng: random.Random = field(default_factory=random.Random, init=False, repr=False)

    def __post_init__(self) -> None:
        if self.code is not None and self.code not in REASONS:
            raise ValueError(f"unsupported fault code {self.code}: one of {sorted(REASONS)}")
        if not 0.0 <= self.probability <= 1.0:
            raise ValueError("probability must be within [0, 1]")
        if self.latency < 0 or (self.latency_max is not None and self.latency_max < self.latency):
            raise ValueError("latency must be >= 0 and latency_max >= latency")
        if not (self.code or self.latency or self.latency_max or self.compact or self.watch_events
                or self.watch_seconds):
            raise ValueError("a fault rule must do something: code, latency, compact, watch_events or watch_seconds")

    @property
    def exhausted(self) -> bool:
        return self.count is not None and self.fired >= self.count

    def matches(self, info: RequestInfo) -> bool:
        return (_one_of(self.verb, info.verb) and _one_of(self.group, info.group)
                and _one_of(self.resource, info.resource) and _one_of(self.subresource, info.subresource)
                and _one_of(self.namespace, info.namespace) and _one_of(self.name, info.name)
                and (self.user_agent is None or info.user_agent.startswith(self.user_agent)))


def _one_of(wanted: Match, actual: str) -> bool:
    if wanted is None:
        return True
    return actual == wanted if isinstance(wanted, str) else actual in wanted


@dataclass(frozen=True, slots=True)
class FaultEvent:
    """One fired rule: which rule, its n-th match, the request, and what was done."""

    rule: int
    match: int
    verb: str
    resource: str
    namespace: str
    name: str
    action: str


@dataclass(slots=True)
class _Decision:
    rule: FaultRule
    delay: float


class FaultInjector:
    """The server's fault rules; installed as a Router interceptor and response wrapper."""

    def __init__(self, store: Store, seed: int = 0) -> None:
        self._store = store
        self.seed = seed
        self._lock = threading.Lock()
        self._rules: list[FaultRule] = []
        self._ids = itertools.count(1)
        self._events: deque[FaultEvent] = deque(maxlen=_EVENTS_KEPT)
        self._pending = threading.local()  # from intercept() to wrap(), same connection thread
        self._stopping = threading.Event()
        self._compactor: threading.Thread | None = None
        self.compactions = 0

    # --- the API for tests ------------------------------------------------------------------------------

    def add(self, rule: FaultRule) -> FaultRule:
        with self._lock:
            rule.id = next(self._ids)
            rule._rng = random.Random(f"{self.seed}/{rule.id}")
            self._rules.append(rule)
        return rule

    def remove(self, rule: FaultRule) -> None:
        with self._lock:
            self._rules = [r for r in self._rules if r is not rule]

    def clear(self) -> None:
        """Drop every rule (rule ids keep counting, so a re-added rule set gets new generators)."""
        with self._lock:
            self._rules = []

    def reset(self, seed: int | None = None) -> None:
        """Drop every rule and the event record, and restart rule numbering: a fresh, reproducible start."""
        with self._lock:
            self._rules = []
            self._events.clear()
            self._ids = itertools.count(1)
            if seed is not None:
                self.seed = seed

    def rules(self) -> list[FaultRule]:
        with self._lock:
            return list(self._rules)

    def events(self) -> list[FaultEvent]:
        with self._lock:
            return list(self._events)

    def compact(self, resource: str | None = None, group: str = "") -> int:
        """Forget the watch history of ``resource`` (plural, in ``group``), or of everything: resumes get 410."""
        return self._store.compact(f"{group}/{resource}" if resource else None)

    def compact_every(self, seconds: float) -> None:
        """Forget every resource's watch history every ``seconds`` (a named thread, until :meth:`stop`), as an etcd
        compaction does to a real cluster: a watch resuming from before it gets 410 and must relist."""
        if seconds <= 0 or self._compactor is not None:
            return

        def run() -> None:
            while not self._stopping.wait(seconds):
                self.compact()
                self.compactions += 1

        self._compactor = threading.Thread(target=run, name="apiserver-compactor", daemon=True)
        self._compactor.start()

    def start(self) -> None:
        self._stopping.clear()

    def stop(self) -> None:
        """Cut injected delays short and end the compactor (server shutdown)."""
        self._stopping.set()
        compactor, self._compactor = self._compactor, None
        if compactor is not None:
            compactor.join(timeout=5.0)

    # --- Router hooks -------------------------------------------------------------------------------

    def intercept(self, ex: Exchange) -> None:
        self._pending.decisions = []
        info = ex.info
        if not info.resource_request:
            return
        decisions = self._decide(info)
        for d in decisions:
            rule = d.rule
            if rule.compact:
                self._store.compact(f"{info.group}/{info.resource}")
            if d.delay > 0:
                self._stopping.wait(d.delay)
        for d in decisions:
            if d.rule.code is not None and not (d.rule.code == 410 and info.verb == "watch"):
                raise _error(d.rule, info)
        self._pending.decisions = [d for d in decisions if info.verb == "watch"
                                   and (d.rule.code == 410 or d.rule.watch_events or d.rule.watch_seconds)]

    def wrap(self, ex: Exchange, resp: Response) -> Response:
        decisions: list[_Decision] = getattr(self._pending, "decisions", [])
        self._pending.decisions = []
        if resp.stream is None or not decisions:
            return resp
        for d in decisions:
            if d.rule.code == 410:
                resp.stream.on_close()
                frame = dumps({"type": "ERROR", "object": _error(d.rule, ex.info).status()}) + b"\n"
                return Response(200, b"", chunks=iter([frame]))
        stream = resp.stream
        for d in decisions:
            stream = _shortened(stream, d.rule)
        resp.stream = stream
        return resp

    def _decide(self, info: RequestInfo) -> list[_Decision]:
        out = []
        with self._lock:
            for rule in self._rules:
                if rule.exhausted or not rule.matches(info):
                    continue
                rule.matched += 1
                roll = rule._rng.random()
                delay = rule.latency
                if rule.latency_max is not None:
                    delay = rule._rng.uniform(rule.latency, rule.latency_max)
                if roll >= rule.probability:
                    continue
                rule.fired += 1
                out.append(_Decision(rule, delay))
                self._events.append(FaultEvent(rule.id, rule.matched, info.verb, info.resource, info.namespace,
                                               info.name, _describe(rule, delay)))
        return out


def _error(rule: FaultRule, info: RequestInfo) -> StatusError:
    code = rule.code or 500
    message = rule.message
    res = errors.Resource(info.group, info.resource, "")
    if code == 429:
        return errors.too_many_requests(rule.retry_after or 1, message)
    if code == 500:
        return errors.internal(message or "injected fault")
    if code == 409:
        return errors.conflict(res, info.name, message or errors.STALE_OBJECT)
    if code == 410:
        return errors.expired(message or "too old resource version: injected fault")
    if code == 404 and info.name and not message:
        return errors.not_found(res, info.name)
    err = StatusError(code, REASONS[code], message or _DEFAULT_MESSAGES.get(code, "injected fault"))
    if rule.retry_after is not None:
        err.headers["Retry-After"] = str(rule.retry_after)
        err.details = {"retryAfterSeconds": rule.retry_after}
    return err


_DEFAULT_MESSAGES = {503: "the server is currently unable to handle the request",
                     504: "the server was unable to return a response in the time allotted, but may still be "
                          "processing the request"}


def _describe(rule: FaultRule, delay: float) -> str:
    parts = []
    if rule.compact:
        parts.append("compact")
    if delay:
        parts.append(f"latency={delay:.3f}")
    if rule.code:
        parts.append(f"code={rule.code}")
    if rule.watch_events:
        parts.append(f"watch-events={rule.watch_events}")
    if rule.watch_seconds:
        parts.append(f"watch-seconds={rule.watch_seconds}")
    return ",".join(parts)


def _shortened(stream: WatchStream, rule: FaultRule) -> WatchStream:
    """The same watch, ended after ``watch_events`` events and/or ``watch_seconds`` seconds."""
    timeout = min(stream.timeout, rule.watch_seconds) if rule.watch_seconds else stream.timeout
    encode = _counted(stream, rule.watch_events) if rule.watch_events else stream.encode
    return WatchStream(stream.watcher, encode, stream.bookmark, timeout, stream.on_close)


def _counted(stream: WatchStream, limit: int) -> Any:
    """``stream.encode``, closing the watcher once ``limit`` events are out; what is still queued is dropped
    (the client resumes from the last version it saw)."""
    sent = 0

    def encode(ev: Event) -> Frame | None:
        nonlocal sent
        if sent >= limit:
            return None
        frame = stream.encode(ev)
        if frame is not None:
            sent += 1
            if sent >= limit:
                stream.watcher.close(f"fault: ended after {limit} events")
        return frame

    return encode


# --- the command line form --------------------------------------------------------------------------------

_INT_KEYS = {"code": "code", "retry-after": "retry_after", "count": "count", "watch-events": "watch_events"}
_FLOAT_KEYS = {"latency": "latency", "latency-max": "latency_max", "watch-seconds": "watch_seconds",
               "probability": "probability"}
_MATCH_KEYS = {"verb": "verb", "group": "group", "resource": "resource", "subresource": "subresource",
               "namespace": "namespace", "name": "name"}


def parse_rule(text: str) -> FaultRule:
    """``key=value,...`` into a rule. Match keys take ``a|b`` alternatives.

    Keys: verb group resource subresource namespace name user-agent (match); code retry-after message latency
    latency-max watch-events watch-seconds compact (act); count probability (how often). Raises ValueError.
    """
    kwargs: dict[str, Any] = {}
    for part in filter(None, (p.strip() for p in text.split(","))):
        key, sep, value = part.partition("=")
        key = key.strip().lower()
        value = value.strip()
        if not sep:
            raise ValueError(f"fault rule part {part!r} is not key=value")
        if key in _MATCH_KEYS:
            alternatives = tuple(v for v in value.split("|"))
            kwargs[_MATCH_KEYS[key]] = alternatives[0] if len(alternatives) == 1 else alternatives
        elif key == "user-agent":
            kwargs["user_agent"] = value
        elif key == "message":
            kwargs["message"] = value
        elif key == "compact":
            kwargs["compact"] = value.lower() in ("1", "true", "yes")
        elif key in _INT_KEYS:
            kwargs[_INT_KEYS[key]] = int(value)
        elif key in _FLOAT_KEYS:
            kwargs[_FLOAT_KEYS[key]] = float(value)
        else:
            raise ValueError(f"unknown fault rule key {key!r}")
    return FaultRule(**kwargs)

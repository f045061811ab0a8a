"""How many requests a client may send: an explicit token bucket, none, or whatever the server's flow control calls
for.

Why detect at all: since Kubernetes 1.29 the API server protects itself with API Priority and Fairness (APF): it
queues a busy client's requests fairly and answers 429 with ``Retry-After`` past its queues. A client-side token
bucket on top of that only slows a controller down (SIG API Machinery's advice; controller-runtime dropped its
default limiter in 2025, PR #3119). An older server, or one with APF off, has no such protection: there the token
bucket stays. A server with APF says so on every answer that passed its filter: the
``X-Kubernetes-PF-FlowSchema-UID`` and ``X-Kubernetes-PF-PriorityLevel-UID`` headers (a 403 carries them too; a
401 does not, authentication comes first). cert-manager and Flux look for them on a ``HEAD /livez/ping``; here the
probe is a ``GET /version``: as cheap, and every client may read it (kube's bootstrap ``system:discovery`` and
``system:public-info-viewer`` roles), where a HEAD of ``/livez/ping`` is a verb ``head`` that no bootstrap role
grants (a 403 in the audit log at every start, and a rule the shipped RBAC would have to add).
:meth:`BudgetKeeper.limiter` asks on first use and again after the connection to the server was lost (a server
restarted or replaced may have changed its mind). The clients a program makes of one server share one
:class:`BudgetDecision` (``Client.sibling``): one probe answers them all; each keeps a bucket of its own.

An explicit budget is never overridden by what the server says (cert-manager's #9158: an operator's own limits were
dropped whenever APF was seen). ``qps`` 0 is client-go's default (5/s, burst 10); negative is no limit.

The pure part (:class:`Budget`, :func:`advertises_flow_control`, :func:`explicit_budget`, :func:`detected_budget`)
is on top; :class:`BudgetDecision` holds the server's answer, :class:`BudgetKeeper` a client's bucket.
"""

from __future__ import annotations

import logging
import threading
import time
from collections.abc import Callable, Mapping
from dataclasses import dataclass

from mxjob_controller.runtime.client.config import DEFAULT_BURST, DEFAULT_QPS
from mxjob_controller.runtime.token_bucket import TokenBucket

log = logging.getLogger(__name__)

FLOW_SCHEMA_HEADER = "X-Kubernetes-PF-FlowSchema-UID"
PRIORITY_LEVEL_HEADER = "X-Kubernetes-PF-PriorityLevel-UID"
PROBE_PATH = "/version"        # cheap, served by every kube-apiserver, readable by every client
RECHECK_INTERVAL = 1.0         # seconds between probes while the server cannot be reached


@dataclass(frozen=True, slots=True)
class Budget:
    """The budget in force: ``qps`` negative means no client-side limit; ``why`` says how it was chosen."""

    qps: float
    burst: int
    why: str

    @property
    def limited(self) -> bool:
        return self.qps > 0


def advertises_flow_control(headers: Mapping[str, str]) -> bool:
    """True when an answer carries APF's headers (either one: kube always sends both)."""
    wanted = (FLOW_SCHEMA_HEADER.lower(), PRIORITY_LEVEL_HEADER.lower())
    return any(key.lower() in wanted and str(value).strip() for key, value in headers.items())


def explicit_budget(qps: float, burst: int) -> Budget:
    """A budget as configured: ``qps`` 0 is client-go's default, negative no limit."""
    if qps < 0:
        return Budget(-1.0, 0, "no client-side limit")
    qps = qps or DEFAULT_QPS
    burst = burst if burst > 0 else DEFAULT_BURST
    return Budget(float(qps), burst, f"token bucket qps={qps:g}, burst={burst}")


def detected_budget(flow_control: bool | None, qps: float, burst: int) -> Budget:
    """The budget for what the probe found: APF (True), no PF headers (False), or no answer (None); ``qps`` and
    ``burst`` are the bucket for a server without APF."""
    bucket = explicit_budget(qps, burst)
    if flow_control:
        return Budget(-1.0, 0, "server advertises API Priority and Fairness: no client-side limit")
    if flow_control is None:
        return Budget(bucket.qps, bucket.burst, f"server not reachable to look for PF headers: {bucket.why} until "
                                                f"it answers")
    return Budget(bucket.qps, bucket.burst, f"server sends no PF headers: {bucket.why}")


class BudgetDecision:
    """What the server calls for, decided once for every client that shares it: the clients one program makes of
    one server (the main client, the informers', the leader elector's) each keep their own bucket, but the server's
    answer is the same for all of them, so one probe answers all. Explicit (``detect`` False): the configured bucket,
    always. Detecting: the server is probed on first use and again on the first use after :meth:`connection_lost`
    (by any of the clients sharing it); until a probe succeeds the bucket applies. One thread probes at a time; the
    others go on under the budget in force meanwhile."""

    def __init__(self, qps: float, burst: int, detect: bool) -> None:
        self.qps, self.burst, self.detect = qps, burst, detect
        self._budget = explicit_budget(qps, burst)
        self._stale = detect              # a probe is due
        self._probing = threading.Lock()
        self._last_probe = float("-inf")
        self._decided = False

    def current(self, probe: Callable[[], Mapping[str, str] | None]) -> Budget:
        """The budget in force, asking the server first (through ``probe``, the asking client's) when it is due."""
        if self._stale:
            self._recheck(probe, block=self._last_probe == float("-inf"))
        return self._budget

    def connection_lost(self) -> None:
        """The server could not be reached: ask it again before the next request."""
        if self.detect:
            self._stale = True

    def _recheck(self, probe: Callable[[], Mapping[str, str] | None], block: bool) -> None:
        # The very first probe is waited for by every caller: nothing is sent under a budget nobody chose.
        if not self._probing.acquire(blocking=block):
            return
        try:
            if not self._stale or time.monotonic() - self._last_probe < RECHECK_INTERVAL:
                return
            self._last_probe = time.monotonic()
            headers = probe()
            found = None if headers is None else advertises_flow_control(headers)
            budget = detected_budget(found, self.qps, self.burst)
            if budget != self._budget and self._decided:   # the first decision is the caller's to report
                log.info("client budget changed: %s", budget.why)
            self._budget, self._decided = budget, True
            self._stale = found is None
        finally:
            self._probing.release()


class BudgetKeeper:
    """One client's budget over its life: its own token bucket, applied while the (possibly shared)
    :class:`BudgetDecision` calls for one.

    ``probe`` sends ``GET /version`` through this client and returns the answer's headers (any status), or None
    when the server could not be reached."""

    def __init__(self, decision: BudgetDecision, probe: Callable[[], Mapping[str, str] | None]) -> None:
        self.decision = decision
        self._probe = probe
        fallback = explicit_budget(decision.qps, decision.burst)
        self._bucket = TokenBucket(fallback.qps, fallback.burst) if fallback.limited else None

    @property
    def detect(self) -> bool:
        return self.decision.detect

    def limiter(self) -> TokenBucket | None:
        """The bucket to take a token from now (None: no limit), probing first when a probe is due."""
        return self._bucket if self.decision.current(self._probe).limited else None

    def current(self) -> Budget:
        """The budget in force (probing first if the server was never asked)."""
        return self.decision.current(self._probe)

    def connection_lost(self) -> None:
        """The server could not be reached: ask it again before the next request (of any client sharing the
        decision)."""
        self.decision.connection_lost()

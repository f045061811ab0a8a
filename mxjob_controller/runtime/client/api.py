"""The API client: generic verbs over any resource, plain dicts in and out, typed errors.

Ordinary requests go over sockets of the client's own by ``transport`` (HTTP/1.1 by hand, framed by
``runtime/http1``); watches, streams and anything through a proxy through a urllib3 pool manager (public API
only), built from the same configuration: TLS (an ``ssl_context`` of the same settings), proxy, pool sizes,
connection retries. Bodies are encoded as compact JSON and
responses JSON-decoded into dicts once, by us: no model object is ever built.

Guarantees (one :class:`Client` is meant to be shared by every thread of a process):
- thread-safe: the pool manager, the token bucket and the budget keeper are; nothing else is mutable after
  construction but the closed flag;
- every request, watches and retries included, first takes a token from the client's bucket (``qps``/``burst``),
  if it has one: with ``detect_flow_control`` the bucket applies only while the server does not advertise API
  Priority and Fairness (``budget``: probed at first use and again after the connection was lost);
- every request has a connect and a read timeout (watches: the server-side timeout plus a margin);
- every call has an overall ``deadline`` (seconds; default :data:`DEADLINE_FACTOR` times its read timeout, for a
  watch times the client's ordinary timeout) covering its rate-limit wait, its attempts and its retry waits. No
  wait goes past it: a token that would come later raises :class:`RateLimitTimeout` at once, and so does the
  server's error when its ``Retry-After`` would;
- a 401 to a credential a program made (an ``exec`` plugin, an ``auth-provider``: a ``RefreshableToken``) makes
  it anew and sends the request again, once per call (client-go's exec round-tripper); the credential's client
  certificate, if it gives one, is the one the client's connections present (a new one: the kept connections are
  dropped first);
- a 429 or 5xx response carrying ``Retry-After`` is retried after that many seconds plus up to a fifth of them at
  random (``retries``), up to ``max_retries`` times (client-go's default is 10) and within the deadline, each retry
  counted in ``rest_client_request_retries_total``; every other failure is raised at once as its typed error (see
  ``errors``). A 429 means the server did not run the request, so a retried write is never applied twice;
- no wait is a bare sleep: every one ends at once, with :class:`Cancelled`, when the caller's ``cancel`` event is
  set, and within :data:`_CLOSE_POLL` seconds when :meth:`Client.close` is called. A closed client sends nothing,
  and neither does an attempt whose ``cancel`` is set when its token is granted (the last step before sending, for
  the first attempt and every retry): a caller that cancels sends no request after that moment.
"""

from __future__ import annotations

import json
import logging
import os
import platform
import sys
import threading
import time
from collections.abc import Callable, Mapping
from typing import Any
from urllib.parse import urlencode, urlsplit

import urllib3

from mxjob_controller.runtime.client.budget import PROBE_PATH, BudgetDecision, BudgetKeeper
from mxjob_controller.runtime.client.config import ClientConfig, CredentialError, RefreshableToken
from mxjob_controller.runtime.client.errors import (
    ApiError,
    Cancelled,
    Gone,
    RateLimitTimeout,
    ReadTimeout,
    ServerError,
    TransportError,
    error_for_response,
)
from mxjob_controller.runtime.client.resource import Resource
from mxjob_controller.runtime.client.retries import RetryTally, jittered_wait
from mxjob_controller.runtime.client.transport import AnswerTimeoutError, Connections, Target, client_ssl_context
from mxjob_controller.runtime.client.watch import WatchStream
from mxjob_controller.runtime.token_bucket import TokenBucket

log = logging.getLogger(__name__)

PATCH_CONTENT_TYPES = {
    "merge": "application/merge-patch+json",
    "json": "application/json-patch+json",
    "strategic": "application/strategic-merge-patch+json",
    "apply": "application/apply-patch+yaml",
}
PROPAGATION_POLICIES = ("Background", "Foreground", "Orphan")
DEFAULT_PAGE_SIZE = 500          # client-go's pager.defaultPageSize
PAGE_RETRY_DELAY = 0.5           # seconds before a later list page that failed is asked again (list_all)
DEFAULT_WATCH_TIMEOUT = 1800     # kube-apiserver's --min-request-timeout, when the caller sets none
WATCH_READ_MARGIN = 30.0         # seconds of silence tolerated beyond the server-side watch timeout
DEADLINE_FACTOR = 2.0            # a call's default deadline, in read timeouts: one slow attempt plus retries
_CLOSE_POLL = 0.1                # how soon close() ends a wait that also watches a caller's cancel event

Query = Mapping[str, Any]


def _decision_for(config: ClientConfig, budget_of: Client | None) -> BudgetDecision:
    """``budget_of``'s decision when it has the same server and budget rule as ``config``, else a new one."""
    if budget_of is not None:
        theirs = budget_of.config
        if (theirs.host, theirs.qps, theirs.burst, theirs.detect_flow_control) == \
                (config.host, config.qps, config.burst, config.detect_flow_control):
            return budget_of.budget.decision
    return BudgetDecision(config.qps, config.burst, config.detect_flow_control)


def default_program() -> str:
    """The running program's name, as client-go's ``DefaultUserAgent`` takes it from ``os.Args[0]``: the script's
    file name, or the package of ``python -m <package>``; "unknown" when there is none."""
    spec = getattr(sys.modules.get("__main__"), "__spec__", None)
    if spec is not None and spec.name:
        return spec.name.removesuffix(".__main__")
    script = os.path.basename(sys.argv[0]) if sys.argv and sys.argv[0] else ""
    if script.startswith("-"):  # python -c: no program file
        script = ""
    return script.removesuffix(".py") or "unknown"


def user_agent(component: str = "", program: str | None = None, version: str | None = None) -> str:
    """``<program>/<version> (linux/amd64) <component>``: who is calling, in the server's audit log.

    The caller names itself (``program``, ``version``); without them, client-go's defaults: the running program's
    name (:func:`default_program`) and version "unknown"."""
    arch = {"x86_64": "amd64", "aarch64": "arm64"}.get(platform.machine(), platform.machine())
    agent = f"{program or default_program()}/{version or 'unknown'} ({platform.system().lower()}/{arch})"
    return f"{agent} {component}" if component else agent


class Client:
    """One API server, one connection pool, one rate limit: share an instance between threads.

    ``program`` and ``version`` name the calling program in the User-Agent (see :func:`user_agent`), unless the
    configuration sets a whole ``user_agent``. ``budget_of``: another client of the same server and budget rule
    whose :class:`~mxjob_controller.runtime.client.budget.BudgetDecision` this one shares (one probe answers both;
    the buckets stay apart)."""

    def __init__(self, config: ClientConfig, component: str = "", *, program: str | None = None,
                 version: str | None = None, max_retries: int = 10, retries: RetryTally | None = None,
                 budget_of: Client | None = None) -> None:
        self.config = config
        self.user_agent = config.user_agent or user_agent(component, program, version)
        self.max_retries = max(0, max_retries)
        self._caller = (program, version)
        self.budget = BudgetKeeper(_decision_for(config, budget_of), self._probe_headers)
        self.retries = retries or RetryTally(urlsplit(config.host).netloc)   # siblings share it
        self._closed = threading.Event()
        # Requests go straight to a urllib3 pool manager: the official client's wrapper re-encoded every body and
        # built a model exception per error, a fifth of the client's CPU per request (``make bench``: ``large_job``).
        self._pool = _pool_manager(config)
        # Ordinary requests (not streams, not through a proxy) go over sockets of our own (``transport``): most of
        # what urllib3 costs a request is spared; their TLS is made of the same settings.
        self._prefix = urlsplit(config.host).path.rstrip("/")
        self._cert_generation = getattr(config.token, "certificate_generation", 0)
        self._direct = None if config.proxy_url else Connections(
            Target.of(config.host, _ssl_context(config), config.tls_server_name), config.max_connections)

    @property
    def rate_limiter(self) -> TokenBucket | None:
        """The token bucket requests take from now (None: no client-side limit)."""
        return self.budget.limiter()

    def sibling(self, component: str | None, **overrides: Any) -> Client:
        """A client of the same server, credentials and caller, with its own connections and its own token bucket
        (``overrides`` change the configuration: ``qps``, ``burst``...), so that one kind of traffic cannot use up
        another's budget. client-go: a clientset built from a copy of a ``rest.Config`` gets a rate limiter of its
        own (controller-runtime's events client, the kubelet's ``--event-qps`` client). ``component`` None: the
        same User-Agent as this client (the same program to the server; only the budget is apart). Given a ``qps``
        or ``burst`` of its own, it keeps that bucket whatever the server says; else it follows this client's rule
        and shares its decision (one ``GET /version`` answers both). Its retries are counted with this client's.
        Close it separately."""
        program, version = self._caller
        if component is None:
            overrides.setdefault("user_agent", self.user_agent)
        if "qps" in overrides or "burst" in overrides:
            overrides.setdefault("detect_flow_control", False)
        return Client(self.config.with_overrides(**overrides), component or "", program=program, version=version,
                      max_retries=self.max_retries, retries=self.retries, budget_of=self)

    def close(self) -> None:
        """End every wait in progress (rate limit, Retry-After) with :class:`Cancelled`, refuse later requests,
        and drop pooled connections. Streams already open are left to their readers to close."""
        self._closed.set()
        self._pool.clear()
        if self._direct is not None:
            self._direct.clear()

    @property
    def closed(self) -> bool:
        return self._closed.is_set()

    def __enter__(self) -> Client:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    # --- the transport ----------------------------------------------------------------------------------

    def request(self, method: str, path: str, *, query: Query | None = None, body: Any = None,
                content_type: str = "application/json", timeout: float | None = None,
                deadline: float | None = None, cancel: threading.Event | None = None, decode: bool = True) -> Any:
        """Send one request and return its decoded JSON body (None when empty); raise a typed error.

        ``timeout``: the read timeout of each attempt (default: the configuration's); ``deadline``: seconds the
        whole call may take, waits and retries included (default: :data:`DEADLINE_FACTOR` read timeouts).
        ``decode`` False: a success's body is read to its end (the connection is kept) but not decoded, and None
        is returned; for a caller that does not use it (a pod's status write answered with the whole pod, 65 KB
        in a large MXJob's). Errors are raised as ever: they are decoded before this point."""
        read_timeout = timeout or self.config.timeout
        ends = time.monotonic() + (deadline if deadline is not None else DEADLINE_FACTOR * read_timeout)
        resp = self._send(method, path, query, body, content_type, read_timeout, ends, cancel)
        try:
            data = resp.data
        except (urllib3.exceptions.ReadTimeoutError, TimeoutError) as e:
            raise ReadTimeout(f"{method} {path}: response body timed out") from e
        except (urllib3.exceptions.HTTPError, OSError) as e:
            raise TransportError(f"{method} {path}: reading the response failed: {e}") from e
        finally:
            resp.release_conn()
        if not data or not decode:
            return None
        try:
            return json.loads(data)
        except ValueError as e:
            raise TransportError(f"{method} {path}: the response is not JSON: {data[:200]!r}") from e

    def _send(self, method: str, path: str, query: Query | None, body: Any, content_type: str,
              read_timeout: float, ends: float, cancel: threading.Event | None, *, stream: bool = False) -> Any:
        """The 2xx urllib3 response, unread; retries as the server asks (Retry-After) while ``ends`` (monotonic)
        allows, else raises. A ``stream`` keeps its read timeout whole; other attempts read until ``ends`` at most."""
        params = _query_params(query)
        target = path + (f"?{urlencode(params)}" if params else "")
        url = self.config.host + target
        payload = _encode_body(body)
        attempt = 0
        renewed = False
        while True:
            if self._closed.is_set():
                raise Cancelled(f"{method} {path}: the client is closed")
            self._take_token(method, path, ends, cancel)
            left = max(ends - time.monotonic(), 0.001)
            timeout = (self.config.connect_timeout if stream else min(self.config.connect_timeout, left),
                       read_timeout if stream else min(read_timeout, left))
            headers = {"Accept": "application/json", "User-Agent": self.user_agent, "Content-Type": content_type}
            auth = self.config.authorization()
            if auth:
                headers["Authorization"] = auth
            self._check_certificate()
            if cancel is not None and cancel.is_set():   # the last moment: after the token, credential, retry wait
                self._give_back_token()
                raise Cancelled(f"{method} {path}: cancelled before it was sent")
            started = time.monotonic()
            try:
                if self._direct is not None and not stream:
                    resp = self._direct.request(method, self._prefix + target, headers, payload, *timeout,
                                                deadline=ends)
                else:
                    resp = self._pool.urlopen(method, url, body=payload, headers=headers, preload_content=False,
                                              timeout=urllib3.Timeout(connect=timeout[0], read=timeout[1]))
                if not 200 <= resp.status <= 299:
                    try:
                        data = resp.data
                    finally:
                        resp.release_conn()
                    raise _RefusedError(resp.status, data, resp.headers)
            except _RefusedError as e:
                err = error_for_response(e.status, e.body, e.headers, method)
                log.debug("%s %s -> %d %s (%.1f ms)", method, path, err.code, err.reason,
                          (time.monotonic() - started) * 1000)
                if err.code == 401 and not renewed:
                    renewed = True   # once per call: a credential refused again is the caller's error
                    if self._renew_credential(auth):
                        log.info("%s %s: 401; the credential (%r) was made anew: sending again", method, path,
                                 self.config.token)
                        continue
                asked = _retry_wait(err)
                if asked is None or attempt >= self.max_retries:
                    raise err from None
                wait = jittered_wait(asked, ends - time.monotonic())
                if wait is None:
                    log.info("%s %s: %d %s; the server asks to retry in %gs, past this call's deadline: giving up",
                             method, path, err.code, err.reason, asked)
                    raise err from None
                attempt += 1
                self.retries.count(err.code, method)
                log.info("%s %s: %d %s, retrying in %.2fs as the server asks (%gs; retry %d of %d)", method, path,
                         err.code, err.reason, wait, asked, attempt, self.max_retries)
                if self._wait(wait, cancel):
                    raise Cancelled(f"{method} {path}: cancelled while waiting to retry") from None
                continue
            except (urllib3.exceptions.HTTPError, OSError) as e:
                cause = e.reason if isinstance(e, urllib3.exceptions.MaxRetryError) else e
                if isinstance(cause, (urllib3.exceptions.ReadTimeoutError, AnswerTimeoutError)):
                    raise ReadTimeout(f"{method} {path}: no response within {timeout[1]:g}s") from e
                self.budget.connection_lost()   # a server that comes back may not be the same kind
                raise TransportError(f"{method} {path}: {type(cause).__name__}: {cause}") from e
            log.debug("%s %s -> %d (%.1f ms)", method, path, resp.status, (time.monotonic() - started) * 1000)
            return resp

    def _check_certificate(self) -> None:
        """When the credential plugin gave a new client certificate: drop the kept connections, which present the
        old one (client-go closes them too); the next connect loads the new file."""
        generation = getattr(self.config.token, "certificate_generation", 0)
        if generation != self._cert_generation:
            self._cert_generation = generation
            # The certificate is loaded into an SSLContext when one is made: new contexts, for new connections.
            if self._direct is not None:
                self._direct.drop_idle(Target.of(self.config.host, _ssl_context(self.config),
                                                 self.config.tls_server_name))
            old, self._pool = self._pool, _pool_manager(self.config)
            old.clear()   # urllib3's pools (streams, a proxy): their streams open keep their connections

    def _renew_credential(self, sent: str | None) -> bool:
        """After a 401 to the Authorization ``sent``: whether the configuration's credential could be made anew."""
        source = self.config.token
        if not isinstance(source, RefreshableToken):
            return False
        refused = sent.removeprefix("Bearer ") if sent and sent.startswith("Bearer ") else None
        return source.refresh(refused)

    def _take_token(self, method: str, path: str, ends: float, cancel: threading.Event | None) -> None:
        """Wait for the rate limiter's permission to send, within ``ends``."""
        bucket = self.budget.limiter()
        if bucket is None:
            return
        left = max(0.0, ends - time.monotonic())
        wait = bucket.reserve(max_wait=left)
        if wait is None:
            raise RateLimitTimeout(f"{method} {path}: the client rate limiter (qps={bucket.qps:g}, "
                                   f"burst={bucket.burst}) cannot grant a request within the {left:.3f}s left")
        if wait > 0 and self._wait(wait, cancel):
            bucket.give_back()
            raise Cancelled(f"{method} {path}: cancelled while waiting for the client rate limiter")

    def _give_back_token(self) -> None:
        """Return the token of an attempt that will not be sent after all."""
        bucket = self.budget.limiter()
        if bucket is not None:
            bucket.give_back()

    def _probe_headers(self) -> Mapping[str, str] | None:
        """``GET /version``'s response headers, whatever its status; None when the server cannot be reached.
        Outside the token bucket (it decides the bucket) and never retried."""
        if self._closed.is_set():
            return None
        headers = {"User-Agent": self.user_agent}
        auth = self.config.authorization()
        if auth:
            headers["Authorization"] = auth   # without it kube answers 401, before its flow control sees the request
        timeout = min(self.config.connect_timeout, self.config.timeout)
        try:   # on the transport when it serves the client: a malformed answer refused at once, not read to the end
            if self._direct is not None:
                resp = self._direct.request("GET", self._prefix + PROBE_PATH, headers, None, timeout, timeout)
            else:
                resp = self._pool.urlopen("GET", self.config.host + PROBE_PATH, headers=headers, retries=False,
                                          timeout=urllib3.Timeout(connect=timeout, read=timeout))
        except (urllib3.exceptions.HTTPError, OSError) as e:
            log.info("cannot ask %s whether it has API Priority and Fairness: %s", self.config.host, e)
            return None
        resp.release_conn()
        return dict(resp.headers)

    def _wait(self, seconds: float, cancel: threading.Event | None) -> bool:
        """Wait ``seconds``; True as soon as ``cancel`` is set or the client is closed (then stop waiting)."""
        if cancel is None:
            return self._closed.wait(seconds)
        ends = time.monotonic() + seconds
        while True:
            left = ends - time.monotonic()
            if left <= 0:
                return cancel.is_set() or self._closed.is_set()
            # One event can be waited on at a time: the caller's, in slices that also look at ours.
            if cancel.wait(min(left, _CLOSE_POLL)) or self._closed.is_set():
                return True

    # --- reads ------------------------------------------------------------------------------------------
    # Every verb takes ``timeout`` (read timeout of each attempt), ``deadline`` (the whole call) and ``cancel``.

    def get(self, resource: Resource, name: str, namespace: str | None = None, *,
            subresource: str | None = None, timeout: float | None = None, deadline: float | None = None,
            cancel: threading.Event | None = None) -> dict[str, Any]:
        return self.request("GET", resource.path(_ns(resource, namespace), name, subresource), timeout=timeout,
                            deadline=deadline, cancel=cancel)

    def list(self, resource: Resource, namespace: str | None = None, *, label_selector: str | None = None,
             field_selector: str | None = None, limit: int | None = None, continue_token: str | None = None,
             resource_version: str | None = None, timeout: float | None = None, deadline: float | None = None,
             cancel: threading.Event | None = None) -> dict[str, Any]:
        """One page: ``metadata.continue`` is set when more remain (pass it back as ``continue_token``)."""
        query = {"labelSelector": label_selector, "fieldSelector": field_selector, "limit": limit,
                 "continue": continue_token, "resourceVersion": resource_version}
        return self.request("GET", resource.path(_ns(resource, namespace, allow_all=True)), query=query,
                            timeout=timeout, deadline=deadline, cancel=cancel)

    def list_all(self, resource: Resource, namespace: str | None = None, *, label_selector: str | None = None,
                 field_selector: str | None = None, page_size: int = DEFAULT_PAGE_SIZE, timeout: float | None = None,
                 deadline: float | None = None, cancel: threading.Event | None = None,
                 page_retries: int = 0,
                 each_page: Callable[[dict[str, Any]], list[dict[str, Any]]] | None = None) -> dict[str, Any]:
        """Every item, fetched ``page_size`` at a time, as one list at one resourceVersion. ``deadline`` covers
        every page together (default: each page has the default deadline of one call). ``each_page(page)``, when
        given, makes the items kept of each page as it arrives (a cache's transform: the whole list is then never
        held as received, only one page of it).

        All pages come from the snapshot of the first (continue tokens pin it). If that snapshot expires midway
        (410), the pages read so far are dropped and one unpaginated list is made instead, as client-go's pager
        does with ``FullListIfExpired``. ``page_retries``: a later page that fails on the way or with a 5xx is
        asked again (its continue token) up to that many times, :data:`PAGE_RETRY_DELAY` apart, instead of the
        whole list failing with the pages read so far: a list of 20 pages under 10% of transient failures
        otherwise fails 7 times in 8.
        """
        ends = None if deadline is None else time.monotonic() + deadline

        def page_of(**args: Any) -> dict[str, Any]:
            left = None if ends is None else ends - time.monotonic()
            return self.list(resource, namespace, label_selector=label_selector, field_selector=field_selector,
                             timeout=timeout, deadline=left, cancel=cancel, **args)

        items: list[dict[str, Any]] = []
        token: str | None = None
        while True:
            try:
                page = self._page_with_retries(page_of, page_size, token, page_retries if token else 0, cancel)
            except Gone:
                if token is None:
                    raise
                log.info("list of %s: the paginated snapshot expired, listing everything at once", resource)
                page = page_of()
                items = []
                token = None
            items.extend(each_page(page) if each_page is not None else page.get("items") or [])
            meta = page.get("metadata") or {}
            token = meta.get("continue") or None
            if token is None:
                return {"apiVersion": page.get("apiVersion"), "kind": page.get("kind"),
                        "metadata": {"resourceVersion": meta.get("resourceVersion", "")}, "items": items}

    @staticmethod
    def _page_with_retries(page_of: Callable[..., dict[str, Any]], page_size: int, token: str | None, retries: int,
                           cancel: threading.Event | None) -> dict[str, Any]:
        failures = 0
        while True:
            try:
                return page_of(limit=page_size or None, continue_token=token)
            except (ServerError, TransportError) as e:
                failures += 1
                if failures > retries:
                    raise
                log.info("list page failed (%s); asking for it again in %gs", e, PAGE_RETRY_DELAY)
                if (cancel or threading.Event()).wait(PAGE_RETRY_DELAY):
                    raise Cancelled("cancelled between list pages") from e

    def watch(self, resource: Resource, namespace: str | None = None, *, resource_version: str | None = None,
              label_selector: str | None = None, field_selector: str | None = None,
              timeout_seconds: int | None = None, allow_bookmarks: bool = False, read_timeout: float | None = None,
              deadline: float | None = None, cancel: threading.Event | None = None) -> WatchStream:
        """Open a watch; iterate the returned stream for events, close it to stop (from any thread).

        ``resource_version`` None or "0" starts with synthetic ADDED events for every current object; a
        version from a list or an event resumes just after it (410 :class:`Expired` if the server forgot it).
        ``deadline`` bounds the opening only (waits and retries before the stream starts), not the stream.
        """
        server_timeout = timeout_seconds or DEFAULT_WATCH_TIMEOUT
        query = {"watch": True, "resourceVersion": resource_version, "labelSelector": label_selector,
                 "fieldSelector": field_selector, "timeoutSeconds": timeout_seconds,
                 "allowWatchBookmarks": True if allow_bookmarks else None}
        path = resource.path(_ns(resource, namespace, allow_all=True))
        read = read_timeout if read_timeout is not None else server_timeout + WATCH_READ_MARGIN
        ends = time.monotonic() + (deadline if deadline is not None else DEADLINE_FACTOR * self.config.timeout)
        resp = self._send("GET", path, query, None, "application/json", read, ends, cancel, stream=True)
        return WatchStream(resp, f"watch {path}")

    def stream(self, path: str, *, query: Query | None = None, read_timeout: float | None = None,
               deadline: float | None = None, cancel: threading.Event | None = None) -> Any:
        """GET ``path`` and return the open response to read as it arrives (``pods/<name>/log?follow=true``): iterate
        its ``stream()``, then call its ``release_conn()``. ``read_timeout`` bounds each wait for more bytes;
        ``deadline`` bounds the opening only."""
        read = read_timeout if read_timeout is not None else self.config.timeout
        ends = time.monotonic() + (deadline if deadline is not None else DEADLINE_FACTOR * self.config.timeout)
        return self._send("GET", path, query, None, "application/json", read, ends, cancel, stream=True)

    # --- writes -----------------------------------------------------------------------------------------

    def create(self, resource: Resource, obj: Mapping[str, Any], namespace: str | None = None, *,
               dry_run: bool = False, field_manager: str | None = None, timeout: float | None = None,
               deadline: float | None = None, cancel: threading.Event | None = None) -> dict[str, Any]:
        path = resource.path(_ns(resource, namespace, obj))
        return self.request("POST", path, query=_write_query(dry_run, field_manager), body=dict(obj),
                            timeout=timeout, deadline=deadline, cancel=cancel)

    def update(self, resource: Resource, obj: Mapping[str, Any], namespace: str | None = None, *,
               dry_run: bool = False, field_manager: str | None = None, timeout: float | None = None,
               deadline: float | None = None, cancel: threading.Event | None = None) -> dict[str, Any]:
        """PUT the whole object; its ``metadata.resourceVersion`` (if set) makes it conditional (409 Conflict)."""
        return self._put(resource, obj, namespace, None, dry_run, field_manager, timeout, deadline, cancel)

    def update_status(self, resource: Resource, obj: Mapping[str, Any], namespace: str | None = None, *,
                      dry_run: bool = False, field_manager: str | None = None, timeout: float | None = None,
                      deadline: float | None = None, cancel: threading.Event | None = None) -> dict[str, Any]:
        """PUT to the ``status`` subresource: only the status changes, whatever else the body says."""
        return self._put(resource, obj, namespace, "status", dry_run, field_manager, timeout, deadline, cancel)

    def _put(self, resource: Resource, obj: Mapping[str, Any], namespace: str | None, subresource: str | None,
             dry_run: bool, field_manager: str | None, timeout: float | None, deadline: float | None,
             cancel: threading.Event | None) -> dict[str, Any]:
        name = (obj.get("metadata") or {}).get("name")
        if not name:
            raise ValueError(f"update of {resource.qualified}: the object has no metadata.name")
        path = resource.path(_ns(resource, namespace, obj), name, subresource)
        return self.request("PUT", path, query=_write_query(dry_run, field_manager), body=dict(obj),
                            timeout=timeout, deadline=deadline, cancel=cancel)

    def patch(self, resource: Resource, name: str, patch: Any, namespace: str | None = None, *,
              patch_type: str = "merge", subresource: str | None = None, field_manager: str | None = None,
              force: bool | None = None, dry_run: bool = False, timeout: float | None = None,
              deadline: float | None = None, cancel: threading.Event | None = None,
              decode: bool = True) -> dict[str, Any] | None:
        """Patch with ``patch_type`` "merge" (RFC 7386), "json" (RFC 6902, a list of operations), "strategic"
        (built-in kinds only) or "apply" (server-side apply; needs ``field_manager``). The patched object, or
        None with ``decode`` False (see :meth:`request`)."""
        content_type = PATCH_CONTENT_TYPES.get(patch_type)
        if content_type is None:
            raise ValueError(f"unknown patch type {patch_type!r}: one of {', '.join(PATCH_CONTENT_TYPES)}")
        if patch_type == "json" and not isinstance(patch, list):
            raise ValueError("a JSON patch is a list of operations")
        if patch_type != "json" and not isinstance(patch, Mapping):
            raise ValueError(f"a {patch_type} patch is an object")
        if patch_type == "apply" and not field_manager:
            raise ValueError("server-side apply needs a field_manager")
        query = dict(_write_query(dry_run, field_manager))
        if force is not None:
            query["force"] = force
        path = resource.path(_ns(resource, namespace), name, subresource)
        body = list(patch) if isinstance(patch, list) else dict(patch)
        return self.request("PATCH", path, query=query, body=body, content_type=content_type, timeout=timeout,
                            deadline=deadline, cancel=cancel, decode=decode)

    def delete(self, resource: Resource, name: str, namespace: str | None = None, *,
               propagation_policy: str | None = None, precondition_uid: str | None = None,
               precondition_resource_version: str | None = None, grace_period_seconds: int | None = None,
               dry_run: bool = False, timeout: float | None = None, deadline: float | None = None,
               cancel: threading.Event | None = None) -> dict[str, Any]:
        """Delete with DeleteOptions; returns what the server answers (the object, or a Success Status).

        Preconditions make it conditional: 409 Conflict if the object's uid or resourceVersion differs (e.g. the
        pod was deleted and recreated under the same name meanwhile).
        """
        opts = _delete_options(propagation_policy, grace_period_seconds, dry_run)
        pre = {k: v for k, v in (("uid", precondition_uid), ("resourceVersion", precondition_resource_version))
               if v is not None}
        if pre:
            opts["preconditions"] = pre
        return self.request("DELETE", resource.path(_ns(resource, namespace), name), body=opts, timeout=timeout,
                            deadline=deadline, cancel=cancel)


def _ssl_context(config: ClientConfig) -> Any:
    """A new ``ssl.SSLContext`` of the client's TLS settings (None for a plain-HTTP server): the configured client
    certificate, else the one a credential plugin gives (one file holding it and its key, replaced whole when the
    plugin gives another; see ``Client._check_certificate``)."""
    if not config.host.startswith("https:"):
        return None
    cert_file, key_file = config.client_cert_file, config.client_key_file
    if not cert_file and isinstance(config.token, RefreshableToken):
        try:
            cert_file = key_file = config.token.client_certificate()
        except CredentialError as e:   # a request will run the plugin again and raise this to its caller
            log.warning("%s", e)
    return client_ssl_context(config.verify_tls, config.ca_file, cert_file, key_file)


def _pool_manager(config: ClientConfig) -> urllib3.PoolManager:
    """The pool manager of watches, streams and proxied requests: urllib3's public API, given a context of its own
    (it changes the one it is given). Left to urllib3's retries: connections that could not be established, where
    nothing reached the server; not 413/429/503 answers carrying Retry-After (below our retry policy and rate
    limiter), nor reads that timed out (that would double every timeout)."""
    retries = urllib3.Retry(total=3, connect=3, read=0, redirect=0, status=0, other=0,
                            respect_retry_after_header=False, raise_on_status=False)
    options: dict[str, Any] = {"num_pools": 4, "maxsize": config.max_connections, "retries": retries}
    context = _ssl_context(config)
    if context is not None:
        options["ssl_context"] = context
        options["cert_reqs"] = "CERT_REQUIRED" if config.verify_tls else "CERT_NONE"
        if config.tls_server_name:
            options["server_hostname"] = config.tls_server_name
    if config.proxy_url:
        return urllib3.ProxyManager(config.proxy_url, **options)
    return urllib3.PoolManager(**options)


def _ns(resource: Resource, namespace: str | None, obj: Mapping[str, Any] | None = None,
        allow_all: bool = False) -> str | None:
    """The namespace a request targets: None for cluster-scoped resources (and "all" where allowed)."""
    if not resource.namespaced:
        return None
    ns = namespace or ((obj.get("metadata") or {}).get("namespace") if obj is not None else None)
    if not ns and not allow_all:
        raise ValueError(f"{resource.qualified} is namespaced: give a namespace")
    return ns or None


class _RefusedError(Exception):
    """A non-2xx answer, inside :meth:`Client._send`: turned into its typed error (and maybe retried) there."""

    def __init__(self, status: int, body: bytes, headers: Mapping[str, str]) -> None:
        self.status, self.body, self.headers = status, body, headers


def _encode_body(body: Any) -> bytes | None:
    """A request body as sent: bytes and text as they are, anything else as compact JSON (the official transport
    wrote ``json.dumps`` with spaces: 5-10% more bytes for the server to read)."""
    if body is None or isinstance(body, bytes):
        return body
    if isinstance(body, str):
        return body.encode()
    return json.dumps(body, separators=(",", ":")).encode()


def _query_params(query: Query | None) -> list[tuple[str, str]]:
    out: list[tuple[str, str]] = []
    for key, value in (query or {}).items():
        if value is None:
            continue
        out.append((key, ("true" if value else "false") if isinstance(value, bool) else str(value)))
    return out


def _write_query(dry_run: bool, field_manager: str | None) -> dict[str, Any]:
    return {"dryRun": "All" if dry_run else None, "fieldManager": field_manager}


def _delete_options(policy: str | None, grace: int | None, dry_run: bool) -> dict[str, Any]:
    opts: dict[str, Any] = {"kind": "DeleteOptions", "apiVersion": "v1"}
    if policy is not None:
        if policy not in PROPAGATION_POLICIES:
            raise ValueError(f"propagation policy {policy!r}: one of {', '.join(PROPAGATION_POLICIES)}")
        opts["propagationPolicy"] = policy
    if grace is not None:
        opts["gracePeriodSeconds"] = grace
    if dry_run:
        opts["dryRun"] = ["All"]
    return opts


def _retry_wait(err: ApiError) -> float | None:
    """Seconds to wait before retrying, when the server asked for a retry (client-go's ``checkWait``: a 429 or
    5xx with a ``Retry-After`` header in whole seconds)."""
    if err.code != 429 and err.code < 500:
        return None
    header = err.headers.get("retry-after", "").strip()
    return float(header) if header.isdigit() else None

"""What a Service's name resolves to in the values the kubelet rewrites (``container_env.rewrite_service_hosts``),
remembered across container starts.

    names = ServiceNames(services_informer.store, pod_addresses)
    services_informer.add_handler(names.changed, lambda _old, new: names.changed(new), names.changed)
    env = container_env(..., service_address=names.address)

Why: every start of a 1,000-replica MXJob's pods resolves the ~1,000 peer names of its ``MX_CONFIG``; resolved
afresh per start (a copy of the Services cache each, then a lookup per name) that was pods-times-peers work, about a
million lookups for the job and the largest share of the pod workers' CPU (issue 48). What a name resolves to
depends only on whether its Service exists and has a selector (a name's address never changes once given,
``addresses.py``), so an answer is kept until that Service changes.

Guarantees: an answer is never older than the Services cache as of the lookup that made it and the next watch
event of that Service: the informer's handler forgets the Service's answers after each of its events, and a lookup
that raced with an event (the event counted between its read of the cache and its keeping the answer) does not
keep it. The handler runs inline on the informer's own thread, as each event changes the cache (so only that
thread writes the event counts).

Whole names too (:meth:`ServiceNames.hosts`, for ``rewrite_service_hosts``): what each host name of a pod's values
became in a namespace, kept until the next event of the Service it names (a start of a 1,000-replica job's pods
then looks up its ~1,000 peer names in C, not one call each: about a millisecond of CPU per start, issue 48; the
job's Services are created while its pods start, so forgetting them all at any Service's event kept none). A name
whose Service had an event while it was resolved is not kept.
"""

from __future__ import annotations

import itertools
import threading
from collections import deque
from collections.abc import Mapping
from typing import Any

from mxjob_controller.local.kubelet.addresses import LOCAL_IP, PodAddresses
from mxjob_controller.runtime.cache_keys import DeletedFinalStateUnknown
from mxjob_controller.runtime.cache_store import Indexer

_HOSTS_KEPT = 1 << 16   # whole host names kept at most
_RECENT = 4096          # the last Services' events remembered: a resolution that saw more keeps nothing


class ServiceNames:
    def __init__(self, services: Indexer, addresses: PodAddresses) -> None:
        self._services = services
        self._addresses = addresses
        self._answers: dict[tuple[str, str, bool], str | None] = {}   # (namespace, name, qualified) → address
        self._events: dict[str, int] = {}                              # "ns/name" → its Service's events seen
        self._lock = threading.Lock()        # the whole names' tables, who depends on what, the events' log
        self._hosts: dict[str, dict[str, str]] = {}   # pod namespace → {host name as written → what it becomes}
        self._kept = 0
        self._depends: dict[str, list[tuple[str, str]]] = {}   # "ns/name" → (pod namespace, host) naming it
        self._all_events = 0
        self._recent: deque[str] = deque(maxlen=_RECENT)       # "ns/name" of the last events, oldest first

    def address(self, namespace: str, name: str, qualified: bool) -> str | None:
        """A :data:`container_env.ServiceAddress`: the address the Service ``namespace/name`` resolves to (that of
        its name when it has a selector, 127.0.0.1 without), None without such a Service unless ``qualified`` (a
        name in the Services' DNS form resolves to its name's address before its Service exists)."""
        answer_key = (namespace, name, qualified)
        try:
            return self._answers[answer_key]
        except KeyError:
            pass
        key = f"{namespace}/{name}"
        seen = self._events.get(key, 0)
        service = self._services.get(key)
        if service is None:
            found = self._addresses.address(namespace, name) if qualified else None
        else:
            found = self._addresses.address(namespace, name) if (service.get("spec") or {}).get("selector") \
                else LOCAL_IP
        self._answers[answer_key] = found
        if self._events.get(key, 0) != seen:   # the Service changed meanwhile: answer this once, keep nothing
            self._answers.pop(answer_key, None)
        return found

    def hosts(self, namespace: str) -> tuple[Mapping[str, str], int]:
        """(what host names in the values of ``namespace``'s pods became, as kept; the count of events it is as of):
        give that count back to :meth:`keep_hosts` with the names resolved when one was missing."""
        with self._lock:
            return self._hosts.get(namespace) or {}, self._all_events

    def keep_hosts(self, namespace: str, found: Mapping[str, str],
                   services: Mapping[str, tuple[str, str, bool] | None], as_of: int) -> None:
        """Keep what ``found``'s host names became (``services``: the (namespace, name, qualified) each names, None
        for no Service), but those whose Service had an event since ``as_of``."""
        with self._lock:
            since = self._all_events - as_of
            if since > len(self._recent):
                return   # more events than remembered: which Services changed is not known
            changed = set(itertools.islice(reversed(self._recent), since))
            if self._kept + len(found) > _HOSTS_KEPT:   # a bound: values full of names that are no Service's
                self._hosts, self._depends, self._kept = {}, {}, 0
            table = self._hosts.setdefault(namespace, {})
            for host, answer in found.items():
                if host in table:
                    continue   # kept, and no event of its Service since (that would have taken it out)
                named = services.get(host)
                if named is not None:
                    key = f"{named[0]}/{named[1]}"
                    if key in changed:
                        continue
                    self._depends.setdefault(key, []).append((namespace, host))
                table[host] = answer
                self._kept += 1

    def changed(self, service: dict[str, Any] | DeletedFinalStateUnknown) -> None:
        """The Services informer's handler (add, update and delete): forget what this Service's name resolved to."""
        obj = service.obj if isinstance(service, DeletedFinalStateUnknown) else service
        meta = obj.get("metadata") or {}
        namespace, name = meta.get("namespace") or "", meta.get("name") or ""
        key = f"{namespace}/{name}"
        with self._lock:   # whole names naming it (a start that read them before this reads them as of before it)
            self._all_events += 1
            self._recent.append(key)
            for host_namespace, host in self._depends.pop(key, ()):
                if self._hosts.get(host_namespace, {}).pop(host, None) is not None:
                    self._kept -= 1
        self._events[key] = self._events.get(key, 0) + 1   # first: a lookup in flight then keeps nothing
        self._answers.pop((namespace, name, True), None)
        self._answers.pop((namespace, name, False), None)

    def __len__(self) -> int:
        """How many answers are kept (tests)."""
        return len(self._answers)

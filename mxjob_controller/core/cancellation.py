"""Stop a deleted job's child creates at their last moment: the cancel event of each pass under way, set by the job
informer's handler as soon as it sees the job deleted, replaced, or given a ``deletionTimestamp``.

Why an event and not only the cache: a pass checks its job in the cache before each slow-start batch and before
each create, but a create that passed that check may still wait in the API client, for a rate-limiter token (a
batch of 32 reserves tokens up to 1.6 s ahead at 20 requests/s) or for the server's ``Retry-After`` after a 429 or
a 5xx (a second and more, several times). Checked only before those waits, a 500-replica job's creates went on for
2 s after its deletion (issue 48). The client ends each of its waits when the caller's ``cancel`` event is set, and
sends no attempt whose event is set by then (``runtime/client/api.py``); this is where a pass's event comes from.

How it is kept: the reconciler asks for its pass's event (:meth:`Cancellations.event`, keyed by job key and UID)
when it builds its slice of writes, and lets go of it when the pass ends (:meth:`Cancellations.release`; one key
is never on two workers at once). The handlers (``core/handlers.py``: ``JobHandlers``) call
:meth:`Cancellations.cancel`, inline on the informer's thread right after its store changed, so the writes stop
before the work queue gets to the key. A cancel with no pass under way does nothing: the next pass reads the
changed store anyway. No event outlives its pass, so 10,000 finished jobs hold none.

Race-free without a lock across the two: the handler runs after the store update, and a pass looks at the store
after it took its event (``reconciler.pass_slice``): either the handler finds the event and sets it, or the pass
finds the change in the store (and sets its event itself).
"""

from __future__ import annotations

import threading


class Cancellations:
    """The cancel events of the passes under way, by job key; thread-safe (passes run on the workers, cancels come
    from the informers' threads)."""

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self._events: dict[str, tuple[str, threading.Event]] = {}

    def event(self, key: str, uid: str) -> threading.Event:
        """The cancel event of the pass over job ``key`` with ``uid``: the one it holds already, or a new one (also
        when the key's event was another job's of the same name)."""
        with self._lock:
            held = self._events.get(key)
            if held is None or held[0] != uid:
                held = (uid, threading.Event())
                self._events[key] = held
            return held[1]

    def cancel(self, key: str, uid: str | None = None) -> bool:
        """Cancel the writes of the pass over job ``key`` (only if it is the job with ``uid``, when given); whether
        a pass was under way."""
        with self._lock:
            held = self._events.get(key)
        if held is None or (uid is not None and held[0] != uid):
            return False
        held[1].set()
        return True

    def release(self, key: str) -> None:
        """The pass over ``key`` ended: its event is let go (a write it left on the pool keeps its own reference)."""
        with self._lock:
            self._events.pop(key, None)

    def __len__(self) -> int:
        with self._lock:
            return len(self._events)

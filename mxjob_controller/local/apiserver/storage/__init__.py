"""The embedded API server's storage: what etcd and kube-apiserver's watch cache are to kube.

Guarantees:

- One global ``resourceVersion``, strictly increasing; compare-and-swap writes, so concurrent updates conflict
  instead of overwriting (``store.py``).
- Watches see every event of a key in order, none skipped; a watcher that falls behind is closed, never allowed
  to block a writer, and resumes from the last version it saw; history is bounded by count, bytes and age, and a
  resume older than it is 410 ``Expired`` (``watch.py``, ``store.py``).
- Lists honour ``resourceVersion``/``resourceVersionMatch`` as kube reads them (``list_options.py``).
- Freed memory goes back to the system after large deletions (``memory.py``).

Nothing here knows HTTP, users or API semantics beyond keys and versions.
"""

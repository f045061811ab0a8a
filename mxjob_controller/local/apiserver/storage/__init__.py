"""The embedded API server's storage: what etcd and kube-apiserver's watch cache are to kube.

Guarantees:

- One global ``resourceVersion``, strictly increasing; compare-and-swap writes, so concurrent updates conflict
  instead of overwriting (``store.py``).
- Watches see every event of a key in order, none skipped; a watcher that falls behind (by events, or by the
  bytes of its backlog) is closed, never allowed to block a writer or hold memory, and resumes from the last
  version it saw; history is bounded by count, bytes and age, and a resume older than it is 410 ``Expired``; the
  encodings watchers share are made once per object version and form (``watch.py``, ``store.py``).
- No object is stored whose encoding passes etcd's 1.5 MiB request limit (``store.py``).
- Lists honour ``resourceVersion``/``resourceVersionMatch`` as kube reads them (``list_options.py``).
- Freed memory goes back to the system after large deletions (``memory.py``).

Nothing here knows HTTP, users or API semantics beyond keys and versions.
"""

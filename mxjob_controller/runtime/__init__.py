"""Generic controller machinery, nothing framework-specific: what client-go and controller-runtime are to a Go operator.

Guarantees (each module states its own in full):

- API access through one thread-safe client per process (``client/``): plain dicts in and out, typed errors, the
  server's flow-control budget honoured, every call bounded by a deadline.
- Informers (``informer*.py``, ``cache_*.py``) converge to the server's state: list then watch, resumed from the last
  version seen, relisted when the server has forgotten it; the store is changed only by the reflector's thread, and
  every handler sees each add, update and delete in order.
- Work queues (``workqueue/``) with client-go's semantics: a key is never processed by two workers at once, a key
  added while processed is processed again afterwards, failures retried with per-item exponential backoff.
- Expectations (``expectations.py``) gate a reconcile until the cache has seen the writes it made, so a lagging cache
  never causes duplicate children.
- Events (``events.py``, ``event_correlator.py``, ``event_sink.py``) as client-go's recorder writes them, correlated
  and rate-limited as it does, queued and written by their own threads; leader election on a Lease
  (``leaderelection.py``); the operator's HTTP endpoints (``endpoints.py``: metrics, health) and controller metrics
  with controller-runtime's names.

Every thread here is named and stops within its join timeout; nothing imports the job-controller core above it.
"""

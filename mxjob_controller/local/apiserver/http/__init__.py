"""The embedded API server's HTTP edge: everything between the socket and a parsed request.

Guarantees (each module states its own in full):

- Framing is Go ``net/http``'s for kube-apiserver (``connection.py``): what Go refuses (malformed request lines,
  oversized headers, smuggling-prone ``Content-Length``/``Transfer-Encoding``) is refused with a ``Status``, and a
  refused client's body is never read.
- Every wait is bounded: an absolute header deadline, a body deadline, an idle timeout, and kube's
  ``--request-timeout`` 504 for a handler that runs late (``deadlines.py``); the accept loop caps connections and
  drains them on shutdown (``server.py``).
- Fairness before work: API Priority and Fairness classifies each request after authentication and answers 429
  past a level's share (``flowcontrol.py``); long-running requests, which take no seat, are bounded per user (the
  cluster's own and ``system:masters`` exempt), and at the connection cap the heaviest user's oldest one gives
  way, so the administrator always gets in (``server.py``).
- A watch event's object is sent as its one shared encoding, never copied per watcher (``connection.py``).
- Every answered request is observable: one audit record (``audit.py``), the server's metrics and health checks
  (``observability.py``); faults are injected only where a test or ``--fault`` asks (``faults.py``).

Nothing here knows an API kind: requests leave as :class:`~mxjob_controller.local.apiserver.request.Exchange` for
the router, and answers come back as :class:`~mxjob_controller.local.apiserver.request.Response`.
"""

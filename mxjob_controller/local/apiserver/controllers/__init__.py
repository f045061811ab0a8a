"""The controllers that run inside the embedded API server, standing in for kube-controller-manager's.

Guarantees:

- Garbage collection follows ``ownerReferences`` with background, foreground and orphan propagation
  (``gc.py``); a deleted namespace is emptied and its finalizer removed as kube's namespace controller does
  (``namespace.py``); every namespace gets its ``default`` ServiceAccount and ``kube-root-ca.crt``
  (``namespace_content.py``); ``--token-dir`` tokens stay valid (``token_dirs.py``).
- Each is event-driven over the store's commits and drains one rate-limited work queue on one named thread
  (``workqueue.py``: client-go's semantics, plus parking), so nothing polls while nothing changes, and each stops
  within its join timeout.

They write through the server's own REST verbs, as kube's controllers write through the API.
"""

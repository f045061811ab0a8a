"""The embedded cluster: an in-memory Kubernetes API server, a local kubelet, and the glue to run them.

Nothing here is used by the controller at run time; the controller only ever talks HTTP to whatever
API server its kubeconfig names, and this package provides one that runs on a single machine.
"""

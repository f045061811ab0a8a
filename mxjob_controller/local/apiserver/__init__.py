"""An in-memory Kubernetes API server that behaves like kube-apiserver for what controllers and kubectl use.

Public surface: :class:`APIServer` and :class:`ServerOptions`; everything else is internal.
"""

from mxjob_controller.local.apiserver.server import APIServer, ServerOptions

__all__ = ["APIServer", "ServerOptions"]

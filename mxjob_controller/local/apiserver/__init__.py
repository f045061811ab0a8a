"""An in-memory Kubernetes API server that behaves like kube-apiserver for what controllers and kubectl use.

Public surface: ``server.py``'s :class:`APIServer` and :class:`ServerOptions`; everything else is internal. This
``__init__`` re-exports nothing, so that the modules inside import their siblings as modules (``from
mxjob_controller.local.apiserver import errors``) without a circle through ``server.py``.
"""

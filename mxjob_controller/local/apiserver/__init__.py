"""An in-memory Kubernetes API server that behaves like kube-apiserver for what controllers and kubectl use.

Public surface: ``server.py``'s :class:`APIServer` and :class:`ServerOptions`; everything else is internal. This
``__init__`` re-exports nothing, so that the modules inside import their siblings as modules (``from
mxjob_controller.local.apiserver import errors``) without a circle through ``server.py``.

A request's way through, each step a module or package named for it:

- ``http/``: the socket, framing, deadlines, flow control, audit and metrics; a request leaves it as an
  ``Exchange`` (``request.py``);
- ``auth/``: authentication, impersonation, RBAC and the admission that needs the user;
- ``router.py``: the URL to a resource type and verb (or discovery, OpenAPI, health), ``encoding/`` for protobuf
  and tables;
- ``rest.py``: the verb, called by name (``verbs/``: read, write, deletion), each kind's rules in ``kinds/`` over
  ``strategy.py``, validation in ``validation/``, patches and field ownership in ``patch/``, webhooks in
  ``webhooks/``;
- ``storage/``: the versioned store and its watches;
- ``controllers/``: what kube-controller-manager would do with the result (garbage collection, namespaces).

``server.py`` assembles them; ``errors.py`` holds the ``Status`` answers every layer raises; ``resources.py`` the
resource types.
"""

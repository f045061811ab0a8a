"""Authentication, authorization and TLS of the embedded API server (``security.py`` assembles them), and the
admission plugins that judge a write by who makes it or what it runs: ``admission.py`` (owner references),
``pod_security*.py`` (kube's PodSecurity: the standards, their registry, the namespace labels, the plugin, its
configuration file).

Guarantees: in kube-apiserver's order, a request is authenticated (``tokens.py``; no token is
``system:anonymous``), impersonated where it asks and may (``impersonation.py``), and authorized by RBAC over the
server's own roles (``rbac.py``, ``authorizer.py``) before its body is read; a refusal is kube's 401 or 403 with
kube's message. The self-reviews (``reviews.py``) answer with the same authorizer the requests meet.

Re-exports nothing, so that the modules inside import their siblings as modules without a circle.
"""

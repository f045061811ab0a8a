"""Authentication, authorization and TLS of the embedded API server (``security.py`` assembles them), and the
admission plugins that judge a write by who makes it or what it runs: ``admission.py`` (owner references),
``pod_security*.py`` (kube's PodSecurity: the standards, their registry, the namespace labels, the plugin, its
configuration file).

Re-exports nothing, so that the modules inside import their siblings as modules without a circle.
"""

"""Admission and conversion webhooks, called as kube-apiserver 1.32 calls them, so that a real webhook server (HTTPS,
its own CA) can be exercised against the embedded API server end to end.

- ``config.py``: the ``admissionregistration.k8s.io/v1`` ValidatingWebhookConfiguration kind (defaults, validation,
  ``kubectl get`` columns) and its parsed form;
- ``dispatch.py``: which webhooks a create, update or delete reaches, the ``AdmissionReview`` they get, and what their
  answer (or their silence) does to the request;
- ``conversion.py``: a CRD's ``spec.conversion`` (validation, defaults) and the ``ConversionReview`` calls that move
  custom resources between versions;
- ``client.py``: the HTTPS call itself (trust, timeouts, Service resolution, Go's error texts);
- ``attributes.py``: the record the REST layer hands to admission.

What whoever runs the server sets: ``APIServer.service_resolver`` (``(namespace, name, port) -> "host:port"``), where
a ``clientConfig.service`` is reached, since this server has no cluster network; and ``APIServer.conversion_timeout``
(kube's 30 s by default). A webhook configured with ``clientConfig.url`` needs neither.
"""

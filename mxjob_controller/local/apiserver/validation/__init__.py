"""Validation of objects written to the embedded API server.

- ``meta``: ObjectMeta as ``ValidateObjectMeta`` checks it (names per kind, labels, annotations, finalizers,
  owner references).
- ``schemas``: the schema hook (``REST.schema_validator``): built-in kinds against Kubernetes' schema plus the
  rules of its Go validation, custom resources against their CRD's structural schema (defaults, pruning).
  The compiler and the rules are shared with the MXJob API, in ``kube.schema``.
- ``field_validation``: what ``fieldValidation=Strict|Warn|Ignore`` does with unknown and duplicate fields.
- ``strict_json``: JSON bodies decoded with their duplicate fields found (and named by path).
- ``yaml_body``: YAML bodies decoded into JSON data as kube does (timestamps stay strings).
"""

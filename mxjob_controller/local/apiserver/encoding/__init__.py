"""How the embedded API server writes and reads what is on the wire besides plain JSON, and the documents that
describe what it serves.

Guarantees:

- Protobuf (``kubeproto.py``, from the field tables generated from Kubernetes' own ``generated.proto``:
  ``kubeproto_tables.py``) decodes and encodes the built-in kinds, their lists and the review messages with Go's
  JSON mapping, so a typed client-go request round-trips exactly.
- Tables (``tables.py``, ``printers.py`` and ``more_printers.py``, ``jsonpath.py``) give the columns and cells
  kube-apiserver's printers give ``kubectl get``, as pure functions of the object and the time; ``gofmt.py`` prints
  values as Go's ``fmt``.
- Discovery and OpenAPI v2/v3 (``discovery.py``, ``openapi.py``, ``openapi_v2.py``; ``openapi_v3.py`` serves a v3
  document as kube-openapi's handler3 does, in JSON or gnostic's protobuf, ``openapi_v3_proto.py``) describe exactly
  the kinds and versions being served, rebuilt as CRDs come and go.

Nothing here stores or authorizes: these are functions of objects and resource types.
"""

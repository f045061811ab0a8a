"""Kubernetes knowledge shared by the embedded API server, the controller runtime and the MXJob API.

Pure functions over plain dicts and strings: no I/O, no threads, nothing MXNet-specific. What only the API
server needs (managed fields, printers, JSON path, JSON patch and strategic merge patch) lives under
``local/apiserver/``.
"""

"""Kubernetes knowledge shared by the embedded API server, the controller runtime and the MXJob API.

Pure functions over plain dicts and strings: no I/O, no threads, nothing MXNet-specific.
"""

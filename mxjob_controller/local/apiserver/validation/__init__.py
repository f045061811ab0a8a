"""Validation of objects written to the embedded API server.

``meta`` checks ObjectMeta as ``ValidateObjectMeta`` does (names per kind, labels, annotations,
finalizers, owner references). Schema validation of built-in and custom kinds plugs in beside it.
"""

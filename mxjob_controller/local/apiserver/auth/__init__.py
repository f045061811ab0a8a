"""Authentication, authorization and TLS of the embedded API server (``security.py`` assembles them).

Re-exports nothing, so that the modules inside import their siblings as modules without a circle.
"""

"""Patch formats Kubernetes speaks: JSON merge patch (RFC 7386), JSON patch (RFC 6902), strategic merge."""

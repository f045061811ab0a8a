"""Kubeconfig documents for the client's configuration tests."""

from __future__ import annotations


def kubeconfig_doc(server: str, namespace: str | None = None, ca: str | None = None, insecure: bool = False,
                   user: dict | None = None) -> dict:
    """A kubeconfig of one cluster, user and context (``ctx``, current)."""
    cluster: dict = {"server": server}
    if ca:
        cluster["certificate-authority"] = ca
    if insecure:
        cluster["insecure-skip-tls-verify"] = True
    context: dict = {"cluster": "c", "user": "u"}
    if namespace:
        context["namespace"] = namespace
    return {"apiVersion": "v1", "kind": "Config", "current-context": "ctx",
            "clusters": [{"name": "c", "cluster": cluster}], "users": [{"name": "u", "user": user or {}}],
            "contexts": [{"name": "ctx", "context": context}]}

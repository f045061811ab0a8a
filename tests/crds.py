"""CRDs used by the API server's own tests (not the project's MXJob CRD)."""

from __future__ import annotations

import copy


def widget_crd(versions: tuple[str, ...] = ("v1",), storage: str = "v1", status: bool = True,
               scope: str = "Namespaced") -> dict:
    """A small namespaced CRD with a status subresource and printer columns."""
    schema = {"openAPIV3Schema": {
        "type": "object",
        "properties": {
            "spec": {"type": "object", "properties": {
                "size": {"type": "integer"}, "color": {"type": "string"},
                "parts": {"type": "array", "items": {"type": "string"}}}},
            "status": {"type": "object", "x-kubernetes-preserve-unknown-fields": True},
        }}}
    return {
        "apiVersion": "apiextensions.k8s.io/v1", "kind": "CustomResourceDefinition",
        "metadata": {"name": "widgets.example.com"},
        "spec": {
            "group": "example.com", "scope": scope,
            "names": {"plural": "widgets", "singular": "widget", "kind": "Widget", "shortNames": ["wg"],
                      "categories": ["all"]},
            "versions": [{
                "name": v, "served": True, "storage": v == storage, "schema": copy.deepcopy(schema),
                "subresources": {"status": {}} if status else {},
                "additionalPrinterColumns": [{"name": "Size", "type": "integer", "jsonPath": ".spec.size"}],
            } for v in versions],
        },
    }


def widget(name: str, size: int = 1, namespace: str = "default", version: str = "v1", **meta) -> dict:
    return {"apiVersion": f"example.com/{version}", "kind": "Widget",
            "metadata": {"name": name, "namespace": namespace, **meta}, "spec": {"size": size}}


WIDGETS = "/apis/example.com/v1/namespaces/default/widgets"

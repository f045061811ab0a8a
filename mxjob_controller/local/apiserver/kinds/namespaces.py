"""Namespaces: the ``kubernetes`` finalizer, the Active phase and the metadata.name label."""

from __future__ import annotations

from mxjob_controller.local.apiserver.strategy import Strategy, WriteContext

NAME_LABEL = "kubernetes.io/metadata.name"


class NamespaceStrategy(Strategy):
    def prepare_create(self, obj: dict, ctx: WriteContext) -> None:
        super().prepare_create(obj, ctx)
        # A name generated just now (generateName) gets its label here, as kube's Canonicalize gives it: after the
        # field manager, so nobody owns it. A name the client gave was labelled while defaulting (default below).
        self.default(obj, ctx)
        obj["spec"] = {"finalizers": ["kubernetes"]}
        obj["status"] = {"phase": "Active"}

    def prepare_update(self, new: dict, old: dict, ctx: WriteContext) -> None:
        """``spec.finalizers`` change only through the ``finalize`` subresource (kube's FinalizeStrategy)."""
        super().prepare_update(new, old, ctx)
        if ctx.subresource is None:
            spec = new.get("spec")
            if not isinstance(spec, dict):
                spec = new["spec"] = {}
            old_finalizers = (old.get("spec") or {}).get("finalizers")
            if old_finalizers is None:
                spec.pop("finalizers", None)
            else:
                spec["finalizers"] = list(old_finalizers)

    def default(self, obj: dict, ctx: WriteContext) -> None:
        meta = obj.setdefault("metadata", {})
        if meta.get("name"):
            labels = meta.get("labels")
            if not isinstance(labels, dict):
                labels = meta["labels"] = {}
            labels[NAME_LABEL] = meta["name"]

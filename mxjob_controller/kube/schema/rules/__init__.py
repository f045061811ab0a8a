"""Checks the schema cannot express, attached to built-in definitions by name: kube's Go validation.

A rule is ``(value, path) -> list[FieldError]`` for one object of a definition (``io.k8s.api.core.v1.PodSpec``
at ``spec``, or at ``spec.template.spec`` inside a Deployment, or wherever a caller validates one). The
compiler attaches a definition's rules to its node, so every object of that definition gets them however
deeply it is nested: the API server and :func:`kube.schema.validate_definition` apply the same set.

Rules mirror kube-apiserver's ``pkg/apis/core/validation`` (paths and messages); there is one module per
concern. They run only on objects whose types the schema walk found sound, and they accept an absent field
that a server defaults (``restartPolicy``, ``protocol``...), so they also suit templates nobody defaulted.
"""

from __future__ import annotations

import importlib
import threading
from collections.abc import Callable

from mxjob_controller.kube.schema.nodes import Rule

#: The rule modules, imported (so registered) before any built-in definition is compiled.
RULE_MODULES = ("containers", "pods", "services", "configmaps", "deployments", "leases", "storage",
                "workloads")

_RULES: dict[str, list[Rule]] = {}
_loaded = False
_load_lock = threading.Lock()


def rule(*definitions: str) -> Callable[[Rule], Rule]:
    """Register the decorated function as a rule of each named definition."""
    def register(fn: Rule) -> Rule:
        for name in definitions:
            _RULES.setdefault(name, []).append(fn)
        return fn
    return register


def rules_for(definition: str) -> tuple[Rule, ...]:
    return tuple(_RULES.get(definition, ()))


def load() -> None:
    """Import the rule modules once."""
    global _loaded
    if _loaded:
        return
    with _load_lock:
        if not _loaded:
            for module in RULE_MODULES:
                importlib.import_module(f"{__name__}.{module}")
            _loaded = True

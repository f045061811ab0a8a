"""A compiled schema ready to apply to objects, and what applying it found."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from mxjob_controller.kube.field_errors import FieldError, child, child_prefix
from mxjob_controller.kube.schema.nodes import Node, Walk


@dataclass(slots=True)
class Result:
    errors: list[FieldError] = field(default_factory=list)
    unknown: list[str] = field(default_factory=list)  # paths of unknown fields (``spec.foo``)


class CompiledSchema:
    """One schema's root node. Immutable and shared between threads; ``apply`` keeps no state."""

    __slots__ = ("root", "sort_unknown")

    def __init__(self, root: Node, sort_unknown: bool = False) -> None:
        self.root = root
        self.sort_unknown = sort_unknown  # CRDs report pruned fields sorted, after metadata's

    def apply(self, value: Any, path: str = "", *, prune: bool = False, defaults: bool = False,
              rules: bool = True) -> Result:
        """Check ``value`` (and with ``prune``/``defaults``, change it in place as kube-apiserver would).

        Rules run only when no value had the wrong type; errors come without duplicates, schema errors first.
        """
        w = Walk(prune=prune, defaults=defaults, rules=rules)
        self.root.walk(value, path, w)
        if not w.malformed:
            w.run_rules()
        unknown = w.unknown
        if self.sort_unknown:
            prefix = child_prefix(child(path, "metadata"))
            meta = [p for p in unknown if p.startswith(prefix)]
            unknown = meta + sorted(p for p in unknown if not p.startswith(prefix))
        return Result(dedupe(w.errors), unknown)


def dedupe(errors: list[FieldError]) -> list[FieldError]:
    if len(errors) < 2:
        return errors
    return list(dict.fromkeys(errors))

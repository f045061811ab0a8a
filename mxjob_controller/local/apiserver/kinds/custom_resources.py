"""Custom resources: the rules every kind shares, plus their CRD's transition rules on update.

This is the server's default strategy: built-in kinds without a strategy of their own use it too, and for them
(no CRD schema) it is the base :class:`Strategy`. Transition rules are compiled once per served CRD version (a
CRD update serves new resource types, so a compiled set never goes stale).
"""

from __future__ import annotations

import threading
import weakref

from mxjob_controller.local.apiserver.errors import Cause
from mxjob_controller.local.apiserver.resources import ResourceType
from mxjob_controller.local.apiserver.strategy import Strategy, WriteContext
from mxjob_controller.local.apiserver.validation.transition_rules import TransitionRule, check, compile_rules


class CustomResourceStrategy(Strategy):
    def __init__(self) -> None:
        self._lock = threading.Lock()
        self._rules: weakref.WeakKeyDictionary[ResourceType, tuple[TransitionRule, ...]] = \
            weakref.WeakKeyDictionary()
        self._last: tuple[ResourceType, tuple[TransitionRule, ...]] | None = None

    def rules_for(self, rt: ResourceType) -> tuple[TransitionRule, ...]:
        last = self._last   # the kind asked for last (a controller writes one kind): no lock, no weak reference
        if last is not None and last[0] is rt:
            return last[1]
        with self._lock:
            rules = self._rules.get(rt)
            if rules is None:
                rules = self._rules[rt] = compile_rules(rt.schema, f"{rt.plural}.{rt.group}/{rt.version}")
            self._last = (rt, rules)
            return rules

    def validate(self, obj: dict, old: dict | None, ctx: WriteContext) -> list[Cause]:
        causes = super().validate(obj, old, ctx)
        if old is not None and ctx.rt.is_custom and ctx.rt.schema:
            causes.extend(check(self.rules_for(ctx.rt), obj, old))
        return causes

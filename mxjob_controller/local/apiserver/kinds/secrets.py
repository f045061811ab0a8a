"""Secrets: ``stringData`` is write-only and ``type`` defaults to ``Opaque``, as kube-apiserver stores them.

kube merges ``stringData`` into ``data`` when it decodes a write (a ``stringData`` key wins over the same
``data`` key) and never stores or returns ``stringData`` itself; ``kubectl apply`` of a Secret written
with ``stringData`` depends on that.
"""

from __future__ import annotations

import base64

from mxjob_controller.local.apiserver.strategy import Strategy, WriteContext


class SecretStrategy(Strategy):
    def default(self, obj: dict, ctx: WriteContext) -> None:
        if not obj.get("type"):
            obj["type"] = "Opaque"
        string_data = obj.pop("stringData", None)
        if isinstance(string_data, dict) and string_data:
            data = obj.get("data")
            if not isinstance(data, dict):
                data = obj["data"] = {}
            for key, value in string_data.items():
                if isinstance(value, str):
                    data[key] = base64.b64encode(value.encode()).decode()

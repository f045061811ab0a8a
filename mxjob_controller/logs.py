"""One logging setup for the whole process: JSON lines (the default, as upstream) or readable text.

Structured context (job namespace/name/uid, replica type/index) travels in ``extra=`` and appears as
fields of the JSON line. Nothing here ever formats credentials: kubeconfig contents and tokens are not
logged anywhere in the project.
"""

from __future__ import annotations

import json
import logging
import sys
import time
from typing import Any

CONTEXT_FIELDS = ("job_namespace", "job_name", "job_uid", "replica_type", "replica_index", "key",
                  "controller", "thread_name")


class JSONFormatter(logging.Formatter):
    def format(self, record: logging.LogRecord) -> str:
        out: dict[str, Any] = {
            "ts": time.strftime("%Y-%m-%dT%H:%M:%S", time.gmtime(record.created))
            + f".{int(record.msecs):03d}Z",
            "level": record.levelname.lower(),
            "logger": record.name,
            "msg": record.getMessage(),
        }
        for field in CONTEXT_FIELDS:
            value = record.__dict__.get(field)
            if value is not None and field != "thread_name":
                out[field] = value
        out["thread"] = record.threadName
        if record.exc_info:
            out["error"] = self.formatException(record.exc_info)
        return json.dumps(out, default=str)


class TextFormatter(logging.Formatter):
    def __init__(self) -> None:
        super().__init__("%(asctime)s %(levelname)-5s %(name)s [%(threadName)s] %(message)s")

    def format(self, record: logging.LogRecord) -> str:
        text = super().format(record)
        ctx = [f"{f}={record.__dict__[f]}" for f in CONTEXT_FIELDS
               if record.__dict__.get(f) is not None and f != "thread_name"]
        return text + (" " + " ".join(ctx) if ctx else "")


def setup_logging(level: str = "info", json_format: bool = True) -> None:
    handler = logging.StreamHandler(sys.stderr)
    handler.setFormatter(JSONFormatter() if json_format else TextFormatter())
    root = logging.getLogger()
    root.handlers[:] = [handler]
    root.setLevel(level.upper())
    # The kubernetes client logs request bodies at debug level; keep it quiet unless asked.
    logging.getLogger("urllib3").setLevel(logging.WARNING)
    logging.getLogger("kubernetes").setLevel(logging.WARNING if level.lower() != "debug" else logging.INFO)

"""One logging setup for the whole process: JSON lines (the default, as upstream) or readable text.

    setup_logging("info", json_format=True)
    log.info("created pod %s", name, extra={"job_namespace": ns, "job_name": job, "replica_type": "Worker"})

A JSON line holds ``ts`` (RFC 3339 UTC, milliseconds), ``level``, ``logger``, ``msg``, ``thread``, then the
structured context the caller passed in ``extra=`` (job namespace/name/uid, replica type/index, work-queue key, and
any other field), and ``error`` (the traceback) for exceptions. Text lines carry the same, as ``key=value`` pairs.

Secrets: nothing in the project formats credentials, and this module makes sure of it. Every line, traceback
included, is scrubbed before it is written: values registered with :func:`register_secret` (the process's API
token, a kubeconfig password) and anything following ``Bearer``/``Basic`` or an ``Authorization`` header become
``<redacted>``. A rotated token read later is still caught by the ``Bearer`` pattern when it appears as a header.
"""

from __future__ import annotations

import json
import logging
import re
import sys
import threading
import time
from typing import Any

#: The structured context fields, in the order they appear (``core.framework.JobContext.extra`` fills them).
CONTEXT_FIELDS = ("job_namespace", "job_name", "job_uid", "replica_type", "replica_index", "key", "controller")
LEVELS = ("debug", "info", "warning", "error")
REDACTED = "<redacted>"
_MIN_SECRET_LENGTH = 6   # shorter values would redact ordinary words; real tokens and passwords are longer

# Attributes every LogRecord has: anything else on a record came from ``extra=``.
_STANDARD_ATTRS = frozenset(logging.LogRecord("", 0, "", 0, "", None, None).__dict__) | {"message", "asctime",
                                                                                         "taskName"}
# Credentials as they look in headers, dumps of headers, and URLs: ``Bearer <token>``, ``Basic <base64>``,
# ``Authorization: <anything>`` (quoted or not), ``token=<value>``, ``scheme://user:password@``.
_CREDENTIAL_PATTERNS = (
    re.compile(r"(\bBearer\s+)[^\s'\",}]+"),
    re.compile(r"(\bBasic\s+)[A-Za-z0-9+/]{6,}={0,2}"),
    re.compile(r"(?i)(\bauthorization['\"]?\s*[:=]\s*['\"]?)(?!Bearer\s|Basic\s)[^'\",}\s]+"),
    re.compile(r"(?i)(\b(?:access_|id_|refresh_)?token['\"]?\s*[:=]\s*['\"]?)[^'\",}\s&]+"),
    re.compile(r"(://)[^/\s:@]+:[^/\s@]+(?=@)"),             # https://user:password@host
)

_secrets: set[str] = set()
_secrets_lock = threading.Lock()


def register_secret(value: str | None) -> None:
    """Never let ``value`` (a token, a password) appear in a log line from now on."""
    if value and len(value) >= _MIN_SECRET_LENGTH:
        with _secrets_lock:
            _secrets.add(value)


def scrub(text: str) -> str:
    """``text`` with every registered secret and every credential-looking header value replaced."""
    with _secrets_lock:
        secrets = sorted(_secrets, key=len, reverse=True)
    for secret in secrets:
        if secret in text:
            text = text.replace(secret, REDACTED)
    for pattern in _CREDENTIAL_PATTERNS:
        text = pattern.sub(lambda m: m.group(1) + REDACTED, text)
    return text


def _extras(record: logging.LogRecord) -> dict[str, Any]:
    """The record's ``extra=`` fields: the context fields first, in their order, then the rest by name."""
    fields = {k: v for k, v in record.__dict__.items() if k not in _STANDARD_ATTRS and not k.startswith("_")}
    ordered = {k: fields.pop(k) for k in CONTEXT_FIELDS if fields.get(k) is not None}
    ordered.update(sorted((k, v) for k, v in fields.items() if v is not None))
    return ordered


def _timestamp(record: logging.LogRecord) -> str:
    return time.strftime("%Y-%m-%dT%H:%M:%S", time.gmtime(record.created)) + f".{int(record.msecs):03d}Z"


class JSONFormatter(logging.Formatter):
    """One JSON object per line; never raises on an odd ``extra`` value (it is written as its ``str``)."""

    def format(self, record: logging.LogRecord) -> str:
        out: dict[str, Any] = {"ts": _timestamp(record), "level": record.levelname.lower(), "logger": record.name,
                               "msg": record.getMessage(), "thread": record.threadName}
        for key, value in _extras(record).items():
            out.setdefault(key, value)
        if record.exc_info:
            out["error"] = self.formatException(record.exc_info)
        elif record.exc_text:
            out["error"] = record.exc_text
        return scrub(json.dumps(out, default=str, ensure_ascii=False))


class TextFormatter(logging.Formatter):
    """``2024-05-01T10:00:00.123Z info  logger [thread] message key=value ...`` and the traceback, if any."""

    def format(self, record: logging.LogRecord) -> str:
        context = " ".join(f"{k}={v}" for k, v in _extras(record).items())
        text = (f"{_timestamp(record)} {record.levelname.lower():<7} {record.name} [{record.threadName}] "
                f"{record.getMessage()}" + (f" {context}" if context else ""))
        if record.exc_info:
            text += "\n" + self.formatException(record.exc_info)
        return scrub(text)


def _quiet_urllib3(record: logging.LogRecord) -> bool:
    return not (record.name.startswith("urllib3") and record.levelno < logging.ERROR)


def setup_logging(level: str = "info", json_format: bool = True) -> None:
    """Route every logger of the process (ours, the libraries', Python warnings) to one stderr handler.

    Calling it again replaces the previous setup (the last call wins), so a command may reconfigure after parsing
    its flags.
    """
    if level.lower() not in LEVELS:
        raise ValueError(f"log level {level!r}: one of {', '.join(LEVELS)}")
    handler = logging.StreamHandler(sys.stderr)
    handler.setFormatter(JSONFormatter() if json_format else TextFormatter())
    # The level is enforced by the handler too: libraries reset their loggers' levels (the kubernetes client's
    # Configuration sets urllib3's to WARNING whenever one is created), which must not let their lines through.
    handler.setLevel(level.upper())
    root = logging.getLogger()
    for old in root.handlers[:]:
        root.removeHandler(old)
    root.addHandler(handler)
    root.setLevel(level.upper())
    logging.captureWarnings(True)
    # The kubernetes client logs request and response bodies at debug level, urllib3 every connection: keep them
    # at INFO even when debugging (bodies would be scrubbed, but they are noise).
    wanted = logging.getLevelName(level.upper())
    quiet = logging.INFO if wanted == logging.DEBUG else max(wanted, logging.WARNING)
    for library in ("urllib3", "kubernetes"):
        logging.getLogger(library).setLevel(quiet)
    if wanted != logging.DEBUG:
        # urllib3 warns of every connection retry; the client reports the outcome in one clear line of its own.
        handler.addFilter(_quiet_urllib3)

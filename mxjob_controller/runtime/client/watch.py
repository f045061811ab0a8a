"""One watch response as an iterator of event dicts (``{"type": ..., "object": {...}}``).

Guarantees:
- Events are yielded in the order the server sent them, each as soon as its line is complete (the body is read
  chunk by chunk, never buffered to the end).
- An ``ERROR`` event is raised as the typed error of its Status (410 → :class:`Expired`), ending the stream.
- A stall longer than the read timeout raises :class:`ReadTimeout`; a broken connection :class:`TransportError`.
- :meth:`close` may be called from any thread: it unblocks a reader stuck in a read at once, and iteration then
  ends quietly. A stream that ended cleanly returns its connection to the pool; any other is closed.
"""

from __future__ import annotations

import json
import threading
from collections.abc import Iterator
from typing import Any

import urllib3

from mxjob_controller.runtime.client.errors import ReadTimeout, TransportError, error_for_status

_READ_SIZE = 64 * 1024


class WatchStream:
    def __init__(self, response: Any, description: str) -> None:
        self._resp = response
        self.description = description
        self._closed = threading.Event()
        self._iterating = False
        self.events_received = 0

    @property
    def closed(self) -> bool:
        return self._closed.is_set()

    def close(self) -> None:
        if self._closed.is_set():
            return
        self._closed.set()
        try:
            self._resp.shutdown()  # unblocks a read in progress in another thread (urllib3 >= 2.3)
        except Exception:
            pass
        self._discard()

    def __enter__(self) -> WatchStream:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    def __iter__(self) -> Iterator[dict[str, Any]]:
        if self._iterating:
            raise RuntimeError("a watch stream can be iterated only once")
        self._iterating = True
        clean = False
        try:
            buf = b""
            for chunk in self._chunks():
                buf += chunk
                while True:
                    line, sep, rest = buf.partition(b"\n")
                    if not sep:
                        break
                    buf = rest
                    if line.strip():
                        yield self._event(line)
            if buf.strip() and not self._closed.is_set():
                yield self._event(buf)
            clean = not self._closed.is_set()
        finally:
            if clean:
                self._resp.release_conn()
            else:
                self._discard()
            self._closed.set()

    def _chunks(self) -> Iterator[bytes]:
        resp = self._resp
        try:
            if resp.chunked and resp.supports_chunked_reads():
                for chunk in resp.read_chunked(decode_content=True):
                    if self._closed.is_set():
                        return
                    yield chunk
            else:
                while not self._closed.is_set():
                    chunk = resp.read1(_READ_SIZE)
                    if not chunk:
                        return
                    yield chunk
        except (urllib3.exceptions.ReadTimeoutError, TimeoutError) as e:
            if not self._closed.is_set():
                raise ReadTimeout(f"{self.description}: no data within the read timeout") from e
        except (urllib3.exceptions.HTTPError, OSError, ValueError, AttributeError) as e:
            # AttributeError: urllib3 tears down the socket under a reader when ``close`` comes from another
            # thread mid-read; that is a closed stream, not a bug.
            if not self._closed.is_set():
                raise TransportError(f"{self.description}: watch stream broken: {e}") from e

    def _event(self, line: bytes) -> dict[str, Any]:
        try:
            event = json.loads(line)
        except ValueError as e:
            raise TransportError(f"{self.description}: undecodable watch event: {line[:200]!r}") from e
        if not isinstance(event, dict) or "type" not in event:
            raise TransportError(f"{self.description}: not a watch event: {line[:200]!r}")
        if event["type"] == "ERROR":
            status = event.get("object") or {}
            raise error_for_status(status if isinstance(status, dict) else {"message": str(status)})
        self.events_received += 1
        return event

    def _discard(self) -> None:
        """Close the connection (its state mid-body is unknown) and hand the slot back to the pool."""
        try:
            self._resp.close()
        except Exception:
            pass
        try:
            self._resp.release_conn()
        except Exception:
            pass

"""Random (version 4) UUIDs as text, for what the server stamps on every write and answer (an object's
``metadata.uid``, an answer's ``Audit-Id``): ``str(uuid.uuid4())`` builds a ``UUID`` object (an int made and
checked, its fields set one by one) only to format it, which costs twice this on each request."""

from __future__ import annotations

import os


def random_uuid() -> str:
    """``str(uuid.uuid4())``: 122 random bits, the version nibble 4 and the RFC 4122 variant (``10`` high bits)."""
    h = os.urandom(16).hex()
    return f"{h[:8]}-{h[8:12]}-4{h[13:16]}-{'89ab'[int(h[16], 16) & 3]}{h[17:20]}-{h[20:]}"

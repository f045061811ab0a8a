"""Random (version 4) UUIDs as text, for what the server stamps on every write and answer (an object's
``metadata.uid``, an answer's ``Audit-Id``).

Why not ``str(uuid.uuid4())``: it builds a ``UUID`` object (an int made and checked, its fields set one by one)
only to format it, and reads ``os.urandom``, a system call that lets go of the interpreter lock: in a burst of pod
starts, where hundreds of threads wait for that lock, each of the eight or so per pod cost a hand-off of the lock
and back (issue 48). The bits come instead from a Mersenne Twister seeded with 256 bits of ``os.urandom``, and seeded
again in a forked child, so that no two processes hand out the same sequence. Neither a uid nor an audit id is a
secret (kube-apiserver prints both; anyone who may read an object reads its uid), so they need to be unique, not
unpredictable."""

from __future__ import annotations

import os
import random

_bits = random.Random(os.urandom(32))


def _reseed() -> None:
    _bits.seed(os.urandom(32))


os.register_at_fork(after_in_child=_reseed)


def random_uuid() -> str:
    """``str(uuid.uuid4())``: 122 random bits, the version nibble 4 and the RFC 4122 variant (``10`` high bits)."""
    h = f"{_bits.getrandbits(128):032x}"
    return f"{h[:8]}-{h[8:12]}-4{h[13:16]}-{'89ab'[int(h[16], 16) & 3]}{h[17:20]}-{h[20:]}"

"""kube/uids.py: the UUIDs the server stamps on objects and answers."""

from __future__ import annotations

import os
import re
import uuid

from mxjob_controller.kube.uids import random_uuid

_CANONICAL = re.compile(r"^[0-9a-f]{8}-[0-9a-f]{4}-4[0-9a-f]{3}-[89ab][0-9a-f]{3}-[0-9a-f]{12}$")


def test_a_uid_is_a_canonical_version_4_uuid() -> None:
    for _ in range(1000):
        text = random_uuid()
        assert _CANONICAL.match(text), text
        parsed = uuid.UUID(text)
        assert (parsed.version, parsed.variant, str(parsed)) == (4, uuid.RFC_4122, text)


def test_uids_do_not_repeat() -> None:
    uids = [random_uuid() for _ in range(20_000)]
    assert len(set(uids)) == len(uids)


def test_a_forked_child_does_not_repeat_its_parents_sequence() -> None:
    read, write = os.pipe()
    pid = os.fork()
    if pid == 0:   # the child: its next uids, to the parent
        try:
            os.write(write, ",".join(random_uuid() for _ in range(4)).encode())
        finally:
            os._exit(0)
    os.close(write)
    with os.fdopen(read, "rb") as pipe:
        child = pipe.read().decode().split(",")
    os.waitpid(pid, 0)
    parent = [random_uuid() for _ in range(4)]
    assert len(child) == 4 and not set(child) & set(parent)

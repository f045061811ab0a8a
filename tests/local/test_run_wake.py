"""What ends ``local run``'s wait between two looks at its jobs early (issue 48: a short job's run ends as soon as the
job does): a job's end seen by the watch, or the interrupt; otherwise the wait lasts the poll."""

from __future__ import annotations

import threading
import time

import pytest

from mxjob_controller.local import run as local_run


@pytest.mark.parametrize(("status", "ended"), [
    ({}, False),
    ({"conditions": [{"type": "Running", "status": "True"}]}, False),
    ({"conditions": [{"type": "Succeeded", "status": "False"}]}, False),
    ({"conditions": [{"type": "Created", "status": "True"}, {"type": "Succeeded", "status": "True"}]}, True),
    ({"conditions": [{"type": "Failed", "status": "True"}]}, True),
    ({"phase": "Running"}, False),     # GenericJob's model
    ({"phase": "Succeeded"}, True),
    ({"phase": "Failed"}, True),
])
def test_a_job_has_ended_when_it_succeeded_or_failed(status, ended):
    assert local_run._has_ended({"status": status}) is ended


def test_the_wait_ends_at_once_when_a_job_has_ended_and_clears_the_signal():
    interrupt, ended = threading.Event(), threading.Event()
    ended.set()
    started = time.monotonic()
    assert local_run._wait(interrupt, ended, 60.0) is False
    assert time.monotonic() - started < 30.0 and not ended.is_set()


def test_the_wait_says_when_the_run_was_interrupted():
    interrupt, ended = threading.Event(), threading.Event()
    interrupt.set()
    assert local_run._wait(interrupt, ended, 60.0) is True


def test_the_wait_lasts_the_poll_when_nothing_happens():
    interrupt, ended = threading.Event(), threading.Event()
    started = time.monotonic()
    assert local_run._wait(interrupt, ended, 0.2) is False
    assert time.monotonic() - started >= 0.2

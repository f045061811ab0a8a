"""The cancel events of the passes under way (core/cancellation.py): one per job key and UID, set by a cancel of
that job (or of any UID), left alone by a cancel of another job of the same name, and gone when the pass ends."""

from __future__ import annotations

from mxjob_controller.core.cancellation import Cancellations


def test_a_cancel_sets_the_event_of_the_pass_under_way_and_only_for_its_job() -> None:
    cancels = Cancellations()
    event = cancels.event("ns/j", "uid-1")
    assert cancels.event("ns/j", "uid-1") is event                # the pass asks again (each slice): the same one
    assert not cancels.cancel("ns/j", "uid-0")                     # an older job of that name: not this pass
    assert not cancels.cancel("ns/other")
    assert not event.is_set()
    assert cancels.cancel("ns/j", "uid-1") and event.is_set()
    other = cancels.event("ns/k", "uid-2")
    assert cancels.cancel("ns/k") and other.is_set()              # no UID: whatever job the pass is over


def test_a_new_job_of_the_same_name_gets_a_fresh_event() -> None:
    cancels = Cancellations()
    old = cancels.event("ns/j", "uid-1")
    cancels.cancel("ns/j", "uid-1")
    new = cancels.event("ns/j", "uid-2")
    assert new is not old and not new.is_set()


def test_no_event_outlives_its_pass_and_a_cancel_without_a_pass_does_nothing() -> None:
    cancels = Cancellations()
    event = cancels.event("ns/j", "uid-1")
    cancels.release("ns/j")
    assert len(cancels) == 0
    assert not cancels.cancel("ns/j", "uid-1") and not event.is_set()   # the next pass reads the store instead
    cancels.release("ns/j")                                              # twice: harmless
    assert not cancels.event("ns/j", "uid-1").is_set()


"""The event correlator, table-tested with a hand-driven clock: dedupe into count bumps, aggregation of similar
events, the per-object spam filter, and their windows."""

from __future__ import annotations

from typing import Any

import pytest

from mxjob_controller.runtime.event_correlator import (
    COMBINED_PREFIX,
    CorrelatorOptions,
    EventCorrelator,
    event_key,
    similar_key,
    spam_key,
)


class Clock:
    def __init__(self) -> None:
        self.t = 1_700_000_000.0

    def __call__(self) -> float:
        return self.t


def event(message: str = "Created pod: j-worker-0", reason: str = "SuccessfulCreatePod", event_type: str = "Normal",
          name: str = "j", uid: str = "u1", seq: int = 0) -> dict[str, Any]:
    return {"apiVersion": "v1", "kind": "Event", "metadata": {"name": f"{name}.{seq:x}", "namespace": "ns"},
            "involvedObject": {"kind": "MXJob", "namespace": "ns", "name": name, "uid": uid,
                               "apiVersion": "kubeflow.org/v1"},
            "reason": reason, "message": message, "type": event_type, "count": 1,
            "firstTimestamp": "2023-11-14T22:13:20Z", "lastTimestamp": "2023-11-14T22:13:20Z",
            "source": {"component": "mxjob-controller"}, "reportingComponent": "mxjob-controller",
            "reportingInstance": ""}


@pytest.fixture
def clock() -> Clock:
    return Clock()


def test_a_first_event_is_created_as_it_is(clock: Clock) -> None:
    correlator = EventCorrelator(now=clock)
    first = correlator.correlate(event())
    assert first is not None and first.patch is None
    assert first.event == event()


def test_a_repeat_patches_count_and_last_timestamp_of_the_first(clock: Clock) -> None:
    correlator = EventCorrelator(now=clock)
    first = correlator.correlate(event(seq=1))
    assert first is not None
    correlator.update_state(first.key, {"metadata": {"name": "j.1", "resourceVersion": "42"}})
    clock.t += 5
    repeat = event(seq=2)
    repeat["lastTimestamp"] = "2023-11-14T22:13:25Z"
    second = correlator.correlate(repeat)
    assert second is not None
    assert second.patch == {"count": 2, "lastTimestamp": "2023-11-14T22:13:25Z", "message": "Created pod: j-worker-0"}
    assert second.event["metadata"]["name"] == "j.1"               # the Event written first
    assert second.event["metadata"]["resourceVersion"] == "42"
    assert second.event["firstTimestamp"] == "2023-11-14T22:13:20Z"
    third = correlator.correlate(event(seq=3))
    assert third is not None and third.patch is not None and third.patch["count"] == 3


@pytest.mark.parametrize(("field", "value"), [
    ("message", "Created pod: j-worker-1"), ("reason", "SuccessfulCreateService"), ("type", "Warning"),
    ("uid", "u2"), ("name", "other"),
])
def test_events_differing_in_any_identity_field_are_separate_objects(clock: Clock, field: str, value: str) -> None:
    correlator = EventCorrelator(now=clock)
    assert correlator.correlate(event()) is not None
    kwargs = {"message": "Created pod: j-worker-0", "reason": "SuccessfulCreatePod", "event_type": "Normal",
              "uid": "u1", "name": "j"}
    kwargs[{"type": "event_type"}.get(field, field)] = value
    other = correlator.correlate(event(**kwargs))  # type: ignore[arg-type]
    assert other is not None and other.patch is None


def test_a_repeat_after_the_dedupe_window_is_a_new_event(clock: Clock) -> None:
    correlator = EventCorrelator(CorrelatorOptions(dedupe_window=60), now=clock)
    assert correlator.correlate(event()) is not None
    clock.t += 61
    again = correlator.correlate(event(seq=9))
    assert again is not None and again.patch is None and again.event["count"] == 1


def test_the_tenth_similar_event_is_combined_and_later_ones_bump_it(clock: Clock) -> None:
    correlator = EventCorrelator(now=clock)
    results = [correlator.correlate(event(f"Created pod: j-worker-{i}")) for i in range(12)]
    assert all(r is not None and r.patch is None for r in results[:9])
    tenth, eleventh, twelfth = results[9], results[10], results[11]
    assert tenth is not None and tenth.patch is None
    assert tenth.event["message"] == COMBINED_PREFIX + "Created pod: j-worker-9"
    assert eleventh is not None and eleventh.patch == {"count": 2, "lastTimestamp": tenth.event["lastTimestamp"],
                                                       "message": COMBINED_PREFIX + "Created pod: j-worker-10"}
    assert twelfth is not None and twelfth.patch is not None and twelfth.patch["count"] == 3


def test_similar_events_spread_beyond_the_interval_are_not_combined(clock: Clock) -> None:
    correlator = EventCorrelator(CorrelatorOptions(max_interval=10, qps=1.0), now=clock)
    for i in range(30):
        result = correlator.correlate(event(f"Created pod: j-worker-{i}"))
        assert result is not None and not result.event["message"].startswith(COMBINED_PREFIX)
        clock.t += 11


def test_the_spam_filter_allows_a_burst_per_object_then_refills(clock: Clock) -> None:
    correlator = EventCorrelator(CorrelatorOptions(burst=3, qps=0.5, max_events=100), now=clock)
    allowed = [correlator.correlate(event(f"m{i}")) is not None for i in range(5)]
    assert allowed == [True, True, True, False, False]
    assert correlator.correlate(event("x", name="other", uid="u9")) is not None  # another object has its own bucket
    clock.t += 2  # one token back
    assert correlator.correlate(event("m5")) is not None
    assert correlator.correlate(event("m6")) is None


def test_keys_follow_client_go() -> None:
    base = event()
    assert event_key(base) != event_key(event("other message"))
    assert similar_key(base) == similar_key(event("other message"))
    assert similar_key(base) != similar_key(event(reason="Other"))
    assert spam_key(base) == spam_key(event("other message", reason="Other"))
    assert spam_key(base) != spam_key(event(event_type="Warning"))

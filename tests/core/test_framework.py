"""The core's framework helpers (core/framework.py): a computation shared per parsed job, bounded."""

from __future__ import annotations

from mxjob_controller.core.framework import per_job


def test_per_job_computes_once_per_parsed_job_and_arguments() -> None:
    calls: list[tuple[int, str]] = []

    @per_job
    def shared(job: object, suffix: str = "") -> list[str]:
        calls.append((id(job), suffix))
        return [suffix]

    first, second = object(), object()
    assert shared(first) is shared(first) and shared(first, "x") is shared(first, "x")
    assert shared(second) is not shared(first)
    assert calls == [(id(first), ""), (id(first), "x"), (id(second), "")]
    for _ in range(40):   # bounded: the first job is forgotten, then computed again
        shared(object())
    shared(first)
    assert calls[-1] == (id(first), "")

"""The reconcile trace (runtime/reconcile_trace.py) that proves no key ran on two threads at once: the overlap
checker, and a reader that leaves out a last record still being written."""

from __future__ import annotations

from pathlib import Path

from mxjob_controller.runtime.reconcile_trace import concurrent_runs, read_trace


def test_the_trace_checker_finds_overlapping_runs_of_a_key():
    records = [{"key": "a", "thread": "w-0", "start": 1.0, "end": 3.0, "result": "success"},
               {"key": "a", "thread": "w-1", "start": 3.0, "end": 4.0, "result": "success"},
               {"key": "b", "thread": "w-1", "start": 1.5, "end": 2.0, "result": "success"},
               {"key": "a", "thread": "w-2", "start": 3.5, "end": 3.6, "result": "error"}]
    overlaps = concurrent_runs(records)
    assert [(x["thread"], y["thread"]) for x, y in overlaps] == [("w-1", "w-2")]
    assert concurrent_runs(records[:3]) == []


def test_reading_a_trace_leaves_out_a_last_record_still_being_written(tmp_path: Path):
    """A read racing the controller's write can end inside a line (CI caught it: ``'{"key": "ns/cold-21", "th'``)."""
    trace = tmp_path / "trace.jsonl"
    whole = '{"key": "a", "thread": "w-0", "start": 1.0, "end": 2.0, "result": "success"}\n'
    trace.write_text(whole * 2 + whole[:25])
    assert [r["key"] for r in read_trace(trace)] == ["a", "a"]
    trace.write_text(whole * 3)
    assert len(read_trace(trace)) == 3

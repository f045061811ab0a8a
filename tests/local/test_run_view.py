"""``local/run_view.py``, pure: a job's line says its state, replicas, restarts and what it waits for; on a
terminal every line fits one row of the width measured, and the block never outgrows the screen. (What a real
terminal shows after a whole ``local run`` is in ``tests/local/test_run_terminal.py``.)"""

from __future__ import annotations

import io

import pytest

from mxjob_controller.local.run_view import Display, JobView, block, cells, duration, fit, plain_line, terminal_line


def crash_looping() -> JobView:
    return JobView("default/crashy", "Running", "Worker 1 active", restarts=2, waiting="CrashLoopBackOff",
                   elapsed=75)


def test_a_line_says_restarts_and_the_waiting_reason_and_a_finished_job_keeps_its_restarts():
    assert plain_line(crash_looping()) == "default/crashy  Running    Worker 1 active · restarts 2 · CrashLoopBackOff"
    assert terminal_line(crash_looping()) == \
        "default/crashy Running   1m15s restarts 2 · CrashLoopBackOff · Worker 1 active"
    failed = JobView("default/crashy", "Failed", "Worker 1 failed", restarts=3, waiting="CrashLoopBackOff")
    assert plain_line(failed) == "default/crashy  Failed     Worker 1 failed · restarts 3"


def test_a_queued_job_says_its_place_once_not_its_unschedulable_reason_twice():
    view = JobView("default/sweep-7", "Created", "Worker pending", waiting="Unschedulable: 0/1 nodes are available",
                   queue="queued #3: 1 pod(s) waiting (0/1 nodes are available: 1 Insufficient cpu.)")
    assert plain_line(view) == ("default/sweep-7  Created    Worker pending · queued #3: 1 pod(s) waiting (0/1 nodes "
                                "are available: 1 Insufficient cpu.)")
    config = JobView("default/j", "Created", "Worker pending",
                     waiting='CreateContainerConfigError: configmap "settings" not found')
    assert plain_line(config).endswith('· CreateContainerConfigError: configmap "settings" not found')


@pytest.mark.parametrize(("seconds", "text"), [(0, "0s"), (59.9, "59s"), (65, "1m05s"), (3600 + 180, "1h03m")])
def test_durations(seconds, text):
    assert duration(seconds) == text


def test_fit_cuts_by_cells_and_marks_the_cut():
    assert fit("abcdef", 6) == "abcdef"
    assert fit("abcdefg", 6) == "abcde…"
    assert fit("日本語テキスト", 7) == "日本語…"          # two cells each: 6 + the ellipsis
    assert sum(cells(c) for c in fit("日本語テキスト", 7)) <= 7
    assert fit("a\tb\x1b[2Jc", 20) == "a b [2Jc"           # controls never reach the terminal


@pytest.mark.parametrize("columns", [40, 80, 200])
def test_every_line_of_the_block_fits_one_row_with_the_last_column_free(columns):
    views = [crash_looping(), JobView("default/a-job-with-a-rather-long-name-indeed", "Created", "Worker pending",
                                      queue="queued #1: 4 pod(s) waiting (0/1 nodes are available: 1 Insufficient "
                                            "cpu, 1 Insufficient memory.)")]
    lines = block(views, columns, 24)
    assert len(lines) == 2
    assert all(sum(cells(c) for c in line) <= columns - 1 for line in lines)


def test_a_block_taller_than_the_screen_is_cut_to_it_and_counts_the_rest():
    views = [JobView(f"default/sweep-{i}", "Succeeded" if i < 5 else "Created", "Worker 1") for i in range(30)]
    lines = block(views, 80, 10)
    assert len(lines) == 9
    assert lines[-1] == "… and 22 more job(s): 22 created"


def test_not_on_a_terminal_a_line_is_written_each_time_a_job_changes_and_messages_go_as_they_are():
    out = io.StringIO()
    display = Display(out, interactive=False)
    view = JobView("default/j", "Created", "Worker pending")
    display.show([view], 0.0)
    display.show([view], 0.5)
    view.state, view.replicas = "Running", "Worker 1 active"
    display.show([view], 1.25)
    display.message("all done")
    assert out.getvalue().splitlines() == ["[   0.0s] default/j  Created    Worker pending",
                                           "[   1.2s] default/j  Running    Worker 1 active", "all done"]

"""``local run`` on a real terminal: a pseudo-terminal of 80 or 40 columns, what it writes played on a terminal
emulator (``pyte``), as a user's terminal would show it. After the demo's job and README's 8-job sweep, the screen
is exactly a fresh render of what the run said (its messages, then its last block, then its outcome): no stale
copy of an earlier redraw, no row left half-overwritten, every job on one row. A crash-looping worker shows its
restart count and ``CrashLoopBackOff`` in the block."""

from __future__ import annotations

import re
import sys
from itertools import takewhile
from pathlib import Path

import pytest

from tests.run_process import clean_env
from tests.terminal import TerminalRun, fresh_screen, run_in_terminal

pytestmark = [pytest.mark.slow, pytest.mark.xdist_group("local-run")]

ROOT = Path(__file__).resolve().parents[2]
LOCAL_RUN = [sys.executable, "-m", "mxjob_controller", "local", "run"]
# The 8-job sweep as docs/local-cluster.md gives it, under this heading.
SWEEP_DOC, SWEEP_SECTION = ROOT / "docs" / "local-cluster.md", "### What `local run` checks, shows and exits with"
_MOVES = re.compile(r"\r?\x1b\[\d+A")


def readme_sweep_command() -> str:
    """The docs' 8-job sweep command line, as written (its comment aside)."""
    text = SWEEP_DOC.read_text()
    section = text[text.index(SWEEP_SECTION):]
    block = re.search(r"^```sh\n(.*?)^```$", section, re.S | re.M).group(1)
    line = next(line for line in block.splitlines() if " local run " in line and "examples/sweep/*.yaml" in line)
    return line.split("  #")[0].strip()


def said_then_last_block(raw: str, keys: list[str]) -> list[str]:
    """What a fresh terminal would show for the run's final state: every line it wrote outside the block, in order,
    then its last block (what it drew last, after its last clear), then what it wrote below that."""
    def is_job_line(line: str) -> bool:
        return any(line.startswith(key + " ") for key in keys)

    head, _, tail = raw.replace("\r\n", "\n").rpartition("\x1b[J")
    tail_lines = tail.split("\n")
    last_block = list(takewhile(is_job_line, tail_lines))
    after = [line for line in tail_lines[len(last_block):] if line]
    before = [line for line in _MOVES.sub("", head).replace("\x1b[J", "").split("\n") if line and not is_job_line(line)]
    return [*before, *last_block, *after]


def assert_clean(run: TerminalRun, columns: int, rows: int, keys: list[str], final_state: str) -> list[str]:
    """The screen equals a fresh render of the final state; each job is on exactly one row, in that state, and no
    row is wider than the terminal less its last column. The job rows."""
    expected = fresh_screen(said_then_last_block(run.raw, keys), columns, rows)
    assert run.rows == expected, "\n".join(["the screen:", *run.rows, "a fresh render:", *expected])
    job_rows = [row for row in run.rows if any(row.startswith(key + " ") for key in keys)]
    assert [row.split()[0] for row in job_rows] == keys, run.rows
    assert all(row.split()[1] == final_state for row in job_rows), run.rows
    assert all(len(row) <= columns - 1 for row in job_rows), run.rows
    return job_rows


@pytest.mark.parametrize("columns", [80, 40])
def test_the_demos_job_leaves_no_stale_line(columns):
    run = run_in_terminal([*LOCAL_RUN, "--timeout", "5m", "examples/mxnet-digits/mxjob.yaml"], columns=columns,
                          rows=24, cwd=ROOT, env=clean_env(), timeout=400)
    assert run.returncode == 0, run.raw
    assert_clean(run, columns, 24, ["default/mxnet-digits"], "Succeeded")
    assert run.rows[-1].startswith("all 1 job(s) succeeded in ")


@pytest.mark.parametrize("columns", [80, 40])
def test_readmes_8_job_sweep_leaves_no_stale_line(columns):
    command = readme_sweep_command()
    assert command == ".venv/bin/mxjob-controller local run --capacity cpu=2,memory=4Gi examples/sweep/*.yaml"
    # as written, but for the interpreter: this test's (a checkout's .venv, or whichever runs the tests)
    run = run_in_terminal(["bash", "-c", command.replace(".venv/bin/mxjob-controller",
                                                         f"{sys.executable} -m mxjob_controller", 1)],
                          columns=columns, rows=24, cwd=ROOT, env=clean_env(), timeout=300)
    assert run.returncode == 0, run.raw
    keys = [f"default/sweep-{i}" for i in range(1, 9)]
    assert_clean(run, columns, 24, keys, "Succeeded")
    assert run.rows[-1].startswith("all 8 job(s) succeeded in ")
    if columns >= 80:   # the sweep queued (four trials of half a CPU at a time on two), said where there is room
        assert re.search(r"default/sweep-\d Created .*queued #\d: 1 pod", run.raw), run.raw


def test_a_crash_looping_worker_shows_its_restarts_and_crashloopbackoff(tmp_path):
    job = tmp_path / "crashy.yaml"
    job.write_text("""apiVersion: kubeflow.org/v1
kind: MXJob
metadata: {name: crashy}
spec:
  mxReplicaSpecs:
    Worker:
      restartPolicy: OnFailure
      template:
        spec:
          containers:
            - name: mxnet
              image: mxnet/python
              command: [python3, -c, "import sys; print('boom'); sys.exit(3)"]
""")
    # Ctrl-C once the block shows the back-off on the running job (on a busy machine the pod's back-off can show
    # before the controller has written Running): the run stops (130), the block stays as last drawn.
    shown = re.compile(r"default/crashy Running [^\n]*CrashLoopBackOff")
    run = run_in_terminal([*LOCAL_RUN, "--timeout", "2m", str(job)], columns=80, rows=24, cwd=ROOT,
                          env=clean_env(), timeout=180, until=lambda raw: shown.search(raw) is not None)
    assert run.returncode == 130, run.raw
    [row] = assert_clean(run, 80, 24, ["default/crashy"], "Running")
    assert re.search(r"^default/crashy Running +\d+s restarts [1-9]\d* · CrashLoopBackOff · Worker 1 active$",
                     row), row

"""Every file under ``examples/`` with ``mxjob-controller local run``, as ``examples/README.md`` promises: each one
that can run on this machine runs (exit 0), and each one that cannot has a README line saying what it needs, which
this module holds against what ``local run`` does with it: a fail-fast exit naming the cause, not a wait for the
whole ``--timeout`` (the one exception, a crash-looping ``OnFailure`` v1alpha1 job, says so in its line).

The examples ``tests/local/test_run.py`` and ``tests/local/test_run_terminal.py`` already run (the real MXNet demo,
MXTune, the TFJob and GenericJob examples, the vendor's TFJob without a command, README's sweep) are not run twice:
the table names them and a test checks that module still does."""

from __future__ import annotations

import os
import re
from pathlib import Path
from typing import NamedTuple

import pytest

from tests.local.test_run import local_run

# Own group: each run has a kubeconfig of its own (``--kubeconfig-out``), so it may run beside ``local-run``'s.
pytestmark = [pytest.mark.slow, pytest.mark.xdist_group("examples")]

ROOT = Path(__file__).resolve().parents[2]
EXAMPLES = ROOT / "examples"
LOCAL_RUN_TESTS = [ROOT / "tests" / "local" / "test_run.py", ROOT / "tests" / "local" / "test_run_terminal.py"]


class Expected(NamedTuple):
    """What ``local run FILE`` does here, and what the file's README line says about it."""

    exit_code: int
    readme_says: str          # in the line's last column
    output_says: str = ""     # in what ``local run`` prints (stdout and stderr)
    elsewhere: bool = False   # run by tests/local/test_run.py or test_run_terminal.py


RUNS = "runs (exit 0)"
NO_SCRIPT = "can't open file '{}'"
EXPECTED = {
    "mxnet-digits/mxjob.yaml": Expected(0, RUNS, elsewhere=True),
    "mxtune/mxjob.yaml": Expected(0, RUNS, elsewhere=True),
    "tf-config-check/tfjob.yaml": Expected(0, RUNS, elsewhere=True),
    "tensorflow/tfjob-dist.yaml": Expected(0, RUNS, elsewhere=True),
    "tensorflow/tfjob-run-policy.yaml": Expected(0, RUNS, elsewhere=True),
    "generic/rendezvous.yaml": Expected(0, RUNS, elsewhere=True),
    "generic/generic-example.yaml": Expected(0, RUNS, elsewhere=True),
    "cloud-api/create-tfjob.json": Expected(1, "its containers give only `args`, no `command`", elsewhere=True),
    "mxjob-dist-train.yaml": Expected(0, RUNS),
    "mxjob-single-worker.yaml": Expected(0, RUNS),
    "mxjob-tune.yaml": Expected(0, RUNS),
    "mxjob-run-policy.yaml": Expected(0, RUNS),
    "v1alpha1/mx_job_local.yaml": Expected(0, RUNS),
    "cloud-api/create-mxjob.json": Expected(1, "needs its image's `train_imagenet.py`",
                                            NO_SCRIPT.format(ROOT / "train_imagenet.py")),
    "cloud-api/update-mxjob-ttl.json": Expected(1, "needs the same `train_imagenet.py`",
                                                NO_SCRIPT.format(ROOT / "train_imagenet.py")),
    "cloud-api/update-tfjob-ttl.json": Expected(1, "needs the same image; exits 1 in seconds with "
                                                   "`CreateContainerError`",
                                                'no command specified for container "tensorflow"'),
    # Its workers ask for 4 CPUs each: on a machine with fewer, no worker can ever be placed.
    "generic/keras-multiworker.yaml": Expected(1, "needs TensorFlow's image and the tutorial's "
                                                  "`/workspace/keras_mnist.py`",
                                               NO_SCRIPT.format("/workspace/keras_mnist.py")
                                               if (os.cpu_count() or 1) >= 4 else
                                               "can never be scheduled on this machine: it asks for cpu 4 (the node "
                                               f"has {os.cpu_count()})"),
    "v1alpha1/mx_job_dist.yaml": Expected(124, "so `local run` waits for `--timeout` (exit 124)",
                                          NO_SCRIPT.format(ROOT / "train_mnist.py")),
    **{f"sweep/trial-{i}.yaml": Expected(0, RUNS, elsewhere=True) for i in range(1, 9)},   # README's sweep
    "cloud-api/patch-mxjob-labels.json": Expected(2, "a merge patch, not an object",
                                                  "every document must be an object with apiVersion and kind"),
    "cloud-api/patch-tfjob-labels.json": Expected(2, "a merge patch, not an object",
                                                  "every document must be an object with apiVersion and kind"),
}
FAILS_FAST = [f for f, e in EXPECTED.items() if e.exit_code == 1 and not e.elsewhere]
REFUSED = [f for f, e in EXPECTED.items() if e.exit_code == 2]


def readme_rows() -> dict[str, str]:
    """examples/README.md's table: each row's file (its first backquoted path) → its last column."""
    rows = {}
    for line in (EXAMPLES / "README.md").read_text().splitlines():
        cells = [c.strip() for c in line.strip().strip("|").split(" | ")]
        if line.startswith("| `") and len(cells) == 3:
            rows[re.match(r"`([^`]+)`", cells[0]).group(1)] = cells[2]
    return rows


def run_example(tmp_path: Path, *files: str, timeout: str = "300") -> tuple[int, str]:
    """``local run`` on ``files`` from the checkout: its exit code and all it printed."""
    run = local_run("--logs", "--timeout", timeout, "--kubeconfig-out", str(tmp_path / "kubeconfig"),
                    *(str(EXAMPLES / f) for f in files), timeout=float(timeout) + 120)
    return run.returncode, run.stdout + run.stderr


def test_every_example_file_has_a_readme_line_that_says_what_local_run_does_with_it():
    files = {str(p.relative_to(EXAMPLES)) for p in EXAMPLES.rglob("*") if p.suffix in (".yaml", ".json")}
    assert files == set(EXPECTED), "an example without an expected outcome here, or one that is gone"
    rows = readme_rows()
    assert set(rows) == files
    for file, expected in EXPECTED.items():
        assert expected.readme_says in rows[file], (file, rows[file])
        assert rows[file].startswith(RUNS) == (expected.exit_code == 0), (file, rows[file])


def test_the_examples_run_elsewhere_are_still_run_there():
    source = "".join(path.read_text() for path in LOCAL_RUN_TESTS)
    for file, expected in EXPECTED.items():
        if expected.elsewhere:
            name = Path(file).name
            assert name in source or Path(file).parent.name in source, file


def test_the_examples_that_can_run_here_succeed_together(tmp_path):
    files = [f for f, e in EXPECTED.items() if e.exit_code == 0 and not e.elsewhere]
    code, out = run_example(tmp_path, *files, timeout="120")
    assert code == 0, out
    assert f"all {len(files)} job(s) succeeded" in out
    assert "[local-job-worker-0] worker 1 alone" in out          # v1alpha1 jobMode local: one worker, no scheduler
    assert "[mxnet-tune-tuner-0] would run: python3 auto-tuning.py" in out


@pytest.mark.parametrize("file", FAILS_FAST)
def test_an_example_that_cannot_run_here_fails_in_seconds_naming_what_is_missing(tmp_path, file):
    code, out = run_example(tmp_path, file)
    assert code == 1, out
    assert EXPECTED[file].output_says in out, out
    failed_at = re.search(r"^\[ *([0-9.]+)s\] \S+  Failed", out, re.M)
    # the Keras job first spends its 100 shared restarts (15-20 s on a busy 2-core machine)
    assert failed_at and float(failed_at.group(1)) < 90, "failed long before the 300 s timeout: " + out


def test_the_v1alpha1_dist_example_crash_loops_on_its_missing_script_until_the_timeout(tmp_path):
    """The old example's pods restart ``OnFailure`` as v1 does (the crash-loop back-off), where mx-operator v1alpha1
    failed the job on an exit code from 1 to 127; its README line says so."""
    code, out = run_example(tmp_path, "v1alpha1/mx_job_dist.yaml", timeout="8")
    assert code == 124, out
    assert "timed out after 8s: not finished: default/example-dist-job (Running)" in out
    assert EXPECTED["v1alpha1/mx_job_dist.yaml"].output_says in out, out


@pytest.mark.parametrize("file", REFUSED)
def test_a_patch_body_is_refused_as_a_usage_error(tmp_path, file):
    code, out = run_example(tmp_path, file)
    assert code == 2, out
    assert EXPECTED[file].output_says in out

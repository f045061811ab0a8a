"""Before its jobs start, ``local run`` warns when their containers' user cannot enter the directory they would start
in: pure, with folders' modes given, then for real (as root, from a directory only root may enter: the warning
before the start, and the failure that follows shows the runtime's ``chdir … Permission denied``)."""

from __future__ import annotations

import os
import stat
import subprocess
import sys
import tempfile
from pathlib import Path

import pytest

from mxjob_controller.local.kubelet.sandbox import RunAs, cwd_blocked
from mxjob_controller.local.preflight import pod_templates, workdir_warnings
from tests.local.test_run import ROOT
from tests.run_process import clean_env


def fake_stat(modes: dict[str, tuple[int, int]]):
    """``stat`` of folders given as path → (mode, owner uid); everything else is missing."""
    def stat_of(path: str) -> os.stat_result:
        if path not in modes:
            raise FileNotFoundError(path)
        mode, uid = modes[path]
        return os.stat_result((stat.S_IFDIR | mode, 0, 0, 0, uid, uid, 0, 0, 0, 0))
    return stat_of


def mxjob(working_dir: str = "", run_as: int | None = None) -> dict:
    container = {"name": "mxnet", "command": ["true"], **({"workingDir": working_dir} if working_dir else {})}
    spec = {"containers": [container], **({"securityContext": {"runAsUser": run_as}} if run_as is not None else {})}
    return {"apiVersion": "kubeflow.org/v1", "kind": "MXJob", "metadata": {"name": "j"},
            "spec": {"mxReplicaSpecs": {"Worker": {"template": {"spec": spec}},
                                        "Server": {"template": {"spec": spec}}}}}


def user_of(template, container) -> RunAs:
    uid = ((template.get("spec") or {}).get("securityContext") or {}).get("runAsUser", 65534)
    return RunAs(uid, uid)


def blocked(modes: dict[str, tuple[int, int]], sandboxed: bool = True):
    return lambda cwd, user: cwd_blocked(cwd, user, sandboxed, fake_stat(modes))


MODES = {"/": (0o755, 0), "/root": (0o700, 0), "/root/project": (0o755, 0), "/srv": (0o755, 0),
         "/srv/data": (0o755, 0)}


def test_a_container_user_who_cannot_enter_the_directory_is_warned_of_once_per_folder():
    warnings = workdir_warnings([mxjob()], user_of, lambda p: p in MODES, "/root/project", blocked(MODES),
                                fake_stat(MODES))
    assert warnings == [
        "Warning: the containers of MXJob default/j run as nobody (65534:65534), who cannot enter /root (mode 0700, "
        "owner uid 0): they would fail with `chdir … Permission denied`. Let them in (chmod o+x /root), start "
        "`local run` from a directory they can enter (or give --workdir), or run them as a user who can "
        "(--container-user UID[:GID], or the pod's securityContext.runAsUser)"]


def test_no_warning_where_they_can_enter_or_run_as_root():
    assert workdir_warnings([mxjob("/srv/data")], user_of, lambda p: p in MODES, "/root/project",
                            blocked(MODES), fake_stat(MODES)) == []
    assert workdir_warnings([mxjob(run_as=0)], user_of, lambda p: p in MODES, "/root/project",
                            blocked(MODES), fake_stat(MODES)) == []
    # a workingDir that does not exist here: the node's directory is used, and checked
    assert len(workdir_warnings([mxjob("/nowhere")], user_of, lambda p: p in MODES, "/root/project",
                                blocked(MODES), fake_stat(MODES))) == 1


def test_in_the_sandbox_a_folder_under_tmp_is_bound_in_so_only_its_own_mode_counts():
    modes = {"/": (0o755, 0), "/tmp": (0o1777, 0), "/tmp/pytest-of-root": (0o700, 0),
             "/tmp/pytest-of-root/t": (0o777, 0), "/tmp/pytest-of-root/private": (0o700, 0)}
    nobody = RunAs(65534, 65534)
    assert cwd_blocked("/tmp/pytest-of-root/t", nobody, True, fake_stat(modes)) is None
    assert cwd_blocked("/tmp/pytest-of-root/private", nobody, True, fake_stat(modes)) == "/tmp/pytest-of-root/private"
    assert cwd_blocked("/tmp/pytest-of-root/t", nobody, False, fake_stat(modes)) == "/tmp/pytest-of-root"


def test_pod_templates_are_found_in_any_job_shape():
    generic = {"spec": {"replicaSpecs": [{"type": "worker", "template": {"spec": {"containers": [{"name": "a"}]}}}]}}
    assert [t["spec"]["containers"][0]["name"] for t in pod_templates(generic)] == ["a"]
    assert len(list(pod_templates(mxjob()["spec"]))) == 2


@pytest.mark.slow
@pytest.mark.xdist_group("local-run")
@pytest.mark.skipif(os.geteuid() != 0, reason="containers run as nobody only when local run runs as root")
def test_run_as_root_from_a_0700_directory_warns_first_and_shows_the_chdir_failure():
    with tempfile.TemporaryDirectory() as folder:   # mktemp -d: mode 0700, root's
        os.chmod(folder, 0o700)
        job = Path(folder, "job.yaml")
        job.write_text("""apiVersion: kubeflow.org/v1
kind: MXJob
metadata: {name: private}
spec:
  mxReplicaSpecs:
    Worker:
      restartPolicy: Never
      template:
        spec:
          containers: [{name: mxnet, image: mxnet/python, command: [python3, -c, "print('never')"]}]
""")
        run = subprocess.run([sys.executable, "-m", "mxjob_controller", "local", "run", "--timeout", "60",
                              "job.yaml"], cwd=folder, capture_output=True, text=True, timeout=120, check=False,
                             env=clean_env(PYTHONPATH=str(ROOT)))
    assert run.returncode == 1, run.stdout + run.stderr
    assert f"Warning: the containers of MXJob default/private run as nobody (65534:65534), who cannot enter " \
           f"{folder} (mode 0700, owner uid 0)" in run.stderr, run.stderr
    assert "--- pod private-worker-0 container mxnet exited with 128 (StartError); its last lines:" in run.stdout
    assert f"[private-worker-0] (terminated.message) failed to start container process: chdir to cwd ('{folder}') " \
           "set in config.json failed: Permission denied" in run.stdout, run.stdout

"""Each local cluster has a kubeconfig of its own: ``local/kubeconfig_claim.py``'s claims (a lock held for the
cluster's life, freed by the kernel however it ends), and two ``local run`` started at once in one checkout, each
with kubectl working against it for its whole life; ``local up`` refuses a kubeconfig a running cluster holds."""

from __future__ import annotations

import os
import re
import signal
import subprocess
import sys
import threading
from pathlib import Path

import pytest

from mxjob_controller.local.kubeconfig_claim import KubeconfigInUseError, claim_free, claim_path
from tests.local.test_run import ROOT, sleeper_job
from tests.run_process import clean_env
from tests.support import Kubectl, wait_for

KUBECONFIG = re.compile(r"export KUBECONFIG=(\S+)")


def test_a_claimed_path_is_refused_free_ones_are_numbered_and_a_release_frees_it(tmp_path):
    first = claim_path(tmp_path / "run-kubeconfig")
    with pytest.raises(KubeconfigInUseError, match=r"run-kubeconfig belongs to a local cluster that is running "
                                                   rf"\(pid {os.getpid()}\)"):
        claim_path(tmp_path / "run-kubeconfig")
    second = claim_free(tmp_path / "run-kubeconfig")
    assert second.path == tmp_path / "run-kubeconfig-2"
    first.path.write_text("first's")
    first.written()
    first.release()
    assert not first.path.exists() and first.lock_path.exists()   # the lock file stays, unlocked
    third = claim_free(tmp_path / "run-kubeconfig")
    assert third.path == tmp_path / "run-kubeconfig"
    third.path.write_text("third's")
    third.written()
    third.path.write_text("someone else's")       # replaced behind its back: not removed as its own
    third.release()
    assert third.path.read_text() == "someone else's"
    second.release()


@pytest.mark.integration
def test_a_claim_of_a_process_that_died_is_free_again(tmp_path):
    path = tmp_path / "kubeconfig"
    code = ("import sys, os; from mxjob_controller.local.kubeconfig_claim import claim_path; "
            f"claim_path({str(path)!r}); print('held', flush=True); os.kill(os.getpid(), 9)")
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=60, check=False)
    assert done.stdout == "held\n" and done.returncode == -9, done
    claim_path(path).release()   # SIGKILLed: the kernel let its lock go


class LocalRun:
    """``local run`` started in the background, in the checkout, with its default kubeconfig."""

    def __init__(self, job: Path) -> None:
        self.proc = subprocess.Popen([sys.executable, "-m", "mxjob_controller", "local", "run", str(job)], cwd=ROOT,
                                     stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, env=clean_env())
        self.out: list[str] = []
        self._reader = threading.Thread(target=lambda: self.out.extend(self.proc.stdout), daemon=True,
                                        name="local-run-stdout")
        self._reader.start()

    def kubeconfig(self) -> Path:
        def said() -> str | None:
            if self.proc.poll() is not None:
                raise AssertionError(f"local run ended: {self.out} {self.proc.stderr.read()}")
            found = [m.group(1) for line in list(self.out) if (m := KUBECONFIG.search(line))]
            return found[0] if found else None
        return Path(wait_for(said, timeout=60, what="local run's kubeconfig"))

    def stop(self) -> int:
        self.proc.send_signal(signal.SIGINT)
        code = self.proc.wait(timeout=60)
        self._reader.join(10)
        return code


@pytest.mark.slow
@pytest.mark.xdist_group("local-run")
def test_two_local_runs_at_once_in_one_checkout_each_serve_kubectl_for_their_whole_life(tmp_path):
    (tmp_path / "a").mkdir()
    (tmp_path / "b").mkdir()
    first = LocalRun(sleeper_job(tmp_path / "a"))
    second = None
    try:
        first_config = first.kubeconfig()
        second = LocalRun(sleeper_job(tmp_path / "b"))
        second_config = second.kubeconfig()
        assert first_config != second_config, "each has a kubeconfig of its own"
        for config in (first_config, second_config):   # the default: run-kubeconfig, else -2, -3…
            assert config.parent == ROOT / ".mxjob-local" and config.name.startswith("run-kubeconfig"), config
        kubectls = [Kubectl(first_config, tmp_path / "cache-a"), Kubectl(second_config, tmp_path / "cache-b")]
        servers = set()
        for kubectl in kubectls:
            wait_for(lambda k=kubectl: "mxjob.kubeflow.org/sleepy" in k.ok("get", "mxjobs", "-o", "name").split(),
                     timeout=30, what="the run's job, through kubectl")
            servers.add(kubectl.ok("config", "view", "--minify", "-o", "jsonpath={.clusters[0].cluster.server}"))
        assert len(servers) == 2, "two clusters, one each"
        assert first.stop() == 130
        assert not first_config.exists(), "the first run's kubeconfig went with it"
        # the second, still running, is still reached through its own kubeconfig
        assert "mxjob.kubeflow.org/sleepy" in kubectls[1].ok("get", "mxjobs", "-o", "name").split()
    finally:
        if first.proc.poll() is None:
            first.stop()
        if second is not None:
            assert second.stop() == 130
            assert not second_config.exists()


@pytest.mark.slow
def test_local_up_refuses_a_kubeconfig_a_running_cluster_holds(tmp_path):
    kubeconfig = tmp_path / "kubeconfig"
    holder = claim_path(kubeconfig)
    try:
        refused = subprocess.run([sys.executable, "-m", "mxjob_controller", "local", "up", "--kubeconfig-out",
                                  str(kubeconfig)], capture_output=True, text=True, timeout=60, check=False,
                                 env=clean_env())
    finally:
        holder.release()
    assert refused.returncode == 2, refused.stderr
    assert f"{kubeconfig} belongs to a local cluster that is running (pid " in refused.stderr
    assert "--kubeconfig-out" in refused.stderr

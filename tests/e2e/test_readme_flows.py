"""The command blocks of README.md, ``docs/`` and ``examples/README.md`` run as they are written.

Every fenced ``sh`` block is either run by a test of this module, which selects the blocks by the heading they stand
under (``RUN_HERE``), or marked on the line before its fence with ``<!-- not run: REASON -->``; a ``python`` block is
run by the test that reads it (``READ_ELSEWHERE``) or marked the same way. A block that is neither fails
:func:`test_every_command_block_is_run_or_marked_not_run`, so a flow moved to another file or heading is still run,
or the move is seen.

The blocks are taken from the files at test time and run by bash (``-euo pipefail``: every command must succeed)
with the real CLI and ``/usr/bin/kubectl``, in a temporary directory laid out as a checkout (``.venv`` → this run's
virtualenv, ``examples/`` and ``manifests/`` → the checkout's), so the blocks' relative paths hold. What is changed,
and only that: the quick start's ``make venv`` line is dropped (the virtualenv exists), and the environment sets
``MXJOB_METRICS_BIND_ADDRESS=0`` and ``MXJOB_HEALTH_PROBE_BIND_ADDRESS=0`` (no fixed ports :8080/:8081 for
``mxjob-controller run`` on a machine running tests side by side).
"""

from __future__ import annotations

import os
import re
import shutil
import signal
import subprocess
import sys
from dataclasses import dataclass
from pathlib import Path

import pytest

from tests.local_support import group_alive
from tests.manifests import ROOT
from tests.run_process import clean_env
from tests.support import wait_for

DOCS = ("README.md", *sorted(f"docs/{p.name}" for p in (ROOT / "docs").glob("*.md")), "examples/README.md")
COMMANDS = {"sh", "bash", "shell", "console"}

README_LOCAL_RUN = ("README.md", "## Run jobs on this machine: `local run`")
LOCAL_RUN = ("docs/local-cluster.md", "## Run jobs on this machine: `local run`")
LOCAL_UP = ("docs/local-cluster.md", "## Start a cluster: `local up`")
IN_CLUSTER = ("docs/local-cluster.md", "### Run the controller as in a pod")
SWEEP = ("docs/local-cluster.md", "## Run a sweep on this machine: capacity, queues and gangs")
RUN = ("docs/operations.md", "## `mxjob-controller run`")
SDK = ("docs/local-cluster.md", "## From Python: the Kubeflow Training SDK")
CHAOS = ("docs/reliability.md", "## The chaos run: `make chaos`")
POD_SECURITY = ("docs/local-cluster.md", "## Pod Security Admission")

# (file, heading) → the test here that runs the section's sh blocks, and how many it expects there.
RUN_HERE = {
    README_LOCAL_RUN: ("test_readme_local_run", 1),
    LOCAL_RUN: ("test_local_run_flow", 1),
    LOCAL_UP: ("test_readme_local_up_quick_start", 2),
    IN_CLUSTER: ("test_readme_in_cluster_flow", 1),
    SWEEP: ("test_sweep_flow", 1),
    RUN: ("test_run_against_local_up", 1),
    CHAOS: ("test_chaos_help_knows_every_flag_the_chaos_lines_use", 1),
    POD_SECURITY: ("test_pod_security_flow", 1),
}
# (file, heading, language) → the test module that reads and runs that block (it names the file and the heading).
READ_ELSEWHERE = {
    (*SDK, "python"): "tests/e2e/test_sdk_client.py",
    ("docs/local-cluster.md", "### What `local run` checks, shows and exits with", "sh"): "tests/local/test_docs.py",
    ("docs/local-cluster.md", "## Shell completion", "sh"): "tests/local/test_docs.py",
}

NOT_RUN = re.compile(r"^<!-- not run: (.+?) -->$")


@dataclass(frozen=True)
class Block:
    """One fenced block of a document: where it stands, its language and text, and why it is not run (if marked)."""

    path: str
    heading: str
    line: int
    lang: str
    text: str
    not_run: str | None


def doc_blocks(path: str) -> list[Block]:
    """Every fenced block of ``path`` (relative to the checkout), under the nearest heading above it."""
    blocks, heading, fence, body, previous = [], "", None, [], ""
    for number, line in enumerate((ROOT / path).read_text().splitlines(), 1):
        if fence is not None:
            if line == "```":
                blocks.append(Block(path, heading, fence[0], fence[1], "\n".join(body) + "\n", fence[2]))
                fence = None
            else:
                body.append(line)
            continue
        if line.startswith("```"):
            marked = NOT_RUN.match(previous)
            fence, body = (number, line[3:].strip(), marked.group(1) if marked else None), []
        elif line.startswith("#"):
            heading = line
        if line.strip():
            previous = line.strip()
    assert fence is None, f"{path}:{fence[0]}: a fence that never closes"
    return blocks


def all_blocks() -> list[Block]:
    return [b for path in DOCS for b in doc_blocks(path)]


def blocks(section: tuple[str, str]) -> list[str]:
    """The ``sh`` blocks of one section that are to run, in order."""
    path, heading = section
    return [b.text for b in doc_blocks(path) if b.heading == heading and b.lang in COMMANDS and b.not_run is None]


def checkout_like(tmp_path: Path) -> Path:
    """A directory where the blocks' relative paths resolve, and ``.mxjob-local/`` is the test's own. ``examples/``
    is a copy, not a link: the pods read their scripts from it, and a checkout cloned under /tmp (as the brief's
    fresh-clone run is) lies in what the pod sandbox gives each pod as its own /tmp, where a link to it leads nowhere
    (the working directory alone is passed through)."""
    work = tmp_path / "checkout"
    work.mkdir()
    (work / ".venv").symlink_to(sys.prefix)
    shutil.copytree(ROOT / "examples", work / "examples", ignore=shutil.ignore_patterns("__pycache__"))
    (work / "manifests").symlink_to(ROOT / "manifests")   # read by kubectl on this machine only
    return work


def shell_env(**extra: str) -> dict[str, str]:
    return clean_env(MXJOB_METRICS_BIND_ADDRESS="0", MXJOB_HEALTH_PROBE_BIND_ADDRESS="0", **extra)


def start(script: str, work: Path, log: Path) -> subprocess.Popen:
    """``script`` in a session of its own (so every process it starts can be signalled together), output to ``log``."""
    with open(log, "w") as out:
        return subprocess.Popen(["bash", "-euo", "pipefail", "-c", script], cwd=work, env=shell_env(), stdout=out,
                                stderr=subprocess.STDOUT, start_new_session=True)


def run_to_end(script: str, work: Path, timeout: float) -> subprocess.CompletedProcess:
    done = subprocess.run(["bash", "-euo", "pipefail", "-c", script], cwd=work, env=shell_env(), capture_output=True,
                          text=True, timeout=timeout, check=False)
    assert done.returncode == 0, f"{done.stdout}\n{done.stderr}"
    return done


def stop_group(proc: subprocess.Popen, sig: int = signal.SIGTERM) -> None:
    """Signal every process a block started (each block runs in a session of its own) and wait for the shell."""
    try:
        os.killpg(proc.pid, sig)
    except ProcessLookupError:
        return
    try:
        proc.wait(timeout=30)
    except subprocess.TimeoutExpired:
        os.killpg(proc.pid, signal.SIGKILL)
        proc.wait(timeout=10)


def kubectl(work: Path, *args: str) -> str:
    done = subprocess.run(["/usr/bin/kubectl", *args], cwd=work, capture_output=True, text=True, timeout=120,
                          check=False, env=clean_env(KUBECONFIG=str(work / ".mxjob-local" / "kubeconfig")))
    assert done.returncode == 0, f"kubectl {' '.join(args)}: {done.stdout}\n{done.stderr}"
    return done.stdout


# --- what every document's blocks are -------------------------------------------------------------------------------

def test_every_command_block_is_run_or_marked_not_run():
    """Each ``sh`` block stands under a heading this module runs, or says why it is not run; each ``python`` block
    is run by the module that reads it, or says why not; every fence names its language."""
    unaccounted = []
    for b in all_blocks():
        where = f"{b.path}:{b.line} (under {b.heading!r})"
        assert b.lang, f"{where}: a fence without a language (sh for commands, text for output)"
        if b.not_run is not None:
            continue
        run_here = b.lang in COMMANDS and (b.path, b.heading) in RUN_HERE
        read_elsewhere = (b.path, b.heading, b.lang) in READ_ELSEWHERE
        if (b.lang in COMMANDS or b.lang == "python") and not (run_here or read_elsewhere):
            unaccounted.append(where)
    assert not unaccounted, "blocks neither run nor marked <!-- not run: REASON -->:\n  " + "\n  ".join(unaccounted)


def test_readme_has_the_flows_this_module_runs():
    for section, (test, count) in RUN_HERE.items():
        assert len(blocks(section)) == count, (section, blocks(section))
        assert callable(globals().get(test)), f"{section}: no test {test} in this module"
    assert blocks(LOCAL_UP)[0].splitlines()[0].startswith("make venv")
    assert "local up" in blocks(LOCAL_UP)[0] and "kubectl create" in blocks(LOCAL_UP)[1]
    assert "mxjob-controller run" in blocks(IN_CLUSTER)[0] and "mxjob-controller run" in blocks(RUN)[0]


def test_a_block_read_elsewhere_is_read_by_that_module():
    """The module named for a block reads it from the same file and heading (so moving it breaks that module)."""
    for (path, heading, lang), module in READ_ELSEWHERE.items():
        assert [b for b in doc_blocks(path) if b.heading == heading and b.lang == lang], (path, heading, lang)
        source = (ROOT / module).read_text()
        assert path in source and heading in source, f"{module} does not read {path} {heading!r}"


def test_every_reason_for_not_running_a_block_names_what_exists():
    """A reason is said (not empty), and every test file or script it names exists."""
    for b in all_blocks():
        if b.not_run is None:
            continue
        assert len(b.not_run.split()) >= 4, f"{b.path}:{b.line}: say why the block is not run"
        for named in re.findall(r"\b((?:tests|hack|docs|manifests)/[\w./-]+)", b.not_run):
            assert (ROOT / named.rstrip(".,;")).exists(), f"{b.path}:{b.line}: {named} does not exist"


# --- the flows ------------------------------------------------------------------------------------------------------

@pytest.mark.slow
def test_readme_local_run(tmp_path):
    """README's three examples, the real MXNet training among them, each to success."""
    (flow,) = blocks(README_LOCAL_RUN)
    done = run_to_end(flow, checkout_like(tmp_path), timeout=900)
    assert done.stdout.count("all 1 job(s) succeeded") == 3, done.stdout
    assert re.search(r"^\[mxnet-digits-worker-0\] final test accuracy 0\.9\d* after 10 epochs$", done.stdout, re.M)
    assert "[mxtune-tuner-0] best configuration:" in done.stdout
    assert "[tf-config-check-chief-0] chief-0 reached every peer" in done.stdout


@pytest.mark.slow
def test_local_run_flow(tmp_path):
    """One job of each kind side by side, then one from standard input."""
    (flow,) = blocks(LOCAL_RUN)
    done = run_to_end(flow, checkout_like(tmp_path), timeout=600)
    assert "all 3 job(s) succeeded" in done.stdout and "all 1 job(s) succeeded" in done.stdout, done.stdout
    for job in ("default/mxnet-dist ", "default/tf-dist ", "default/rendezvous ", "default/mxnet-single "):
        assert job in done.stdout, done.stdout


@pytest.mark.integration
def test_readme_local_up_quick_start(tmp_path):
    """``local up`` (HTTPS by default) in one shell, the kubectl block in another, the kubeconfig as written."""
    up_block, kubectl_block = blocks(LOCAL_UP)
    work = checkout_like(tmp_path)
    kubeconfig = work / ".mxjob-local" / "kubeconfig"
    up_script = "\n".join(line for line in up_block.splitlines() if not line.startswith("make venv"))
    up = start(up_script, work, tmp_path / "up.log")
    try:
        wait_for(lambda: kubeconfig.exists() or up.poll() is not None, timeout=60, what="local up's kubeconfig")
        assert up.poll() is None, (tmp_path / "up.log").read_text()
        assert "certificate-authority-data" in kubeconfig.read_text()
        done = run_to_end(kubectl_block, work, timeout=180)
        assert "mxjob.kubeflow.org/mxnet-dist condition met" in done.stdout
        assert "DMLC_ROLE=worker" in done.stdout, "the worker's log"
    finally:
        stop_group(up, signal.SIGINT)   # Ctrl-C, as the document says
    assert up.returncode == 0, (tmp_path / "up.log").read_text()
    assert not kubeconfig.exists()


@pytest.mark.slow
def test_readme_in_cluster_flow(tmp_path):
    """The install's CRDs and RBAC applied with kubectl, the controller under its ServiceAccount with in-cluster
    configuration running a job, and the block's own ``kill`` stopping both."""
    (flow,) = blocks(IN_CLUSTER)
    work = checkout_like(tmp_path)
    shell = subprocess.Popen(["bash", "-euo", "pipefail", "-c", flow], cwd=work, env=shell_env(),
                             stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True, start_new_session=True)
    try:
        out, _ = shell.communicate(timeout=240)
    except subprocess.TimeoutExpired:
        stop_group(shell)
        out, _ = shell.communicate()
        raise AssertionError(f"the in-cluster flow did not finish in 240 s:\n{out}") from None
    try:
        assert shell.returncode == 0, out
        assert "customresourcedefinition.apiextensions.k8s.io/mxjobs.kubeflow.org created" in out
        assert "serviceaccount/mxjob-controller created" in out
        assert "kubernetes-admin" in out, "kubectl auth whoami"
        assert "mxjob.kubeflow.org/mxnet-dist condition met" in out
        assert "(in-cluster service account)" in out, "run used the token directory, not a kubeconfig"
        wait_for(lambda: not group_alive(shell.pid), timeout=30, what="the cluster and the controller stopped by kill")
    finally:
        stop_group(shell)
    assert not (work / ".mxjob-local" / "kubeconfig").exists()


@pytest.mark.slow
def test_sweep_flow(tmp_path):
    """The examples under a capacity to success, then a cluster with that capacity acting as Volcano, stopped by
    Ctrl-C."""
    (flow,) = blocks(SWEEP)
    work = checkout_like(tmp_path)
    kubeconfig = work / ".mxjob-local" / "kubeconfig"
    log = tmp_path / "sweep.log"
    shell = start(flow, work, log)
    try:
        wait_for(lambda: kubeconfig.exists() or shell.poll() is not None, timeout=300, what="local up's kubeconfig")
        assert shell.poll() is None, log.read_text()
        assert "all 4 job(s) succeeded" in log.read_text(), log.read_text()
        assert kubectl(work, "get", "node", "local", "-o", "jsonpath={.status.allocatable.cpu}") == "4"
        assert "podgroups.scheduling.volcano.sh" in kubectl(work, "get", "crd", "podgroups.scheduling.volcano.sh")
    finally:
        stop_group(shell, signal.SIGINT)   # Ctrl-C
    assert shell.returncode == 0, log.read_text()
    assert not kubeconfig.exists()


@pytest.mark.slow
def test_run_against_local_up(tmp_path):
    """``run`` against the embedded server's kubeconfig reconciles a job; Ctrl-C stops it cleanly, then the server
    stops as ``kill %1`` stops it."""
    (flow,) = blocks(RUN)
    work = checkout_like(tmp_path)
    kubeconfig = work / ".mxjob-local" / "kubeconfig"
    log = tmp_path / "run.log"
    shell = start(flow, work, log)
    try:
        wait_for(lambda: "controller running" in log.read_text() or shell.poll() is not None, timeout=120,
                 what="run's controller running")
        assert shell.poll() is None, log.read_text()
        kubectl(work, "create", "-f", "examples/mxjob-dist-train.yaml")
        assert "condition met" in kubectl(work, "wait", "--for=condition=Succeeded", "mxjob/mxnet-dist",
                                          "--timeout=120s")
        os.killpg(shell.pid, signal.SIGINT)   # Ctrl-C reaches run, the foreground command
        wait_for(lambda: "stopped cleanly" in log.read_text(), timeout=30, what="run stopped cleanly")
    finally:
        stop_group(shell)                       # the server, as kill %1 stops it
        wait_for(lambda: not group_alive(shell.pid), timeout=30, what="every process of the flow stopped")
    assert not kubeconfig.exists(), log.read_text()



@pytest.mark.integration
def test_chaos_help_knows_every_flag_the_chaos_lines_use(tmp_path):
    """The help block runs; the long and short chaos runs (not run here: minutes of both cores) use only flags it
    lists, so the lines stay runnable as written."""
    (help_block,) = blocks(CHAOS)
    work = checkout_like(tmp_path)
    (work / "hack").symlink_to(ROOT / "hack")
    usage = run_to_end(help_block, work, timeout=60).stdout
    marked = [b.text for b in doc_blocks(CHAOS[0]) if b.heading == CHAOS[1] and b.not_run is not None]
    flags = {f for text in marked for line in text.splitlines() if "chaos" in line
             for f in re.findall(r"(?<![\w-])(--[a-z][\w-]*)", line.split("#")[0])}
    assert {"--seed", "--jobs", "--kills", "--large", "--duration", "--malformed"} <= flags, flags
    assert not {f for f in flags if f not in usage}, usage


@pytest.mark.integration
def test_pod_security_flow(tmp_path):
    """The labels and kubectl runs of the Pod Security section against ``local up``: what they print (stdout and
    stderr together, as a terminal shows them) is the ``text`` block that follows, line for line."""
    (flow,) = blocks(POD_SECURITY)
    shown = next(b.text for b in doc_blocks(POD_SECURITY[0]) if b.heading == POD_SECURITY[1] and b.lang == "text")
    work = checkout_like(tmp_path)
    kubeconfig = work / ".mxjob-local" / "kubeconfig"
    up = start(".venv/bin/mxjob-controller local up --port 0 --kubelet none --no-controller --no-crds "
               "--kubeconfig-out .mxjob-local/kubeconfig", work, tmp_path / "up.log")
    try:
        wait_for(lambda: kubeconfig.exists() or up.poll() is not None, timeout=60, what="local up's kubeconfig")
        assert up.poll() is None, (tmp_path / "up.log").read_text()
        done = subprocess.run(["bash", "-euo", "pipefail", "-c", flow], cwd=work, env=shell_env(),
                              stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True, timeout=120, check=False)
        assert done.returncode == 0, done.stdout
        assert done.stdout == shown
    finally:
        stop_group(up, signal.SIGINT)

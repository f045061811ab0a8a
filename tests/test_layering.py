"""What the import contracts (``[tool.importlinter]`` in ``pyproject.toml``, run by ``make lint``) cannot say, and
proof that they can fail.

The contracts declare the layers (``cli > local > manager > webhooks > frameworks > (mxnet | tensorflow | generic) >
kubeflow_api > core > runtime > kube``), the frameworks' independence, that the operator never imports the
embedded cluster (``mxjob_controller/local/``), and no import circle at any level. Checked here: they pass, a planted
violation of each breaks them, the operator's entry points load nothing of ``local`` at run time, every framework
has the same shape, and no two modules define the same constant."""

from __future__ import annotations

import ast
import re
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

PACKAGE = Path(__file__).resolve().parent.parent / "mxjob_controller"
PYPROJECT = PACKAGE.parent / "pyproject.toml"
LINT_IMPORTS = Path(sys.executable).parent / "lint-imports"
#: The modules every framework package has, so a reader finds the same thing in the same place in each.
FRAMEWORK_MODULES = ("api.py", "crd.py", "wiring.py", "status_rules.py", "framework.py")


def lint_imports(cwd: Path) -> subprocess.CompletedProcess:
    """``lint-imports`` with the project's contracts, over the package found first on the path at ``cwd``."""
    return subprocess.run([str(LINT_IMPORTS), "--config", str(PYPROJECT), "--no-cache"], cwd=cwd,
                          env={"PATH": "/usr/bin:/bin", "PYTHONPATH": str(cwd)}, capture_output=True, text=True,
                          timeout=120, check=False)


def broken_contracts(report: str) -> list[str]:
    """The names of the contracts ``lint-imports`` reports BROKEN (it wraps a long name over several lines)."""
    text = " ".join(report.split())
    summary = re.split(r"dependencies\. -+ ", text, maxsplit=1)[1].split(" Contracts: ")[0]
    return [name for name, verdict in re.findall(r"(.+?) (KEPT|BROKEN) ?", summary) if verdict == "BROKEN"]


@pytest.mark.integration
def test_the_import_contracts_hold() -> None:
    done = lint_imports(PACKAGE.parent)
    assert done.returncode == 0, done.stdout + done.stderr
    assert "5 kept, 0 broken" in done.stdout


@pytest.mark.parametrize(("module", "planted", "broken"), [
    ("core/_probe.py", "import mxjob_controller.mxnet.api\n", "cli > local > manager"),
    ("generic/_probe.py", "import mxjob_controller.manager.settings\n", "cli > local > manager"),
    ("kubeflow_api/_probe.py", "from mxjob_controller import frameworks\n", "cli > local > manager"),
    ("runtime/_probe.py", "def f():\n    from mxjob_controller.local.apiserver import errors\n",
     "never imports the embedded cluster"),
    ("mxnet/_probe.py", "from mxjob_controller.tensorflow import api\n", "do not import each other"),
    ("local/apiserver/_probe.py", "from mxjob_controller.core import pods\n", "know no Kubeflow kind"),
    # kube/schema/rules/common.py imports kube.names: names importing it back is a circle
    ("kube/names.py", "import mxjob_controller.kube.schema.rules.common\n", "No import circle"),
], ids=["core-imports-a-framework", "generic-imports-the-manager", "kubeflow_api-imports-above",
        "runtime-imports-local", "mxnet-imports-tensorflow", "apiserver-imports-core", "a-circle-in-kube"])
@pytest.mark.integration
def test_each_contract_breaks_on_a_planted_import(tmp_path: Path, module: str, planted: str, broken: str) -> None:
    """The contracts are not vacuous: a copy of the package with one planted import (a function-level one too)
    breaks the contract it violates. The probe goes into a copy under ``tmp_path``, never the real package, which
    other tests read at the same time."""
    copy = tmp_path / "mxjob_controller"
    shutil.copytree(PACKAGE, copy, ignore=shutil.ignore_patterns("__pycache__"))
    target = copy / module
    target.write_text(planted + (target.read_text() if target.exists() else ""))
    done = lint_imports(tmp_path)
    assert done.returncode == 1, done.stdout
    assert any(broken in name for name in broken_contracts(done.stdout)), done.stdout


@pytest.mark.integration
def test_the_operator_loads_nothing_of_the_embedded_cluster() -> None:
    """At run time too (a contract reads the source; this imports it): what ``mxjob-controller run``, the webhook
    server and the manager load holds no ``mxjob_controller.local`` module."""
    probe = ("import mxjob_controller.cli.run, mxjob_controller.webhooks.server, mxjob_controller.manager, sys; "
             "print([m for m in sys.modules if m.startswith('mxjob_controller.local')])")
    done = subprocess.run([sys.executable, "-c", probe], capture_output=True, text=True, timeout=60, check=True,
                          cwd=PACKAGE.parent)
    assert done.stdout.strip() == "[]"


@pytest.mark.parametrize("framework", ["mxnet", "tensorflow", "generic"])
def test_every_framework_has_the_same_shape(framework: str) -> None:
    assert [m for m in FRAMEWORK_MODULES if not (PACKAGE / framework / m).is_file()] == []


def test_the_old_api_package_is_gone() -> None:
    """MXJob's API lives in ``mxnet/``, the shared part in ``kubeflow_api/``: no third place to look."""
    assert list((PACKAGE / "api").glob("**/*.py")) == []


# --- one definition per constant ----------------------------------------------------------------------------


def constant_definitions(root: Path) -> dict[str, set[str]]:
    """What each module-level UPPER_CASE constant under ``root`` is bound to → ``"module:NAME"`` of every binding,
    whether alone (``A = 1``), annotated (``A: int = 1``) or unpacked (``A, B = 1, 2``). A string (of two characters
    or more) is keyed by its value alone, so the same literal under two names is seen (``COND_CREATED`` beside
    ``CREATED``); any other literal by its name and value (a ``3`` is not a concept)."""
    found: dict[str, set[str]] = {}
    for path in sorted(root.rglob("*.py")):
        for node in ast.parse(path.read_text()).body:
            if isinstance(node, ast.Assign):
                targets, value = node.targets, node.value
            elif isinstance(node, ast.AnnAssign) and node.value is not None:
                targets, value = [node.target], node.value
            else:
                continue
            for target in targets:
                if isinstance(target, ast.Name):
                    pairs = [(target, value)]
                elif isinstance(target, ast.Tuple) and isinstance(value, ast.Tuple):
                    pairs = list(zip(target.elts, value.elts, strict=False))
                else:
                    continue
                for name, literal in pairs:
                    if isinstance(name, ast.Name) and name.id.isupper() and isinstance(literal, ast.Constant):
                        text = literal.value
                        key = repr(text) if isinstance(text, str) and len(text) > 1 else f"{name.id}={text!r}"
                        found.setdefault(key, set()).add(f"{path.relative_to(root).as_posix()}:{name.id}")
    return found


def duplicated_constants(root: Path) -> dict[str, set[str]]:
    """The constants bound in more than one module."""
    return {key: where for key, where in constant_definitions(root).items()
            if len({w.partition(":")[0] for w in where}) > 1}


# Separate vocabularies that merely share a literal: each binding means something else (another API's enum, another
# concept), or the two modules may not import each other.
SEPARATE_VOCABULARIES: dict[str, set[str]] = {
    # a Kubeflow job condition, a pod phase, GenericJob's conditions and phases, a Volcano PodGroup phase, v1alpha1's
    # phases and replica states, the clean-pod policy Running: seven APIs' enums
    "'Failed'": {"core/job_vocabulary.py:FAILED", "generic/status.py:FAILED", "generic/status.py:PHASE_FAILED",
                 "kube/vocabulary.py:POD_FAILED", "local/scheduler/placement.py:PG_FAILED",
                 "mxnet/v1alpha1/vocabulary.py:PHASE_FAILED", "mxnet/v1alpha1/vocabulary.py:STATE_FAILED"},
    "'Running'": {"core/finished_jobs.py:CLEAN_RUNNING", "core/job_vocabulary.py:RUNNING",
                  "core/podgroups.py:PHASE_RUNNING", "generic/status.py:PHASE_RUNNING", "generic/status.py:RUNNING",
                  "kube/vocabulary.py:POD_RUNNING", "mxnet/v1alpha1/vocabulary.py:PHASE_RUNNING",
                  "mxnet/v1alpha1/vocabulary.py:STATE_RUNNING"},
    "'Succeeded'": {"core/job_vocabulary.py:SUCCEEDED", "generic/status.py:PHASE_SUCCEEDED",
                    "kube/vocabulary.py:POD_SUCCEEDED", "mxnet/v1alpha1/vocabulary.py:STATE_SUCCEEDED"},
    "'Pending'": {"core/podgroups.py:PHASE_PENDING", "generic/status.py:PHASE_PENDING",
                  "kube/vocabulary.py:POD_PENDING"},
    "'Unknown'": {"kube/vocabulary.py:POD_UNKNOWN", "mxnet/v1alpha1/vocabulary.py:STATE_UNKNOWN"},
    "'Completed'": {"generic/status.py:COMPLETED", "local/scheduler/placement.py:PG_COMPLETED"},
    "'Creating'": {"generic/status.py:CREATING", "mxnet/v1alpha1/vocabulary.py:PHASE_CREATING"},
    # a vanished pod's failure reason vs GenericJob's paused-and-deleted condition reason
    "'Deleted'": {"core/failure_policy.py:VANISHED_REASON", "generic/status.py:DELETED"},
    # each framework's replica type; frameworks may not import each other
    "'Worker'": {"mxnet/api.py:WORKER", "tensorflow/api.py:WORKER"},
    # Volcano's default queue vs a namespace's default ServiceAccount
    "'default'": {"core/podgroups.py:DEFAULT_QUEUE",
                  "local/apiserver/controllers/namespace_content.py:DEFAULT_SERVICE_ACCOUNT"},
    # the GC's work-item kind, a strategic-merge-patch directive ($patch: delete), an informer's notification kind
    "'delete'": {"local/apiserver/controllers/gc.py:_DELETE", "local/apiserver/patch/strategic_merge.py:DELETE",
                 "runtime/informer_listener.py:DELETE"},
    # the GC's orphaning work item vs the orphan finalizer
    "'orphan'": {"local/apiserver/controllers/gc.py:_ORPHAN", "local/apiserver/verbs/deletion.py:ORPHAN_FINALIZER"},
    # GenericJob's failed outcome vs a work queue item's result
    "'failed'": {"generic/status_rules.py:FAILED_OUTCOME", "local/apiserver/controllers/workqueue.py:_FAILED"},
    # GenericJob's label value, its CRD's singular name and its wiring's component name
    "'genericjob'": {"generic/api.py:LABEL_JOB", "generic/api.py:SINGULAR", "generic/wiring.py:COMPONENT"},
    # the local node's name vs v1alpha1's local job mode
    "'local'": {"local/kubelet/options.py:NODE_NAME", "mxnet/v1alpha1/vocabulary.py:LOCAL"},
    # the program's name, the default Lease's name, the operator-name label's value
    "'mxjob-controller'": {"manager/process.py:PROGRAM", "manager/settings.py:DEFAULT_LEASE_NAME",
                           "mxnet/framework.py:OPERATOR_NAME"},
    # MXJob's default container name vs its framework's name
    "'mxnet'": {"mxnet/api.py:DEFAULT_CONTAINER_NAME", "mxnet/framework.py:FRAMEWORK_NAME"},
    # MXJob's storage version, v1alpha1's status marker field value, TFJob's version
    "'v1'": {"mxnet/api.py:STORAGE_VERSION", "mxnet/v1alpha1/vocabulary.py:V1_STATUS_FIELD",
             "tensorflow/api.py:VERSION"},
    # GenericJob's active outcome vs the local scheduler's queue a pod waits in
    "'active'": {"generic/status_rules.py:ACTIVE", "local/scheduler/queue.py:ACTIVE"},
    # each thread's own stop budget, tuned on its own
    "_JOIN_TIMEOUT=5.0": {"runtime/endpoints.py:_JOIN_TIMEOUT", "runtime/lease_watch.py:_JOIN_TIMEOUT"},
}


def test_no_two_modules_define_the_same_constant() -> None:
    """A constant shared by two modules is defined once, in the lowest layer both may import (issue 31), under one
    name: the same string under two names in two modules is one concept defined twice, unless listed above."""
    assert duplicated_constants(PACKAGE) == SEPARATE_VOCABULARIES


def test_the_constant_check_finds_a_planted_duplicate(tmp_path: Path) -> None:
    """The checker is not vacuous: plain, annotated and unpacked assignments are all found, a string under another
    name too; lower case and non-literal values are not constants, nor a number under two names."""
    (tmp_path / "a.py").write_text('READY = "Ready"\nlimit = 3\nLIMIT = 3\nTIMEOUT: float = 2.0\nCOND_GO = "Go"\n')
    (tmp_path / "sub").mkdir()
    (tmp_path / "sub" / "b.py").write_text('GO, READY = "Go", "Ready"\nlimit = 3\nLIMIT = 1 + 2\nTIMEOUT = 2.0\n'
                                          'RETRIES = 3\n')
    assert duplicated_constants(tmp_path) == {"'Ready'": {"a.py:READY", "sub/b.py:READY"},
                                              "'Go'": {"a.py:COND_GO", "sub/b.py:GO"},
                                              "TIMEOUT=2.0": {"a.py:TIMEOUT", "sub/b.py:TIMEOUT"}}

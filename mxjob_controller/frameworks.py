"""The frameworks this operator runs, by the name ``run --frameworks`` takes: one table, so the command line, the
CRD generator (``hack/gen_crd.py``), the start-up CRD check and the local cluster agree on what exists.

    entry = FRAMEWORKS["tensorflow"]
    entry.framework()     # a fresh TensorFlowFramework
    entry.crd()           # the TFJob CRD object

Adding a framework is a package beside ``mxnet/``, ``tensorflow/`` and ``generic/`` plus one entry here.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from mxjob_controller.core.framework import Framework
from mxjob_controller.generic import api as generic_api
from mxjob_controller.generic.crd import genericjob_crd
from mxjob_controller.generic.defaults import admission_defaults as generic_defaults
from mxjob_controller.generic.framework import GenericFramework
from mxjob_controller.kubeflow_api.crd import rendered_files
from mxjob_controller.mxnet import api as mx_api
from mxjob_controller.mxnet.crd import mxjob_crd
from mxjob_controller.mxnet.framework import FRAMEWORK_NAME as MXNET
from mxjob_controller.mxnet.framework import MXNetFramework
from mxjob_controller.tensorflow import api as tf_api
from mxjob_controller.tensorflow.crd import tfjob_crd
from mxjob_controller.tensorflow.framework import TensorFlowFramework

TENSORFLOW = tf_api.FRAMEWORK_NAME
GENERIC = generic_api.FRAMEWORK_NAME


@dataclass(frozen=True, slots=True)
class FrameworkEntry:
    name: str                                  # what --frameworks takes: the metrics' ``framework`` label
    kind: str                                  # the job kind: MXJob
    crd_name: str                              # the CRD the controller needs: mxjobs.kubeflow.org
    framework: Callable[[], Framework]         # a fresh adapter
    crd: Callable[[], dict[str, Any]]          # the CRD object, as generated
    defaults: Callable[[dict[str, Any]], dict[str, Any]]   # a job → a copy with what admission defaults written in
    # a valid job → what admission warns of (a ``Warning:`` header each); none for most kinds
    warnings: Callable[[dict[str, Any]], list[str]] = lambda job: []


FRAMEWORKS: dict[str, FrameworkEntry] = {
    MXNET: FrameworkEntry(MXNET, mx_api.KIND, mx_api.CRD_NAME, MXNetFramework, mxjob_crd, mx_api.admission_defaults,
                          mx_api.job_warnings),
    TENSORFLOW: FrameworkEntry(TENSORFLOW, tf_api.KIND, tf_api.CRD_NAME, TensorFlowFramework, tfjob_crd,
                               tf_api.admission_defaults),
    GENERIC: FrameworkEntry(GENERIC, generic_api.KIND, generic_api.CRD_NAME, GenericFramework, genericjob_crd,
                            generic_defaults),
}
#: What ``run`` reconciles unless told otherwise: MXJobs always (the project's own kind: a missing CRD is an
#: error), TFJobs and GenericJobs where their CRDs are installed (else a warning).
DEFAULT_FRAMEWORKS = (MXNET, TENSORFLOW, GENERIC)
OPTIONAL_BY_DEFAULT = frozenset({TENSORFLOW, GENERIC})


def all_crds() -> list[dict[str, Any]]:
    """Every framework's CRD, in the table's order."""
    return [entry.crd() for entry in FRAMEWORKS.values()]


def crd_files() -> dict[str, str]:
    """Repository-relative path → content of every generated CRD file and their kustomization."""
    return rendered_files(all_crds())

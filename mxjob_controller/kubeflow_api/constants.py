"""The names and vocabularies every Kubeflow job kind of this project shares: the API group, the restart, clean-pod
and success policies, ``managedBy``, the run-policy fields and the replica defaults. The condition types are
kubeflow/common's, in ``core/job_vocabulary.py`` with the rules that set them.

Values match Kubeflow's Go API (training-operator ``kubeflow.org/v1``) so that existing manifests, clients and
dashboards keep working against this controller unchanged. A kind's own names (MXJob's replica types, job modes,
container and port; TFJob's) live in its package (``mxnet/api.py``, ``tensorflow/api.py``).
"""

from __future__ import annotations

from mxjob_controller.core.finished_jobs import CLEAN_ALL, CLEAN_NONE, CLEAN_RUNNING
from mxjob_controller.core.pods import RESTART_NEVER

GROUP = "kubeflow.org"

# --- policies --------------------------------------------------------------------------------------------

# Replica restart policies (RESTART_*) come from core/pods.py, beside failed_pod_outcome, the rule applying them.

# Clean-pod policies (CLEAN_*) come from core/finished_jobs.py, beside the rule applying them; Kubeflow's kinds take
# these three (GenericJob also takes Unfinished).
CLEAN_POD_POLICIES = (CLEAN_ALL, CLEAN_RUNNING, CLEAN_NONE)

#: ``""``: the default rules (the job is finished when the Scheduler or all Workers have completed);
#: ``AllWorkers``: it succeeds only when every Worker has.
SUCCESS_DEFAULT = ""
SUCCESS_ALL_WORKERS = "AllWorkers"
SUCCESS_POLICIES = (SUCCESS_DEFAULT, SUCCESS_ALL_WORKERS)

#: ``runPolicy.managedBy``: unset, our own name, or training-operator's (we are its drop-in) mean "this controller
#: reconciles the job"; any other value (e.g. MultiKueue's) hands the job to that controller entirely.
MANAGED_BY_SELF = "kubeflow.org/mxjob-controller"
MANAGED_BY_TRAINING_OPERATOR = "kubeflow.org/training-operator"
MANAGED_BY_MULTIKUEUE = "kueue.x-k8s.io/multikueue"
MANAGED_BY_OURS = (MANAGED_BY_SELF, MANAGED_BY_TRAINING_OPERATOR)

# --- run policy fields -----------------------------------------------------------------------------------

#: Run-policy fields the older API (mxnet-operator) accepts inline in ``spec``.
INLINE_RUN_POLICY_FIELDS = ("cleanPodPolicy", "ttlSecondsAfterFinished", "activeDeadlineSeconds", "backoffLimit",
                            "schedulingPolicy")
#: Fields of ``spec.runPolicy`` (training-operator).
RUN_POLICY_FIELDS = (*INLINE_RUN_POLICY_FIELDS, "suspend", "managedBy")
SCHEDULING_POLICY_FIELDS = ("minAvailable", "queue", "minResources", "priorityClass", "scheduleTimeoutSeconds")

# --- replicas --------------------------------------------------------------------------------------------

DEFAULT_REPLICAS = 1
DEFAULT_RESTART_POLICY = RESTART_NEVER
DEFAULT_CLEAN_POD_POLICY = CLEAN_ALL
#: Longest name a child Service (``<job>-<type>-<index>``) may have: a DNS-1035 label.
MAX_CHILD_NAME = 63

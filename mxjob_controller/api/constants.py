"""The MXJob API's names and vocabularies: the one place every other module takes them from.

Values match Kubeflow's Go MXJob API (mxnet-operator v1, training-operator ``kubeflow.org/v1``) so that
existing manifests, clients and dashboards keep working against this controller unchanged.
"""

from __future__ import annotations

from mxjob_controller.core.pods import (  # noqa: F401 (re-exported: the MXJob API's restart policies)
    RESTART_ALWAYS,
    RESTART_EXIT_CODE,
    RESTART_NEVER,
    RESTART_ON_FAILURE,
    RESTART_POLICIES,
)

# --- the resource ----------------------------------------------------------------------------------------

GROUP = "kubeflow.org"
KIND = "MXJob"
LIST_KIND = "MXJobList"
PLURAL = "mxjobs"
SINGULAR = "mxjob"
SHORT_NAMES = ("mxj",)
CRD_NAME = f"{PLURAL}.{GROUP}"
STORAGE_VERSION = "v1"
#: Every served version, storage first. They share one schema, so conversion is ``None``.
VERSIONS = ("v1", "v1beta1")
API_VERSION = f"{GROUP}/{STORAGE_VERSION}"

# --- replica types ---------------------------------------------------------------------------------------

SCHEDULER = "Scheduler"
SERVER = "Server"
WORKER = "Worker"
TUNER_TRACKER = "TunerTracker"
TUNER_SERVER = "TunerServer"
TUNER = "Tuner"
#: Canonical spelling, in the order jobs list them (and errors name them).
REPLICA_TYPES = (SCHEDULER, SERVER, WORKER, TUNER_TRACKER, TUNER_SERVER, TUNER)
#: Types a job runs exactly one of: the DMLC scheduler, the AutoTVM tracker and the tuner.
SINGLETON_TYPES = frozenset({SCHEDULER, TUNER_TRACKER, TUNER})
#: Every job needs one of these to do any work.
WORKLOAD_TYPES = (WORKER, TUNER)

# --- job modes -------------------------------------------------------------------------------------------

MODE_TRAIN = "MXTrain"
MODE_TUNE = "MXTune"
#: ``""`` means "no mode" (Go clients send it for an unset field): no replica type is required.
JOB_MODES = ("", MODE_TRAIN, MODE_TUNE)
MODE_REQUIRED_TYPES: dict[str, tuple[str, ...]] = {
    MODE_TRAIN: (SCHEDULER, SERVER, WORKER),
    MODE_TUNE: (TUNER_TRACKER, TUNER_SERVER, TUNER),
}

# --- policies --------------------------------------------------------------------------------------------

# Replica restart policies (RESTART_*) come from core/pods.py, beside failed_pod_outcome, the rule applying them.

CLEAN_POD_ALL = "All"
CLEAN_POD_RUNNING = "Running"
CLEAN_POD_NONE = "None"
CLEAN_POD_POLICIES = (CLEAN_POD_ALL, CLEAN_POD_RUNNING, CLEAN_POD_NONE)

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

# --- pods ------------------------------------------------------------------------------------------------

DEFAULT_CONTAINER_NAME = "mxnet"
DEFAULT_PORT_NAME = "mxjob-port"
DEFAULT_PORT = 9091
DEFAULT_REPLICAS = 1
DEFAULT_RESTART_POLICY = RESTART_NEVER
DEFAULT_CLEAN_POD_POLICY = CLEAN_POD_ALL
#: Template annotation that carries the AutoTVM RPC key when a replica spec has no ``label``.
TUNER_SERVER_KEY_ANNOTATION = "tuner-server-key"
#: Longest name a child Service (``<job>-<type>-<index>``) may have: a DNS-1035 label.
MAX_CHILD_NAME = 63

# --- status ----------------------------------------------------------------------------------------------

COND_CREATED = "Created"
COND_RUNNING = "Running"
COND_RESTARTING = "Restarting"
COND_SUCCEEDED = "Succeeded"
COND_FAILED = "Failed"
COND_SUSPENDED = "Suspended"
CONDITION_TYPES = (COND_CREATED, COND_RUNNING, COND_RESTARTING, COND_SUCCEEDED, COND_FAILED, COND_SUSPENDED)

#: Condition and event reasons, spelled as the Go operators spell them (``MXJob`` + what happened).
REASON_CREATED = "MXJobCreated"
REASON_RUNNING = "MXJobRunning"
REASON_RESTARTING = "MXJobRestarting"
REASON_SUCCEEDED = "MXJobSucceeded"
REASON_FAILED = "MXJobFailed"
REASON_SUSPENDED = "MXJobSuspended"
REASON_RESUMED = "MXJobResumed"
#: The spec is invalid: the condition's message lists every field error.
REASON_FAILED_VALIDATION = "MXJobFailedValidation"

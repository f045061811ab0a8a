"""The ``v1alpha1`` MXJob API's vocabulary and its ``openAPIV3Schema``: the words of the oldest mx-operator
(jzp1025/mx-operator ``pkg/apis/mxnet/v1alpha1/types.go``), the annotations that carry what the other version
cannot hold, and :class:`ConversionError`, which every step of the conversion raises for malformed input.

The schema is what the CRD's ``v1alpha1`` entry serves (``mxnet/crd_conversion.py``); it declares every field the
old clients write, so the API server prunes nothing a conversion needs.
"""

from __future__ import annotations

from typing import Any

from mxjob_controller.core.framework import MAX_REPLICAS_PER_TYPE
from mxjob_controller.kubeflow_api import crd
from mxjob_controller.kubeflow_api.constants import CLEAN_POD_POLICIES, GROUP
from mxjob_controller.kubeflow_api.crd_schema import structural
from mxjob_controller.mxnet.api import DEFAULT_PORT, SCHEDULER, SERVER, WORKER

VERSION = "v1alpha1"
API_VERSION = f"{GROUP}/{VERSION}"
V1_API_VERSION = f"{GROUP}/v1"
V1BETA1_API_VERSION = f"{GROUP}/v1beta1"
#: The versions of the v1 shape (v1beta1 differs from v1 in its apiVersion only).
V1_SHAPED = (V1_API_VERSION, V1BETA1_API_VERSION)

#: On a v1 object: what its v1alpha1 form had that v1 cannot hold (JSON; see the package docstring).
V1ALPHA1_EXTRA_ANNOTATION = "mxjob.kubeflow.org/v1alpha1-spec-extra"
#: On a v1alpha1 object: what its v1 form had that v1alpha1 cannot hold (JSON; see the package docstring).
V1_EXTRA_ANNOTATION = "mxjob.kubeflow.org/v1-spec-extra"
MANAGED_ANNOTATIONS = (V1ALPHA1_EXTRA_ANNOTATION, V1_EXTRA_ANNOTATION)

# --- the v1alpha1 vocabulary (jzp1025/mx-operator pkg/apis/mxnet/v1alpha1/types.go) ----------------------------------

ALPHA_SCHEDULER, ALPHA_SERVER, ALPHA_WORKER = "SCHEDULER", "SERVER", "WORKER"
ALPHA_TYPES = (ALPHA_SCHEDULER, ALPHA_SERVER, ALPHA_WORKER)
TO_V1_TYPE = {ALPHA_SCHEDULER: SCHEDULER, ALPHA_SERVER: SERVER, ALPHA_WORKER: WORKER}
TO_ALPHA_TYPE = {v: k for k, v in TO_V1_TYPE.items()}
DEFAULT_TYPE = ALPHA_WORKER
DEFAULT_PS_ROOT_PORT = DEFAULT_PORT     # 9091 in both versions
#: ``""`` behaves as ``All`` (the old controller's ``CleanupPodPolicy`` switch had ``All`` as its default case).
CLEANUP_POLICIES = ("", *CLEAN_POD_POLICIES)
#: The fork's ``jobMode``; ``""`` is what its Go client wrote for an unset one (the field has no ``omitempty``).
ALPHA_JOB_MODES = ("", "dist", "local")
DIST = "dist"
#: A single process: WORKER replicas only, at most this many (the old spec's ``Validate()``, seed ``mx_job.go``).
LOCAL = "local"
LOCAL_MAX_WORKERS = 1
PHASE_NONE, PHASE_CREATING, PHASE_RUNNING, PHASE_CLEANUP, PHASE_FAILED, PHASE_DONE = (
    "", "Creating", "Running", "CleanUp", "Failed", "Done")
PHASES = (PHASE_NONE, PHASE_CREATING, PHASE_RUNNING, PHASE_CLEANUP, PHASE_FAILED, PHASE_DONE)
STATE_UNKNOWN, STATE_RUNNING, STATE_SUCCEEDED, STATE_FAILED = "Unknown", "Running", "Succeeded", "Failed"
STATES = ("", STATE_UNKNOWN, STATE_RUNNING, STATE_SUCCEEDED, STATE_FAILED)
REPLICA_STATES = (STATE_UNKNOWN, STATE_RUNNING, STATE_FAILED, STATE_SUCCEEDED)
INVALID_REASON_PREFIX = "invalid job spec: "
V1_STATUS_FIELD = "v1"   # status.v1: the v1 status a v1alpha1 status was derived from
MAX_PORT = 65535


def default_termination_policy(job_mode: Any = None) -> dict[str, Any]:
    """``{chief: {replicaName: SCHEDULER, replicaIndex: 0}}``: the scheduler's exit decides (a fresh dict); in a
    ``local`` job, which has no scheduler, its one WORKER's."""
    return {"chief": {"replicaName": ALPHA_WORKER if job_mode == LOCAL else ALPHA_SCHEDULER, "replicaIndex": 0}}


#: The fields of a v1alpha1 spec, and of one of its replica specs; anything else rides in the annotation.
ALPHA_SPEC_FIELDS = ("RuntimeId", "replicaSpecs", "mxImage", "terminationPolicy", "cleanupPodPolicy", "schedulerName",
                     "jobMode")
ALPHA_ONLY_FIELDS = ("RuntimeId", "mxImage", "terminationPolicy", "schedulerName")
ALPHA_REPLICA_FIELDS = ("replicas", "template", "mxReplicaType", "PsRootPort")
#: The fields of a v1 replica spec v1alpha1 has a place for (``restartPolicy`` through its template).
V1_REPLICA_FIELDS = ("replicas", "restartPolicy", "template")


class ConversionError(ValueError):
    """The object cannot be converted because it is malformed; the message names the field."""


# --- schema --------------------------------------------------------------------------------------------------------

def spec_schema() -> dict[str, Any]:
    """The v1alpha1 spec: typed and structural (nothing preserved unknown), with the old API's exact keys."""
    replica = {"type": "object", "properties": {
        "mxReplicaType": crd.enum_schema(ALPHA_TYPES, "SCHEDULER (exactly 1), SERVER or WORKER (the default)."),
        "replicas": crd.int_schema(f"Number of pods of this type (default 1, at most {MAX_REPLICAS_PER_TYPE}).",
                                   minimum=1, maximum=MAX_REPLICAS_PER_TYPE),
        "PsRootPort": crd.int_schema(f"The port the replicas listen on (default {DEFAULT_PS_ROOT_PORT}); the "
                                     "SCHEDULER's is DMLC_PS_ROOT_PORT.", minimum=1, maximum=MAX_PORT),
        "template": crd.described(structural("io.k8s.api.core.v1.PodTemplateSpec"),
                                  "The pod of each replica; it needs a container named mxnet."),
    }}
    chief = {"type": "object", "properties": {
        "replicaName": crd.string_schema("The replica type whose exit decides the job's (default SCHEDULER)."),
        "replicaIndex": crd.int_schema("Which replica of that type (default 0).", minimum=0),
    }}
    return {"type": "object", "required": ["replicaSpecs"], "properties": {
        "RuntimeId": crd.string_schema("Random id the v1alpha1 controller put in child names; kept, unused by v1."),
        "replicaSpecs": {"type": "array", "items": replica,
                         "description": "One entry per replica type: SCHEDULER, SERVER and WORKER."},
        "mxImage": crd.string_schema("Unused (kept for old manifests)."),
        "terminationPolicy": crd.described({"type": "object", "properties": {"chief": chief}},
                                           "Default: the SCHEDULER's exit decides."),
        "cleanupPodPolicy": crd.enum_schema(CLEANUP_POLICIES, 'Pods to delete when the job finishes: All ("" and '
                                                              "the default), Running or None."),
        "schedulerName": crd.string_schema("Scheduler of every pod whose template names none."),
        "jobMode": crd.enum_schema(ALPHA_JOB_MODES, "dist (SCHEDULER, SERVER and WORKER: v1 jobMode MXTrain) or "
                                                    "local (one WORKER, no scheduler or server: a v1 job with only "
                                                    "a Worker and no jobMode)."),
    }}


def status_schema() -> dict[str, Any]:
    """The v1alpha1 status, derived from the v1 status when a job is read as v1alpha1."""
    replica_status = {"type": "object", "properties": {
        "mx_replica_type": crd.enum_schema(ALPHA_TYPES, ""),
        "state": crd.enum_schema(REPLICA_STATES, "Failed if a pod failed, else Running if one is active, else "
                                                 "Succeeded once all have."),
        "ReplicasStates": crd.described({"type": "object", "additionalProperties": crd.int_schema()},
                                        "Pods of this type by state (Running, Succeeded, Failed)."),
    }}
    return {"type": "object", "description": "Observed state, derived from the v1 status.", "properties": {
        "phase": crd.enum_schema(PHASES, "Creating, Running, Done (finished), or Failed (the spec is invalid)."),
        "reason": crd.string_schema("Why the job failed."),
        "state": crd.enum_schema(STATES, "Running, Succeeded or Failed."),
        "replicaStatuses": {"type": "array", "items": replica_status,
                            "description": "One entry per replica type, in the order of spec.replicaSpecs."},
        V1_STATUS_FIELD: {"type": "object", "x-kubernetes-preserve-unknown-fields": True,
                          "description": "The v1 status this one is derived from, carried back unchanged when the "
                                         "job is written as v1alpha1."},
    }}


def openapi_schema() -> dict[str, Any]:
    """The whole v1alpha1 ``openAPIV3Schema`` (for the CRD's ``v1alpha1`` version entry)."""
    return crd.openapi_schema("A distributed Apache MXNet job (the v1alpha1 API; stored as v1).", spec_schema(),
                              status_schema())

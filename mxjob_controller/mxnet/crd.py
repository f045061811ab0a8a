"""The MXJob CustomResourceDefinition, built from the shared Kubeflow pieces (``kubeflow_api/crd.py``) and MXJob's
own vocabulary (``mxnet/api.py``), served identically as ``v1`` (the storage version) and ``v1beta1``.

What is MXJob's own in it:

- ``spec.mxReplicaSpecs`` maps Scheduler, Server, Worker, TunerTracker, TunerServer and Tuner (any case) to a
  replica spec with an extra ``label`` (the AutoTVM RPC key); the types that take exactly one replica and the
  jobMode's required types are the validator's rules, as they depend on the key.
- ``spec.jobMode`` (MXTrain, MXTune) and ``spec.successPolicy``; the run policy in both places.
- The status carries its per-type counts twice, as ``replicaStatuses`` (training-operator) and
  ``mxReplicaStatuses`` (mxnet-operator's clients), with the same content.

``v1alpha1`` is not in this CRD: it is served only through the conversion webhook (``mxnet/crd_conversion.py``).
"""

from __future__ import annotations

from typing import Any

from mxjob_controller.kubeflow_api import crd as kubeflow_crd
from mxjob_controller.kubeflow_api.constants import GROUP, SUCCESS_POLICIES
from mxjob_controller.kubeflow_api.crd import (
    MANAGED_BY_IMMUTABLE,
    MANIFEST_DIR,
    REPLICA_STATUSES_DESCRIPTION,
    CRDNames,
    enum_schema,
    job_crd,
    openapi_schema,
    replica_spec_schema,
    run_policy_places,
    string_schema,
)
from mxjob_controller.mxnet.api import (
    CRD_NAME,
    JOB_MODES,
    KIND,
    LIST_KIND,
    PLURAL,
    SHORT_NAMES,
    SINGULAR,
    STORAGE_VERSION,
    VERSIONS,
)

MANIFEST_PATH = f"{MANIFEST_DIR}/{GROUP}_{PLURAL}.yaml"
MXJOB_SINGLETONS_NOTE = "Scheduler, TunerTracker and Tuner take exactly 1."
MXJOB_NAMES = CRDNames(KIND, LIST_KIND, PLURAL, SINGULAR, SHORT_NAMES, VERSIONS)
#: MXJob's count maps and what ``kubectl explain`` says of each.
COUNT_MAPS = {"replicaStatuses": REPLICA_STATUSES_DESCRIPTION,
              "mxReplicaStatuses": "The same as replicaStatuses, for clients of the older mxnet-operator API."}


def mxjob_replica_spec_schema() -> dict[str, Any]:
    """A Kubeflow ReplicaSpec plus MXJob's ``label``."""
    return replica_spec_schema(MXJOB_SINGLETONS_NOTE, {"label": string_schema(
        "AutoTVM RPC key of a tuning job's replicas (else the template annotation tuner-server-key).")})


def spec_schema() -> dict[str, Any]:
    places = run_policy_places()
    properties = {
        "jobMode": enum_schema(JOB_MODES, "MXTrain: distributed training (Scheduler, Server and Worker replicas; "
                                          "with Workers only it runs without parameter servers); MXTune needs "
                                          "TunerTracker, TunerServer and Tuner; unset requires none in particular."),
        "mxReplicaSpecs": {
            "type": "object", "minProperties": 1, "additionalProperties": mxjob_replica_spec_schema(),
            "description": "Replica type (Scheduler, Server, Worker, TunerTracker, TunerServer or Tuner; any "
                           "case) to its replica spec. Every job needs a Worker or a Tuner."},
        "runPolicy": places.pop("runPolicy"),
        "successPolicy": enum_schema(SUCCESS_POLICIES, '"" (the default rules) or AllWorkers (succeed only when every '
                                                       'Worker has).'),
        **places,
    }
    return {"type": "object", "required": ["mxReplicaSpecs"], "properties": properties,
            "x-kubernetes-validations": [dict(MANAGED_BY_IMMUTABLE)]}


def status_schema() -> dict[str, Any]:
    """MXJob's status schema: the shared one with both count maps."""
    return kubeflow_crd.status_schema(COUNT_MAPS)


def mxjob_crd() -> dict[str, Any]:
    """The MXJob CRD object (see :func:`job_crd`)."""
    assert MXJOB_NAMES.crd_name == CRD_NAME and MXJOB_NAMES.versions[0] == STORAGE_VERSION
    return job_crd(MXJOB_NAMES, openapi_schema("A distributed Apache MXNet training or tuning job.", spec_schema(),
                                               status_schema()))

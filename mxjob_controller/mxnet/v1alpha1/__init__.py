"""MXJob ``kubeflow.org/v1alpha1``: the oldest mx-operator's list-style API, and its lossless conversion to and from
``v1``, so one CRD can serve both (``v1`` stored, a conversion webhook in between). Pure functions over plain dicts;
none modifies its input.

Why a converter and not ``conversion: None``: the two shapes disagree (a list of replica specs against a map, a list
of replica statuses against a map), and the API server prunes every field the target version's schema does not
declare, so only a converter keeps a v1alpha1 job whole when it is stored as v1.

The mapping (v1alpha1 → v1; ``to_v1alpha1`` is its inverse):

==========================================  ===========================================================================
v1alpha1                                    v1
==========================================  ===========================================================================
``replicaSpecs[i]`` of ``mxReplicaType``    ``mxReplicaSpecs.Scheduler|Server|Worker`` (an unset type is WORKER, as in
SCHEDULER, SERVER, WORKER                   v1alpha1). v1 cannot hold two entries of a type: the second gets another
                                            spelling of the key (``WORKER``, ``worker``...), which v1 validation
                                            refuses as a duplicate, as v1alpha1 validation refuses the list
``replicas``, ``template``                  the same (unset stays unset: both default to 1)
``template.spec.restartPolicy``             the replica's ``restartPolicy`` (unset: v1's default, Never). v1alpha1
                                            ran pods with the template's; v1 overrides it with the replica's
``PsRootPort`` (of every entry)             ``{name: mxjob-port, containerPort: <PsRootPort>}`` on that type's
                                            ``mxnet`` container (else its first), where v1 reads each type's port;
                                            unset: no port, so v1's default 9091, v1alpha1's default too
``jobMode`` dist, "" or unset              ``jobMode: MXTrain`` (SCHEDULER, SERVER and WORKER)
``jobMode`` local (one WORKER: the old      no ``jobMode`` (v1 then requires no type), and only a ``Worker`` of 1:
spec's ``Validate()``)                      one process, decided by its exit, with no scheduler or server; a v1
                                            job of that shape is ``local`` on the way back
``cleanupPodPolicy`` All, Running, None     ``runPolicy.cleanPodPolicy``, the same; "" or unset: ``All`` (v1alpha1's
                                            behaviour, written out whatever a v1 controller's default is)
``schedulerName``                           each template's ``spec.schedulerName``, where the template names none
``RuntimeId``, ``mxImage``,                 nothing: v1 child names are ``<job>-<type>-<index>``, the image was never
``terminationPolicy``                       used, and v1's own rules decide when a job is done
``status``                                  dropped: the v1 controller computes it from the pods
==========================================  ===========================================================================

v1 → v1alpha1 also derives the status the old clients read (``phase``, ``state``, ``reason``, ``replicaStatuses``)
from the v1 conditions and counts: no condition or only Created → Creating/Running; Running or Restarting →
Running/Running; Succeeded → Done/Succeeded; Failed → Done/Failed; Failed for an invalid spec
(``MXJobFailedValidation``) → Failed/Failed with ``reason: "invalid job spec: <the errors>"``; Suspended →
Creating/Unknown. ``replicaStatuses`` lists each type of the spec list, in its order, with ``ReplicasStates``
(Running = active, Succeeded, Failed pods) and the type's state (any failed pod: Failed; else any active: Running;
else all succeeded: Succeeded; else Running). Each template gets the restartPolicy its v1 pods run with (Never for
``ExitCode`` and for an unset one) and each entry the ``PsRootPort`` of its ``mxjob-port`` (unset without one), so
the old shape describes what runs.

What the other version cannot express rides in one annotation per direction (the only metadata a converted object
may change: the API server restores the rest), which the way back consumes and removes, so a round trip leaves no
annotation behind:

- :data:`V1ALPHA1_EXTRA_ANNOTATION` on a v1 object: ``RuntimeId``, ``mxImage``, ``terminationPolicy``,
  ``schedulerName``, the original ``jobMode`` and ``cleanupPodPolicy``, the list order, and per entry an absent
  ``mxReplicaType``, a ``PsRootPort`` the port does not show, what setting the port and the scheduler name changed
  in the template, a template ``restartPolicy`` to keep as it is (unset, or ``ExitCode``);
- :data:`V1_EXTRA_ANNOTATION` on a v1alpha1 object: the original ``jobMode``, every other v1 spec field (``runPolicy``,
  the inline run policy, ``successPolicy``) when ``cleanupPodPolicy`` alone does not say it, replica types v1alpha1
  lacks (TunerTracker, TunerServer, Tuner) whole, and per replica its key's spelling, ``restartPolicy`` (``ExitCode``,
  unset, or one the template did not carry), fields such as ``label``, and a template that must not get the job's
  ``schedulerName``.

A value restored from an annotation is used only while the field it was derived into still holds what the
conversion wrote there (each record keeps both, ``{"was": ..., "now": ...}``), so an edit made through either version
wins over the annotation. A null field counts as an absent one (the API server prunes them). Only malformed input
(not an object, ``replicaSpecs`` not a list, an unknown ``mxReplicaType``, a broken annotation...) raises
:class:`ConversionError`; every object of a valid shape converts, whether or not it would pass validation.

The package, one concern a module: ``vocabulary.py`` (the old API's words and schema), ``validation.py`` (its
defaults and checks), ``to_v1.py`` and ``to_v1alpha1.py`` (the two directions; the latter also derives the old
status), ``mapping.py`` (what both directions share); :func:`convert`, here, picks the direction.
"""

from __future__ import annotations

from typing import Any

from mxjob_controller.kube import field_errors as fe
from mxjob_controller.kube.jsoncopy import deep_copy
from mxjob_controller.mxnet.v1alpha1.mapping import as_object
from mxjob_controller.mxnet.v1alpha1.to_v1 import to_v1
from mxjob_controller.mxnet.v1alpha1.to_v1alpha1 import to_v1alpha1
from mxjob_controller.mxnet.v1alpha1.validation import apply_defaults, validate
from mxjob_controller.mxnet.v1alpha1.vocabulary import (
    API_VERSION,
    MANAGED_ANNOTATIONS,
    V1_API_VERSION,
    V1_EXTRA_ANNOTATION,
    V1_SHAPED,
    V1ALPHA1_EXTRA_ANNOTATION,
    V1BETA1_API_VERSION,
    VERSION,
    ConversionError,
    openapi_schema,
    spec_schema,
    status_schema,
)

__all__ = ["API_VERSION", "MANAGED_ANNOTATIONS", "V1ALPHA1_EXTRA_ANNOTATION", "V1BETA1_API_VERSION", "V1_API_VERSION",
           "V1_EXTRA_ANNOTATION", "VERSION", "ConversionError", "apply_defaults", "convert", "openapi_schema",
           "spec_schema", "status_schema", "to_v1", "to_v1alpha1", "validate"]


def convert(obj: Any, desired_api_version: str) -> dict[str, Any]:
    """``obj`` (an MXJob at ``kubeflow.org/v1``, ``v1beta1`` or ``v1alpha1``) at ``desired_api_version``: a new
    object, also when no conversion is needed."""
    current = as_object(obj, "").get("apiVersion")
    for version, what in ((current, "apiVersion"), (desired_api_version, "desired apiVersion")):
        if version not in (*V1_SHAPED, API_VERSION):
            raise ConversionError(f"{what}: unsupported {fe.format_value(version)}: expected one of "
                                  f"{', '.join(fe.format_value(v) for v in (*V1_SHAPED, API_VERSION))}")
    if current == desired_api_version:
        return deep_copy(obj)
    if desired_api_version == API_VERSION:
        return to_v1alpha1(obj)
    out = to_v1(obj) if current == API_VERSION else deep_copy(obj)
    out["apiVersion"] = desired_api_version
    return out

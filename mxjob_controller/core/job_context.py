"""One reconcile's view of its job: the object as cached, its parsed spec, and what logs and events need."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from mxjob_controller.core.framework import Framework, JobSpec
from mxjob_controller.core.ownership import controller_reference
from mxjob_controller.runtime.events import ObjectReference


@dataclass(frozen=True, slots=True)
class JobContext:
    key: str                 # "namespace/name", the work-queue key
    obj: dict[str, Any]      # the job as the cache holds it (read-only)
    spec: JobSpec
    framework: Framework

    @property
    def name(self) -> str:
        return self.spec.name

    @property
    def namespace(self) -> str:
        return self.spec.namespace

    @property
    def uid(self) -> str:
        return self.spec.uid

    @property
    def kind(self) -> str:
        return self.framework.resource.kind

    def ref(self) -> ObjectReference:
        """The job as events' involved object."""
        return ObjectReference.of(self.obj, self.framework.resource.api_version, self.kind)

    def owner(self) -> dict[str, Any]:
        """The controller reference the job's children carry."""
        return controller_reference(self.framework.resource.api_version, self.kind, self.name, self.uid)

    def extra(self, replica_type: str | None = None, replica_index: int | None = None) -> dict[str, Any]:
        """Structured log fields (``logs.CONTEXT_FIELDS``) naming the job, and the replica when given."""
        fields: dict[str, Any] = {"job_namespace": self.namespace, "job_name": self.name, "job_uid": self.uid,
                                  "key": self.key}
        if replica_type is not None:
            fields["replica_type"] = replica_type
        if replica_index is not None:
            fields["replica_index"] = replica_index
        return fields

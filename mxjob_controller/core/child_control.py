"""Writes of a job's children (create, delete, adopt), each guarded by expectations and reported as an event.

Expectations are raised just before each write and lowered when it fails, so a failed write never leaves the job
waiting for an event that cannot come; a successful one is lowered by the informer event it causes.

- Create: ``SuccessfulCreate<Kind>`` ("Created pod: <name>") or ``FailedCreate<Kind>`` ("Error creating: ...").
  A create answered 409 is looked up: an object the job controls counts as done (no error, no event; its missing
  labels are patched in); an object the job does not control *blocks* the name, which the caller reports once.
- Delete: preconditioned on the child's UID, so a newer object of the same name is never deleted by mistake;
  ``SuccessfulDelete<Kind>`` / ``FailedDelete<Kind>``. An object already gone, or already being deleted, is done.
- Adopt: a child the old operator made (legacy labels only, our job as controller) gets our labels patched in.
"""

from __future__ import annotations

import enum
import logging
from dataclasses import dataclass
from typing import Any

from mxjob_controller.core.job_context import JobContext
from mxjob_controller.core.labels import missing_labels, needs_adoption
from mxjob_controller.core.ownership import is_controlled_by
from mxjob_controller.core.pod_status import is_deleting
from mxjob_controller.runtime.client import (
    PODS,
    SERVICES,
    AlreadyExists,
    ApiError,
    Client,
    Conflict,
    NotFound,
    Resource,
)
from mxjob_controller.runtime.events import NORMAL, WARNING, EventRecorder
from mxjob_controller.runtime.expectations import ControllerExpectations, ExpectationKey, pods_key, services_key

log = logging.getLogger(__name__)


@dataclass(frozen=True, slots=True)
class ChildKind:
    resource: Resource
    kind: str  # "Pod", "Service": the suffix of event reasons

    @property
    def noun(self) -> str:
        return self.kind.lower()

    def expectation_key(self, job_key: str, replica_type: str) -> ExpectationKey:
        return (pods_key if self.resource == PODS else services_key)(job_key, replica_type)


POD = ChildKind(PODS, "Pod")
SERVICE = ChildKind(SERVICES, "Service")


class Created(enum.Enum):
    CREATED = "created"
    EXISTS = "exists"      # the name was already ours: done
    BLOCKED = "blocked"    # the name is held by an object the job does not control


class ChildVanishedError(RuntimeError):
    """A create was refused as a duplicate, yet the object was gone when looked up: retry later."""


def describe(error: BaseException) -> str:
    """An error as an event message shows it (the API's message, as client-go's ``%v`` of a StatusError)."""
    return error.message if isinstance(error, ApiError) and error.message else str(error)


class ChildControl:
    def __init__(self, client: Client, recorder: EventRecorder, expectations: ControllerExpectations) -> None:
        self.client = client
        self.recorder = recorder
        self.expectations = expectations

    def create(self, ctx: JobContext, kind: ChildKind, replica_type: str, index: int,
               body: dict[str, Any]) -> Created:
        key = kind.expectation_key(ctx.key, replica_type)
        name = body["metadata"]["name"]
        extra = ctx.extra(replica_type, index)
        self.expectations.raise_expectations(key, adds=1)
        try:
            self.client.create(kind.resource, body, ctx.namespace)
        except AlreadyExists:
            return self._exists(ctx, kind, key, body, extra)
        except Exception as e:
            self.expectations.lower_expectations(key, adds=1)
            log.warning("creating %s %s failed: %s", kind.noun, name, e, extra=extra)
            self.recorder.event(ctx.ref(), WARNING, f"FailedCreate{kind.kind}", f"Error creating: {describe(e)}")
            raise
        log.debug("created %s %s", kind.noun, name, extra=extra)   # the pass logs one line per kind (child_sync)
        self.recorder.event(ctx.ref(), NORMAL, f"SuccessfulCreate{kind.kind}", f"Created {kind.noun}: {name}")
        return Created.CREATED

    def _exists(self, ctx: JobContext, kind: ChildKind, key: ExpectationKey, body: dict[str, Any],
                extra: dict[str, Any]) -> Created:
        name = body["metadata"]["name"]
        self.expectations.lower_expectations(key, adds=1)
        try:
            existing = self.client.get(kind.resource, name, ctx.namespace)
        except NotFound:
            raise ChildVanishedError(f"{kind.noun} {name} already existed, then vanished") from None
        if not is_controlled_by(existing, ctx.uid):
            log.warning("cannot create %s %s: the name is held by an object %s %s does not control", kind.noun,
                        name, ctx.kind, ctx.name, extra=extra)
            return Created.BLOCKED
        log.info("%s %s already exists and is ours: nothing to create", kind.noun, name, extra=extra)
        wanted = body["metadata"].get("labels") or {}
        if missing_labels((existing.get("metadata") or {}).get("labels"), wanted):
            self.adopt(ctx, kind, existing, key.replica_type, wanted, extra)
        return Created.EXISTS

    def delete(self, ctx: JobContext, kind: ChildKind, obj: dict[str, Any], replica_type: str,
               extra: dict[str, Any], why: str, *, force: bool = False) -> None:
        """``force``: grace period 0, for a pod whose node is gone (no kubelet will confirm a graceful deletion),
        sent even when a graceful deletion is already under way."""
        meta = obj.get("metadata") or {}
        name = meta.get("name") or ""
        if is_deleting(obj) and not force:
            log.debug("%s %s is already being deleted", kind.noun, name, extra=extra)
            return
        key = kind.expectation_key(ctx.key, replica_type)
        self.expectations.raise_expectations(key, dels=1)
        try:
            self.client.delete(kind.resource, name, ctx.namespace, precondition_uid=meta.get("uid"),
                               grace_period_seconds=0 if force else None)
        except (NotFound, Conflict):
            self.expectations.lower_expectations(key, dels=1)
            log.info("%s %s is already gone (or replaced): nothing to delete", kind.noun, name, extra=extra)
            return
        except Exception as e:
            self.expectations.lower_expectations(key, dels=1)
            log.warning("deleting %s %s failed: %s", kind.noun, name, e, extra=extra)
            self.recorder.event(ctx.ref(), WARNING, f"FailedDelete{kind.kind}", f"Error deleting: {describe(e)}")
            raise
        log.info("deleted %s %s (%s)", kind.noun, name, why, extra=extra)
        self.recorder.event(ctx.ref(), NORMAL, f"SuccessfulDelete{kind.kind}", f"Deleted {kind.noun}: {name}")

    def adopt(self, ctx: JobContext, kind: ChildKind, obj: dict[str, Any], replica_type: str,
              labels: dict[str, str], extra: dict[str, Any]) -> None:
        """Patch the labels ``obj`` lacks. A child without our operator label enters our cache by this patch, so
        its arrival is expected like a creation."""
        meta = obj.get("metadata") or {}
        patch = missing_labels(meta.get("labels"), labels)
        if not patch:
            return
        key = kind.expectation_key(ctx.key, replica_type)
        arrives = needs_adoption(meta.get("labels")) and not needs_adoption(labels)
        if arrives:
            self.expectations.raise_expectations(key, adds=1)
        try:
            self.client.patch(kind.resource, meta.get("name") or "", {"metadata": {"labels": patch}},
                              ctx.namespace)
        except Exception as e:
            if arrives:
                self.expectations.lower_expectations(key, adds=1)
            if isinstance(e, NotFound):
                log.info("%s %s vanished before it could be adopted", kind.noun, meta.get("name"), extra=extra)
                return
            raise
        log.info("adopted %s %s: labels %s added", kind.noun, meta.get("name"), ", ".join(sorted(patch)),
                 extra=extra)

"""A Warning event on the object whose reconcile the API server refused (401/403), for ``Controller.on_error``.

On a cluster, a permission missing from the controller's RBAC shows up as a 403 on one request of a reconcile (the
status write, a re-read, an adoption, a TTL delete). The controller's log says so (``runtime.controller``); this puts
the same message where a user looks first, on the job (``kubectl describe``)::

    Warning  Forbidden  mxjob-controller  mxjobs.kubeflow.org "j" is forbidden: User "system:serviceaccount:
    kubeflow:mxjob-controller" cannot patch resource "mxjobs/status" in API group "kubeflow.org" in the namespace ...

One event per refusal message and object per minute: a failure already reported on the object (``FailedCreatePod``
carries the 403's message) is not reported again, and the retries with back-off of the same refusal add to one
event's count rather than new events (the recorder's correlator). Other errors are left to the log.
"""

from __future__ import annotations

from collections.abc import Callable, Hashable

from mxjob_controller.runtime.client import ApiError
from mxjob_controller.runtime.client.errors import refused
from mxjob_controller.runtime.events import WARNING, EventRecorder, ObjectReference


class RefusalEvents:
    def __init__(self, recorder: EventRecorder, resolve: Callable[[Hashable], ObjectReference | None]) -> None:
        """``resolve``: the object a work-queue key names (None when it is gone)."""
        self._recorder = recorder
        self._resolve = resolve

    def __call__(self, key: Hashable, error: Exception) -> None:
        if not refused(error):
            return
        assert isinstance(error, ApiError)
        ref = self._resolve(key)
        if ref is None or self._recorder.warned(ref, error.message):
            return
        self._recorder.event(ref, WARNING, error.reason or "Forbidden", error.message)

"""Carrying out the restarts a status write recorded: delete each pod whose restart is due (the child sync creates
its replacement, under the same name, once the deletion is observed). Thin I/O around :mod:`restarts`.

Each deletion is preconditioned on the pod's UID and guarded by expectations (``ChildControl.delete``); a pod
whose node is gone (phase Unknown) is deleted with grace 0. All due pods go at once; the first error is returned
for the caller to raise, so the job is retried with back-off and the restart, still recorded in its status, is
attempted again without being counted twice.
"""

from __future__ import annotations

import functools
from collections.abc import Callable, Sequence
from typing import Any

from mxjob_controller.core.child_control import POD, ChildControl
from mxjob_controller.core.job_context import JobContext
from mxjob_controller.core.restarts import DueRestart
from mxjob_controller.core.slow_start import UNBOUNDED, Slice, SlowStartOutcome, slow_start
from mxjob_controller.core.write_pool import WritePool


def delete_due(ctx: JobContext, control: ChildControl, pool: WritePool, due: Sequence[DueRestart], *,
               timeout: float, within: Slice = UNBOUNDED) -> SlowStartOutcome:
    """Delete the pods of ``due``, as much as ``within`` allows (``deferred`` are left for the next pass)."""
    tasks: list[Callable[[], Any]] = [
        functools.partial(control.delete, ctx, POD, restart.pod, restart.replica_type,
                          ctx.extra(restart.replica_type, restart.index),
                          "restart: its node is gone" if restart.force else "restart", force=restart.force)
        for restart in due]
    if not tasks:
        return SlowStartOutcome()
    return slow_start(tasks, pool, timeout=timeout, initial_batch=len(tasks), within=within)

"""Which exits of a replica's main container the ``ExitCode`` restart policy retries. Pure.

The table is the one Kubeflow's operators document for ``ExitCode`` (the MXNet operator's README):

- retryable, the process was stopped from outside and may well succeed when run again: 130 (SIGINT, Control-C),
  137 (SIGKILL, which includes the kernel's OOM killer), 143 (SIGTERM), and 138 (SIGUSR1), reserved for
  user-defined retryable errors;
- a Failed pod whose main container never terminated (an eviction: the kubelet killed the pod, not the program);
- permanent, the program itself failed: every other code, 1, 2, 126, 127, 128 and 139 (SIGSEGV) included.

training-operator retries any code >= 128 instead (``IsRetryableExitCode``): a segfault or an ``exit(200)`` is
retried there and fails the job here, as the documented table says.
"""

from __future__ import annotations

#: Exit codes of the main container that ``ExitCode`` retries, and what each means.
RETRYABLE_EXIT_CODES: dict[int, str] = {
    130: "SIGINT: terminated by Control-C",
    137: "SIGKILL: killed, e.g. by the OOM killer",
    138: "SIGUSR1: reserved for user-defined retryable errors",
    143: "SIGTERM: asked to stop",
}

#: The permanent codes the table names (any code not in RETRYABLE_EXIT_CODES is permanent too).
DOCUMENTED_PERMANENT_EXIT_CODES: dict[int, str] = {
    1: "general error",
    2: "misuse of shell builtins",
    126: "command cannot execute",
    127: "command not found",
    128: "invalid argument to exit",
    139: "SIGSEGV: invalid memory reference",
}


def is_retryable_exit(exit_code: int | None) -> bool:
    """Whether a Failed pod whose main container exited with ``exit_code`` is restarted under ``ExitCode``.

    ``None`` means the container has no terminated state although the pod failed: the pod was evicted (or its
    node lost it), which says nothing against the program, so it is retried.
    """
    return exit_code is None or exit_code in RETRYABLE_EXIT_CODES

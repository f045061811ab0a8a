"""A pod's status as the kubelet reports it, from its containers' statuses. Pure: table-tested.

The phase follows the kubelet's ``getPhase`` (``kubelet_pods.go``): a failed init container fails a ``Never`` pod;
an init container still to finish, or an app container that never started, keeps it ``Pending``; any app
container running makes it ``Running``; once all have stopped it is ``Succeeded`` (all exited 0), ``Failed``
(``Never``, or the pod is being terminated for good), or still ``Running`` (restarts to come). The conditions
are the five a kubelet writes, each keeping its ``lastTransitionTime`` while its status does not change.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from mxjob_controller.kube.vocabulary import POD_FAILED as FAILED
from mxjob_controller.kube.vocabulary import POD_PENDING as PENDING
from mxjob_controller.kube.vocabulary import POD_RUNNING as RUNNING
from mxjob_controller.kube.vocabulary import POD_SUCCEEDED as SUCCEEDED
from mxjob_controller.local.kubelet.addresses import LOCAL_IP


def waiting(reason: str, message: str = "") -> dict[str, Any]:
    return {"waiting": {"reason": reason, **({"message": message} if message else {})}}


def running(started_at: str) -> dict[str, Any]:
    return {"running": {"startedAt": started_at}}


def terminated(code: int, started_at: str, finished_at: str, container_id: str, reason: str = "",
               message: str = "") -> dict[str, Any]:
    # Go's zero metav1.Time is null (a container that never started), and containerID is omitted when empty.
    state: dict[str, Any] = {"exitCode": code, "reason": reason or ("Completed" if code == 0 else "Error"),
                             "startedAt": started_at or None, "finishedAt": finished_at}
    if container_id:
        state["containerID"] = container_id
    if message:
        state["message"] = message
    return {"terminated": state}


def phase(restart_policy: str, init_statuses: Sequence[dict[str, Any]], statuses: Sequence[dict[str, Any]],
          terminal: bool = False) -> str:
    """The pod phase from its init and app container statuses (one per container, in spec order).

    ``terminal``: the pod is being stopped for good (deleted, past its deadline), so nothing restarts."""
    pending_init = failed_init = 0
    for cs in init_statuses:
        state, last = cs.get("state") or {}, (cs.get("lastState") or {}).get("terminated")
        if "terminated" in state:
            failed_init += state["terminated"].get("exitCode") != 0
        elif "waiting" in state and last is not None:
            failed_init += last.get("exitCode") != 0
        else:
            pending_init += 1
    if failed_init and (restart_policy == "Never" or terminal):
        return FAILED
    if pending_init:
        return PENDING
    waiting_count = running_count = stopped = succeeded = 0
    for cs in statuses:
        state = cs.get("state") or {}
        if "running" in state:
            running_count += 1
        elif "terminated" in state:
            stopped += 1
            succeeded += state["terminated"].get("exitCode") == 0
        elif (cs.get("lastState") or {}).get("terminated") is not None:
            stopped += 1
        else:
            waiting_count += 1
    if waiting_count:
        return PENDING
    if running_count:
        return RUNNING
    if not stopped:
        return PENDING
    if terminal:
        return SUCCEEDED if stopped == succeeded else FAILED
    if restart_policy == "Always":
        return RUNNING
    if stopped == succeeded:
        return SUCCEEDED
    return FAILED if restart_policy == "Never" else RUNNING


def conditions(pod_phase: str, init_statuses: Sequence[dict[str, Any]], statuses: Sequence[dict[str, Any]],
               previous: Sequence[dict[str, Any]], now: str) -> list[dict[str, Any]]:
    """The kubelet's pod conditions (``PodScheduled`` kept as the binding wrote it)."""
    before = {c.get("type"): c for c in previous}
    done = pod_phase in (SUCCEEDED, FAILED)
    not_initialized = [cs["name"] for cs in init_statuses
                       if ((cs.get("state") or {}).get("terminated") or {}).get("exitCode") != 0]
    unready = [cs["name"] for cs in statuses if not cs.get("ready")]
    wanted: list[tuple[str, bool, str, str]] = [
        ("PodReadyToStartContainers", not done, "", ""),
        ("Initialized", not not_initialized, "ContainersNotInitialized",
         f"containers with incomplete status: [{' '.join(not_initialized)}]"),
        ("Ready", not unready and not done, "PodCompleted" if done else "ContainersNotReady",
         "" if done else f"containers with unready status: [{' '.join(unready)}]"),
        ("ContainersReady", not unready and not done, "PodCompleted" if done else "ContainersNotReady",
         "" if done else f"containers with unready status: [{' '.join(unready)}]"),
    ]
    out = []
    if "PodScheduled" in before:
        out.append(before["PodScheduled"])
    for ctype, ok, reason, message in wanted:
        status = "True" if ok else "False"
        old = before.get(ctype)
        cond: dict[str, Any] = {"type": ctype, "status": status, "lastProbeTime": None,
                                "lastTransitionTime": old["lastTransitionTime"]
                                if old and old.get("status") == status and old.get("lastTransitionTime") else now}
        if not ok and reason and not (ctype == "Initialized" and done and not not_initialized):
            cond["reason"] = reason
            if message:
                cond["message"] = message
        out.append(cond)
    return out


def container_status(name: str, image: str, state: dict[str, Any], last_state: dict[str, Any],
                     restart_count: int, container_id: str = "", init: bool = False) -> dict[str, Any]:
    """One container's status; an init container is ready once it has completed, an app container while it runs."""
    is_running = "running" in state
    ready = (state.get("terminated") or {}).get("exitCode") == 0 if init else is_running
    status: dict[str, Any] = {"name": name, "image": image, "imageID": "", "state": state, "lastState": last_state,
                              "ready": ready, "started": is_running, "restartCount": restart_count}
    if container_id:
        status["containerID"] = container_id
    return status


def pod_status(previous: dict[str, Any], restart_policy: str, init_statuses: list[dict[str, Any]],
               statuses: list[dict[str, Any]], start_time: str, now: str, terminal: bool = False,
               reason: str = "", message: str = "", pod_ip: str = LOCAL_IP) -> dict[str, Any]:
    """The whole status to write: phase, conditions, IPs (the host's 127.0.0.1, the pod's own ``pod_ip``), start
    time and every container's status."""
    pod_phase = phase(restart_policy, init_statuses, statuses, terminal)
    status: dict[str, Any] = {
        "phase": pod_phase,
        "conditions": conditions(pod_phase, init_statuses, statuses, previous.get("conditions") or [], now),
        "hostIP": LOCAL_IP, "hostIPs": [{"ip": LOCAL_IP}], "podIP": pod_ip, "podIPs": [{"ip": pod_ip}],
        "startTime": start_time, "containerStatuses": statuses,
    }
    if init_statuses:
        status["initContainerStatuses"] = init_statuses
    if previous.get("qosClass"):
        status["qosClass"] = previous["qosClass"]
    if reason:
        status["reason"] = reason
        status["message"] = message
    return status

"""GPUs on the local node: which devices it has (``local up --gpus``), and which of them each container gets.

On a cluster the NVIDIA device plugin advertises ``nvidia.com/gpu`` on the Node, and the kubelet's device manager
gives each container that asks for N of them N devices of its own when the pod is admitted, before anything of it
runs: init containers first, in order, each one's devices then reused by the containers after it (kube's
``devicesToReuse``: the pod needs ``max(init, sum of containers)`` devices, not the total), a restarted container
keeping its devices for the pod's life. Devices return to the node when the pod ends. When the devices are not
there (the scheduler should have prevented it: a pod bound past the scheduler with ``nodeName``, or a race), the
pod is rejected at admission: ``Failed`` with reason ``UnexpectedAdmissionError`` (:class:`DevicesUnavailableError`).

What a container sees, as the plugin's environment-variable strategy sets it: ``NVIDIA_VISIBLE_DEVICES`` naming its
devices, and, because a process here is not isolated from the host's GPUs as a container is, also
``CUDA_VISIBLE_DEVICES`` with the same ids and ``CUDA_DEVICE_ORDER=PCI_BUS_ID`` (CUDA's own numbering is
fastest-first; ``nvidia-smi``'s, whose indices ``--gpus auto`` takes, is by PCI bus). A container that asks for none
gets ``NVIDIA_VISIBLE_DEVICES=void`` (what the NVIDIA container runtime reads as "not a GPU container") and an empty
``CUDA_VISIBLE_DEVICES``, which hides every GPU from CUDA: it sees none, whatever the host's environment says. The
pod's own ``env`` is applied after these, as kube applies a container's env after the device plugin's.

The container's count is its ``limits`` entry (extended resources are set in limits; requests, when given, must
equal them), else its ``requests`` entry. Pure functions on top; :class:`NodeDevices` (the kubelet's table, with a
lock) and :func:`detect_nvidia_gpus` (runs ``nvidia-smi -L``) below.
"""

from __future__ import annotations

import logging
import re
import shutil
import subprocess
import threading
from collections.abc import Callable, Iterable, Mapping, Sequence
from typing import Any

from mxjob_controller.kube import quantity

log = logging.getLogger(__name__)

GPU_RESOURCE = "nvidia.com/gpu"
UNEXPECTED_ADMISSION = "UnexpectedAdmissionError"   # kube's kubelet: admission.ErrorReasonUnexpected
NO_DEVICES = "void"                                 # NVIDIA_VISIBLE_DEVICES of a container without GPUs
_NVIDIA_SMI_TIMEOUT = 10.0
_GPU_LINE = re.compile(r"^GPU (\d+): ")             # `nvidia-smi -L`: "GPU 0: NVIDIA A100 (UUID: GPU-…)"

Assignment = dict[str, tuple[str, ...]]
"""Container name → the device ids it holds (containers without GPUs are not in it)."""


class GpuSpecError(ValueError):
    """A ``--gpus`` value that is neither ``auto``, ``none`` nor a list of device indices."""


class DevicesUnavailableError(Exception):
    """A container's devices are not free: the pod is rejected at admission, as kube's kubelet rejects it."""

    reason = UNEXPECTED_ADMISSION

    def __init__(self, needed: int, available: int, resource: str = GPU_RESOURCE) -> None:
        self.needed, self.available, self.resource = needed, available, resource
        super().__init__(f"Allocate failed due to requested number of devices unavailable for {resource}. "
                         f"Requested: {needed}, Available: {available}, which is unexpected")


# --- pure: parsing -------------------------------------------------------------------------------------------

def parse_gpus(text: str, detect: Callable[[], tuple[str, ...]]) -> tuple[str, ...]:
    """The node's device ids for a ``--gpus`` value: ``auto`` (whatever ``detect`` finds), ``none``, or a
    comma-separated list of distinct device indices (``0,1,3``)."""
    value = text.strip().lower()
    if value == "auto":
        return detect()
    if value == "none":
        return ()
    ids = [part.strip() for part in value.split(",")]
    bad = [part for part in ids if not part.isdigit()]
    if bad:
        raise GpuSpecError(f"{text!r}: expected auto, none or device indices separated by commas (e.g. 0,1,2,3); "
                           f"{bad[0]!r} is not a device index")
    normalized = [str(int(part)) for part in ids]
    twice = sorted({i for i in normalized if normalized.count(i) > 1}, key=int)
    if twice:
        raise GpuSpecError(f"{text!r}: device {twice[0]} is listed more than once")
    return tuple(normalized)


def parse_nvidia_smi_list(output: str) -> tuple[str, ...]:
    """The GPU indices in ``nvidia-smi -L``'s output (MIG devices, listed indented under their GPU, are not GPUs of
    their own here)."""
    return tuple(m.group(1) for line in output.splitlines() if (m := _GPU_LINE.match(line)))


def gpus_requested(container: Mapping[str, Any]) -> int:
    """How many GPUs ``container`` asks for: its limit, else its request (0 when neither is a whole number)."""
    resources = container.get("resources") or {}
    for kind in ("limits", "requests"):
        text = (resources.get(kind) or {}).get(GPU_RESOURCE)
        if text is not None:
            try:
                amount = quantity.parse(text).value
            except quantity.QuantityError:
                return 0
            return int(amount) if amount == int(amount) and amount > 0 else 0
    return 0


# --- pure: allocation ----------------------------------------------------------------------------------------

def assign(pod: Mapping[str, Any], free: Sequence[str]) -> Assignment:
    """The devices each container of ``pod`` gets from ``free`` (in that order), as kube's device manager allocates
    at admission: init containers first, each taking from the devices earlier init containers used before taking
    free ones, and adding its own to them; then the containers, each taking from those reusable devices first and
    removing what it takes (a restartable init container, a sidecar that keeps running, takes as a container
    does). Raises :class:`DevicesUnavailableError` for the first container whose devices are not there."""
    spec = pod.get("spec") or {}
    reusable: list[str] = []
    left = list(free)
    out: Assignment = {}
    entries = [(c, True) for c in spec.get("initContainers") or ()] + [(c, False) for c in spec.get("containers") or ()]
    for container, init in entries:
        count = gpus_requested(container)
        if count == 0:
            continue
        chosen = reusable[:count]
        needed = count - len(chosen)
        if len(left) < needed:
            raise DevicesUnavailableError(needed, len(left))
        chosen += left[:needed]
        left = left[needed:]
        out[container.get("name") or ""] = tuple(chosen)
        if init and container.get("restartPolicy") != "Always":
            reusable += [d for d in chosen if d not in reusable]
        else:
            reusable = [d for d in reusable if d not in chosen]
    return out


def free_devices(devices: Sequence[str], held: Iterable[Assignment]) -> list[str]:
    """``devices`` (in the node's order) that no pod in ``held`` holds."""
    taken = {d for assignment in held for ids in assignment.values() for d in ids}
    return [d for d in devices if d not in taken]


def device_env(ids: Sequence[str]) -> dict[str, str]:
    """What a container holding ``ids`` (none: a container without GPUs) finds in its environment."""
    if not ids:
        return {"NVIDIA_VISIBLE_DEVICES": NO_DEVICES, "CUDA_VISIBLE_DEVICES": ""}
    listed = ",".join(ids)
    return {"NVIDIA_VISIBLE_DEVICES": listed, "CUDA_VISIBLE_DEVICES": listed, "CUDA_DEVICE_ORDER": "PCI_BUS_ID"}


def node_resources(devices: Sequence[str]) -> dict[str, str]:
    """What the Node advertises for ``devices`` in capacity and allocatable (nothing without GPUs, as a node
    without the device plugin)."""
    return {GPU_RESOURCE: str(len(devices))} if devices else {}


# --- the node's table ----------------------------------------------------------------------------------------

class NodeDevices:
    """The devices of the local node and which pod holds which (by pod uid), shared by the pods' workers."""

    def __init__(self, devices: Sequence[str]) -> None:
        self.devices = tuple(devices)
        self._lock = threading.Lock()
        self._held: dict[str, Assignment] = {}

    def admit(self, uid: str, pod: Mapping[str, Any]) -> Assignment:
        """The devices of each container of the pod ``uid`` (the same ones however often it is asked while the pod
        holds them); :class:`DevicesUnavailableError` when they are not free."""
        with self._lock:
            held = self._held.get(uid)
            if held is None:
                held = assign(pod, free_devices(self.devices, self._held.values()))
                if held:
                    self._held[uid] = held
            return dict(held)

    def release(self, uid: str) -> None:
        """The pod ``uid`` has ended: its devices are free again."""
        with self._lock:
            self._held.pop(uid, None)

    def free(self) -> list[str]:
        with self._lock:
            return free_devices(self.devices, self._held.values())


def detect_nvidia_gpus() -> tuple[str, ...]:
    """The GPU indices ``nvidia-smi -L`` lists; none when it is not installed or fails (said in the log)."""
    program = shutil.which("nvidia-smi")
    if program is None:
        return ()
    try:
        done = subprocess.run([program, "-L"], capture_output=True, text=True, timeout=_NVIDIA_SMI_TIMEOUT,
                              check=False)
    except (OSError, subprocess.TimeoutExpired) as e:
        log.warning("--gpus auto: running nvidia-smi -L failed (%s): no GPUs advertised", e)
        return ()
    if done.returncode != 0:
        said = (done.stdout + done.stderr).strip().splitlines()
        log.warning("--gpus auto: nvidia-smi -L exited with %d (%s): no GPUs advertised", done.returncode,
                    said[0] if said else "no output")
        return ()
    return parse_nvidia_smi_list(done.stdout)

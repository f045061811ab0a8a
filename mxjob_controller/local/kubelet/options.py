"""The local kubelet's settings: a module of their own so that the kubelet and its pod workers both read them
without the workers importing the kubelet that creates them."""

from __future__ import annotations

import os
from collections.abc import Callable, Iterable, Mapping
from dataclasses import dataclass, field
from pathlib import Path

NODE_NAME = "local"


@dataclass(frozen=True, slots=True)
class KubeletOptions:
    node_name: str = NODE_NAME
    workdir: str = field(default_factory=os.getcwd)   # a container's directory when its workingDir does not exist
    log_root: Path | None = None                      # None: a temporary folder, removed by stop()
    backoff_initial: float = 10.0                     # crash-loop back-off: kubelet's 10 s, doubling ...
    backoff_max: float = 300.0                        # ... up to 5 minutes
    stop_grace: float = 2.0                           # seconds containers get after SIGTERM when the kubelet stops
    max_grace_period: float = 3600.0                  # the longest a deleted pod's containers get after SIGTERM
    keep_logs: bool = False                           # keep the logs of removed pods until stop() (local run)
    gpus: tuple[str, ...] = ()                        # the node's GPU ids (nvidia.com/gpu; devices.py)
    sandbox: bool = True                              # each container in the pod sandbox (sandbox.py)
    container_user: tuple[int, int] | None = None     # uid, gid without runAsUser; None: nobody if root, else ours
    pod_pids_limit: int = 4096                        # processes (threads) per pod; <= 0: unlimited
    private_paths: Callable[[], Iterable[str]] = lambda: ()   # the cluster's own files: hidden from containers
    capacity: Mapping[str, str] = field(default_factory=dict)  # --capacity: replaces the machine's (node.py)
    container_log_max_size: int = 10 * 1024 * 1024    # the kubelet's containerLogMaxSize: a log file rotates past it
    container_log_max_files: int = 5                  # ... containerLogMaxFiles: files kept per container instance
    event_qps: float = 50.0                           # the kubelet's eventRecordQPS: events written per second (<= 0:
                                                      # no limit, as the kubelet's 0) ...
    event_burst: int = 100                            # ... eventBurst: at once (the rest wait, as on a node)

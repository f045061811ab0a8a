"""Which configuration a process uses, decided as controller-runtime's ``GetConfig`` decides it.

1. an explicit kubeconfig path (the ``--kubeconfig`` flag);
2. the files in ``$KUBECONFIG``;
3. the in-cluster service account, when running in a pod;
4. ``~/.kube/config``.

A ``master`` URL (the ``--master`` flag) overrides the server of whichever kubeconfig is used; with no
kubeconfig at all it is used alone, without credentials (client-go's ``BuildConfigFromFlags``).
"""

from __future__ import annotations

import os
from collections.abc import Mapping
from pathlib import Path

from mxjob_controller.runtime.client.config import ClientConfig, ConfigError
from mxjob_controller.runtime.client.incluster import SERVICE_ACCOUNT_DIR, in_cluster_available, load_in_cluster
from mxjob_controller.runtime.client.kubeconfig import load_kubeconfig


def load_config(kubeconfig: str | os.PathLike[str] | None = None, master: str | None = None,
                context: str | None = None, env: Mapping[str, str] | None = None,
                service_account_dir: str = SERVICE_ACCOUNT_DIR) -> ClientConfig:
    env = os.environ if env is None else env
    if kubeconfig:
        if not Path(kubeconfig).expanduser().is_file():
            raise ConfigError(f"kubeconfig {kubeconfig} does not exist")
        return load_kubeconfig([kubeconfig], context=context, master=master)
    listed = [p for p in env.get("KUBECONFIG", "").split(os.pathsep) if p]
    if listed:
        return load_kubeconfig(listed, context=context, master=master)
    if not master and in_cluster_available(env, service_account_dir):
        return load_in_cluster(env, service_account_dir)
    home = Path(env.get("HOME") or Path.home()) / ".kube" / "config"
    if home.is_file():
        return load_kubeconfig([home], context=context, master=master)
    if master:
        return load_kubeconfig([], master=master)
    raise ConfigError("no configuration: pass --kubeconfig or --master, set KUBECONFIG, run in a pod, or "
                      "create ~/.kube/config")

"""Kubeconfig documents for the client's configuration tests."""

from __future__ import annotations

import sys
from pathlib import Path


def kubeconfig_doc(server: str, namespace: str | None = None, ca: str | None = None, insecure: bool = False,
                   user: dict | None = None) -> dict:
    """A kubeconfig of one cluster, user and context (``ctx``, current)."""
    cluster: dict = {"server": server}
    if ca:
        cluster["certificate-authority"] = ca
    if insecure:
        cluster["insecure-skip-tls-verify"] = True
    context: dict = {"cluster": "c", "user": "u"}
    if namespace:
        context["namespace"] = namespace
    return {"apiVersion": "v1", "kind": "Config", "current-context": "ctx",
            "clusters": [{"name": "c", "cluster": cluster}], "users": [{"name": "u", "user": user or {}}],
            "contexts": [{"name": "ctx", "context": context}]}


def exec_plugin(folder: Path, tokens: list[str], ttl: float | None = None,
                api_version: str = "client.authentication.k8s.io/v1", name: str = "plugin") -> Path:
    """A credential plugin (a Python script) printing an ``ExecCredential``: run ``n`` (counted in ``<name>.runs``
    beside it) gives ``tokens[n-1]`` (the last one from then on), expiring ``ttl`` seconds later if given. Each run
    also leaves the ``KUBERNETES_EXEC_INFO`` it was given in ``<name>.info`` and its stdin's state in
    ``<name>.stdin``."""
    script = folder / name
    script.write_text(f"""#!{sys.executable}
import datetime, json, os, sys
counter, info = {str(folder / (name + ".runs"))!r}, {str(folder / (name + ".info"))!r}
n = int(open(counter).read()) + 1 if os.path.exists(counter) else 1
tokens, ttl = {tokens!r}, {ttl!r}
status = {{"token": tokens[min(n, len(tokens)) - 1]}}
if ttl is not None:
    moment = datetime.datetime.now(datetime.timezone.utc) + datetime.timedelta(seconds=ttl)
    status["expirationTimestamp"] = moment.strftime("%Y-%m-%dT%H:%M:%S.%fZ")
open(info, "w").write(os.environ.get("KUBERNETES_EXEC_INFO", ""))
open({str(folder / (name + ".stdin"))!r}, "w").write("closed" if sys.stdin is None else repr(sys.stdin.read(10)))
print(json.dumps({{"apiVersion": {api_version!r}, "kind": "ExecCredential", "status": status}}))
open(counter + ".tmp", "w").write(str(n))
os.replace(counter + ".tmp", counter)
""")
    script.chmod(0o755)
    return script


def runs(script: Path) -> int:
    """How many times the plugin ``script`` ran to the end."""
    counter = script.with_name(script.name + ".runs")
    return int(counter.read_text()) if counter.exists() else 0

"""Kubeconfig files → :class:`ClientConfig`, with clientcmd's rules.

- Several files (``KUBECONFIG=a:b``) merge as clientcmd merges them: the first file to define a cluster, user
  or context name wins it, and the first non-empty ``current-context`` wins; missing files are skipped.
- Relative paths (certificate-authority, client-certificate, client-key, tokenFile, an ``exec`` command holding a
  ``/``) are relative to the file that names them; an ``exec`` command without one is looked up in ``PATH``.
- A ``master`` URL (the ``--master`` flag) replaces the cluster's server and keeps everything else.
- A server written without a scheme gets ``https://`` when any TLS setting is present, else ``http://``
  (client-go's ``DefaultServerURL``).
- A user authenticates with, in client-go's order: a credential plugin (``exec``: ``exec_credential``) or an
  ``auth-provider`` (``oidc``, ``gcp``, ``azure``: ``auth_provider``), which are exclusive; else ``tokenFile``
  (re-read when it changes) or ``token``; and/or a client certificate; or a username and password.
"""

from __future__ import annotations

import os
from collections.abc import Callable, Iterable
from pathlib import Path
from typing import Any

import yaml

from mxjob_controller.runtime.client.auth_provider import auth_provider_token
from mxjob_controller.runtime.client.config import ClientConfig, ConfigError, FileToken, StaticToken, data_file
from mxjob_controller.runtime.client.exec_credential import ExecToken, cluster_info, parse_plugin


def load_kubeconfig(paths: Iterable[str | os.PathLike[str]], context: str | None = None,
                    master: str | None = None) -> ClientConfig:
    """Resolve ``context`` (default: the merged current-context) from the kubeconfig files ``paths``."""
    merged = _merge(list(paths))
    name = context or merged["current-context"]
    if not name:
        if master:
            return ClientConfig(host=_with_scheme(master, tls=False), source=f"--master {master}")
        raise ConfigError(f"no context chosen and no current-context in {merged['files'] or 'any kubeconfig'}")
    ctx = merged["contexts"].get(name)
    if ctx is None:
        raise ConfigError(f"context {name!r} does not exist in {merged['files']}")
    ctx_body, _ = ctx
    cluster_name = ctx_body.get("cluster") or ""
    user_name = ctx_body.get("user") or ""
    cluster, cluster_dir = merged["clusters"].get(cluster_name, ({}, Path.cwd()))
    if cluster_name and cluster_name not in merged["clusters"] and not master:
        raise ConfigError(f"cluster {cluster_name!r} (of context {name!r}) does not exist")
    user, user_dir = merged["users"].get(user_name, ({}, Path.cwd()))
    if user_name and user_name not in merged["users"]:
        raise ConfigError(f"user {user_name!r} (of context {name!r}) does not exist")

    settings: dict[str, Any] = {}
    settings.update(_cluster_settings(cluster, cluster_dir, cluster_name))
    server = master or cluster.get("server") or ""
    if not server:
        raise ConfigError(f"cluster {cluster_name!r} (of context {name!r}) has no server")
    settings.update(_user_settings(user, user_dir, user_name,
                                   lambda: cluster_info(cluster, server, _read_ca(settings.get("ca_file")))))
    tls = bool(settings.get("ca_file") or settings.get("client_cert_file") or not settings.get("verify_tls", True))
    source = f"kubeconfig context {name!r}" + (f" with --master {master}" if master else "")
    return ClientConfig(host=_with_scheme(server, tls), namespace=ctx_body.get("namespace") or "default",
                        source=source, **settings)


def _merge(paths: list[str | os.PathLike[str]]) -> dict[str, Any]:
    out: dict[str, Any] = {"clusters": {}, "users": {}, "contexts": {}, "current-context": "", "files": []}
    for raw in paths:
        path = Path(raw).expanduser()
        try:
            text = path.read_text(encoding="utf-8")
        except FileNotFoundError:
            continue
        except OSError as e:
            raise ConfigError(f"cannot read kubeconfig {path}: {e}") from None
        try:
            doc = yaml.safe_load(text) or {}
        except yaml.YAMLError as e:
            raise ConfigError(f"kubeconfig {path} is not valid YAML: {e}") from None
        if not isinstance(doc, dict):
            raise ConfigError(f"kubeconfig {path} is not a mapping")
        out["files"].append(str(path))
        base = path.resolve().parent
        for section, inner in (("clusters", "cluster"), ("users", "user"), ("contexts", "context")):
            for entry in doc.get(section) or []:
                if not isinstance(entry, dict) or not entry.get("name"):
                    raise ConfigError(f"kubeconfig {path}: every entry of {section} needs a name")
                out[section].setdefault(entry["name"], (entry.get(inner) or {}, base))
        if not out["current-context"]:
            out["current-context"] = doc.get("current-context") or ""
    return out


def _path(value: str, base: Path) -> str:
    p = Path(value).expanduser()
    return str(p if p.is_absolute() else base / p)


def _cluster_settings(cluster: dict[str, Any], base: Path, name: str) -> dict[str, Any]:
    s: dict[str, Any] = {}
    if cluster.get("certificate-authority-data"):
        s["ca_file"] = data_file(cluster["certificate-authority-data"], f"cluster {name!r} certificate-authority-data")
    elif cluster.get("certificate-authority"):
        s["ca_file"] = _path(cluster["certificate-authority"], base)
    if cluster.get("insecure-skip-tls-verify"):
        if "ca_file" in s:
            raise ConfigError(f"cluster {name!r}: specifying a root certificates file with the insecure flag is "
                              "not allowed")
        s["verify_tls"] = False
    if cluster.get("tls-server-name"):
        s["tls_server_name"] = cluster["tls-server-name"]
    if cluster.get("proxy-url"):
        s["proxy_url"] = cluster["proxy-url"]
    return s


def _read_ca(path: str | None) -> bytes | None:
    if not path:
        return None
    try:
        return Path(path).read_bytes()
    except OSError as e:
        raise ConfigError(f"cannot read the certificate authority {path}: {e}") from None


def _user_settings(user: dict[str, Any], base: Path, name: str,
                   cluster: Callable[[], dict[str, Any]]) -> dict[str, Any]:
    """``cluster``: the context's cluster as an exec plugin that asks for it is told (``provideClusterInfo``)."""
    if user.get("exec") and user.get("auth-provider"):
        raise ConfigError(f"user {name!r}: exec and auth-provider cannot be used together")
    s: dict[str, Any] = {}
    if user.get("client-certificate-data"):
        s["client_cert_file"] = data_file(user["client-certificate-data"], f"user {name!r} client-certificate-data")
    elif user.get("client-certificate"):
        s["client_cert_file"] = _path(user["client-certificate"], base)
    if user.get("client-key-data"):
        s["client_key_file"] = data_file(user["client-key-data"], f"user {name!r} client-key-data")
    elif user.get("client-key"):
        s["client_key_file"] = _path(user["client-key"], base)
    if bool(s.get("client_cert_file")) != bool(s.get("client_key_file")):
        raise ConfigError(f"user {name!r}: a client certificate needs its key and a key its certificate")
    if user.get("exec"):
        plugin = parse_plugin(user["exec"], name, lambda command: _path(command, base))
        s["token"] = ExecToken(plugin, name, cluster() if plugin.provide_cluster_info else None)
    elif user.get("auth-provider"):
        s["token"] = auth_provider_token(user["auth-provider"], name, user, lambda c: _idp_ca(c, base, name))
    elif user.get("tokenFile"):
        s["token"] = FileToken(_path(user["tokenFile"], base), initial=user.get("token") or None)
    elif user.get("token"):
        s["token"] = StaticToken(user["token"])
    if user.get("username") is not None or user.get("password") is not None:
        s["username"] = user.get("username") or ""
        s["password"] = user.get("password") or ""
    return s


def _idp_ca(config: Any, base: Path, user: str) -> str | None:
    """The CA file an oidc provider's ``idp-certificate-authority(-data)`` names, or None (the system's roots)."""
    if config.get("idp-certificate-authority-data"):
        return data_file(config["idp-certificate-authority-data"], f"user {user!r} idp-certificate-authority-data")
    if config.get("idp-certificate-authority"):
        return _path(config["idp-certificate-authority"], base)
    return None


def _with_scheme(server: str, tls: bool) -> str:
    server = server.rstrip("/")
    if "://" in server:
        return server
    return ("https://" if tls else "http://") + server

"""What a container process is started with: its argv and environment, as a kubelet computes them, plus what one
machine needs in place of a cluster network. Pure, apart from the lookups passed in.

As the kubelet does (``kubelet_pods.go`` ``makeEnvironmentVariables``): ``envFrom`` first (ConfigMaps, Secrets,
with their prefix), then ``env`` in order, later entries winning; ``$(VAR)`` in a value, a command or an argument
expands to a variable defined before it (``$$`` escapes, an unknown reference stays as written); ``valueFrom``
reads the pod's own fields (``fieldRef``), its resources (``resourceFieldRef``), or a ConfigMap or Secret key. A
missing, non-optional reference is a :class:`ContainerConfigError` (the container waits with
``CreateContainerConfigError``, as on a cluster).

Bounded as ``execve`` bounds what it takes (``exec_bounds``): each value is built within what is left, and one past
the bounds is a :class:`ContainerConfigError` naming its variable or argument, before it is built in full.

For one machine: the process also gets a small base environment (``PATH`` with this project's interpreter first,
so ``python`` finds what is installed; ``HOME``, locale and temp settings; ``HOSTNAME`` as the pod's name), and
``OMP_NUM_THREADS=1`` and ``DMLC_NODE_HOST=127.0.0.1`` unless the pod sets them (:data:`ONE_MACHINE_DEFAULTS`). In
the pod's own values, every DNS name of a known Service (``svc``, ``svc.ns``, ``svc.ns.svc``,
``svc.ns.svc.cluster.local``) becomes that Service's address on this machine's loopback (``addresses.py``: the
address of the pod it stands for, or 127.0.0.1), and ``status.podIP`` is the pod's own address. A name in the
Services' own form (``svc.ns.svc``...) is a Service's even before the Service exists: its address is its name's.
"""

from __future__ import annotations

import base64
import functools
import math
import os
import re
import sys
from collections.abc import Callable, Mapping
from fractions import Fraction
from typing import Any, Protocol

from mxjob_controller.kube import quantity
from mxjob_controller.local.kubelet import exec_bounds
from mxjob_controller.local.kubelet.addresses import LOCAL_IP
from mxjob_controller.local.kubelet.exec_bounds import ExecBoundsError, ExecBudget
from mxjob_controller.local.kubelet.name_split import split_names

CLUSTER_DOMAIN = "cluster.local"
# Set unless the pod sets them: every container shares this machine's cores; a ps-lite (MXNet) node announces this
# address to its peers (left alone, it picks a non-loopback interface, which a machine may not have).
ONE_MACHINE_DEFAULTS = (("OMP_NUM_THREADS", "1"), ("DMLC_NODE_HOST", LOCAL_IP))
_BASE_VARS = ("HOME", "LANG", "LC_ALL", "LC_CTYPE", "TZ", "TMPDIR", "USER", "LOGNAME", "TERM")
_REFERENCE = re.compile(r"\$\$|\$\(([A-Za-z_][A-Za-z0-9_.-]*)\)")
_FIELD_KEY = re.compile(r"^metadata\.(labels|annotations)\['(.+)'\]$")

Lookup = Callable[[str, str, str], dict | None]
"""(kind "ConfigMap"/"Secret", namespace, name) -> the object, or None when it does not exist."""
ServiceAddress = Callable[[str, str, bool], "str | None"]
"""(namespace, name, qualified) -> the address that Service's name resolves to, None when there is no such Service.
``qualified``: the name was written in the Services' own DNS form (``<svc>.<ns>.svc[.cluster.local]``), so it names
a Service even if that one is not created yet (a job's pods and Services are created side by side)."""


class HostMemo(Protocol):
    """What host names became in a namespace's values, kept across starts (``service_names.ServiceNames``)."""

    def hosts(self, namespace: str) -> tuple[Mapping[str, str], int]: ...
    def keep_hosts(self, namespace: str, found: Mapping[str, str],
                   services: Mapping[str, tuple[str, str, bool] | None], as_of: int) -> None: ...


class ContainerConfigError(Exception):
    """The container cannot be configured (a missing ConfigMap, Secret or key; a value past ``execve``'s bounds): it
    does not start, and waits with ``CreateContainerConfigError`` (the configuration may still change)."""

    reason = "CreateContainerConfigError"


class NoCommandError(ContainerConfigError):
    """The container has no ``command``, and no image entrypoint runs here: it can never start."""

    reason = "CreateContainerError"


class _TooLongError(Exception):
    """An expansion passed its bound (raised before the whole value is built)."""


def base_environment(pod_name: str, environ: Mapping[str, str] | None = None) -> dict[str, str]:
    """The environment every container starts from on this machine (the pod's own variables override it)."""
    environ = os.environ if environ is None else environ
    interpreter_dir = os.path.dirname(sys.executable)
    path = [interpreter_dir] + [p for p in environ.get("PATH", os.defpath).split(os.pathsep) if p != interpreter_dir]
    env = {k: environ[k] for k in _BASE_VARS if k in environ}
    env["PATH"] = os.pathsep.join(path)
    env["HOSTNAME"] = pod_name
    return env


def container_env(pod: dict[str, Any], container: dict[str, Any], base: Mapping[str, str], *,
                  lookup: Lookup, service_address: ServiceAddress, pod_ip: str = LOCAL_IP,
                  node_allocatable: Mapping[str, str] | None = None,
                  host_memo: HostMemo | None = None) -> dict[str, str]:
    """The full environment of ``container`` of ``pod`` (see the module's docstring for the rules); ``host_memo``:
    where the host names' answers are kept across starts (none: each start resolves its values' names)."""
    namespace = (pod.get("metadata") or {}).get("namespace") or "default"
    budget = ExecBudget(base)
    own: dict[str, str] = {}
    try:
        for source in container.get("envFrom") or ():
            for name, value in _env_from(source, namespace, lookup).items():
                budget.set_variable(name, value)
                own[name] = value
        for var in container.get("env") or ():
            name = var.get("name") or ""
            if "valueFrom" in var:
                value = _value_from(var["valueFrom"], name, pod, container, namespace, lookup,
                                    node_allocatable or {}, pod_ip)
                if value is None:
                    continue  # an optional reference that does not exist: the variable is not set
            else:
                try:
                    value = expand(var.get("value") or "", own, budget.variable_room(name))
                except _TooLongError:
                    raise budget.variable_error(name) from None
            budget.set_variable(name, value)
            own[name] = value
        env = dict(base)
        env.update((k, rewrite_service_hosts(v, namespace, service_address, host_memo)) for k, v in own.items())
        for name, value in ONE_MACHINE_DEFAULTS:
            env.setdefault(name, value)
        exec_bounds.check(env)   # a Service's address may be longer than its name
    except ExecBoundsError as e:
        raise ContainerConfigError(str(e)) from None
    return env


def container_argv(container: dict[str, Any], env: Mapping[str, str]) -> list[str]:
    """``command`` + ``args`` with ``$(VAR)`` expanded, within ``execve``'s bounds together with ``env``. The image
    is ignored here, so there is no entrypoint to fall back on: a container without a ``command`` cannot run."""
    command = list(container.get("command") or ())
    if not command:
        raise NoCommandError(f'no command specified for container "{container.get("name")}": images are not run '
                             "locally, so there is no image entrypoint to fall back on; give the container a "
                             "command")
    budget = ExecBudget(env)
    argv: list[str] = []
    try:
        for index, arg in enumerate(command + list(container.get("args") or ())):
            try:
                argv.append(expand(str(arg), env, budget.argument_room()))
            except _TooLongError:
                raise budget.argument_error(index) from None
            budget.add_argument(index, argv[-1])
    except ExecBoundsError as e:
        raise ContainerConfigError(str(e)) from None
    return argv


def expand(value: str, env: Mapping[str, str], limit: int | None = None) -> str:
    """Kubernetes' ``$(VAR)`` expansion: defined variables are replaced, ``$$`` is a literal ``$``, anything else
    (an undefined variable, a lone ``$``) stays as written. ``limit``: the most characters the result may have;
    past it :class:`_TooLongError` is raised before the rest is built."""
    if "$" not in value:   # nothing to expand (an MX_CONFIG's 65 KB: no scan by the expression)
        if limit is not None and len(value) > limit:
            raise _TooLongError
        return value

    def replacement(m: re.Match[str]) -> str:
        return "$" if m.group(0) == "$$" else env.get(m.group(1), m.group(0))
    if limit is None:
        return _REFERENCE.sub(replacement, value)
    pieces: list[str] = []
    size = end = 0
    for m in _REFERENCE.finditer(value):
        literal, substitute = value[end:m.start()], replacement(m)
        size += len(literal) + len(substitute)
        if size > limit:
            raise _TooLongError
        pieces += (literal, substitute)
        end = m.end()
    size += len(value) - end
    if size > limit:
        raise _TooLongError
    pieces.append(value[end:])
    return "".join(pieces)


def rewrite_service_hosts(value: str, namespace: str, service_address: ServiceAddress,
                          memo: HostMemo | None = None) -> str:
    """``value`` with every DNS name of a known Service replaced by its address on the loopback.

    A name is whole (``job-worker-1`` in ``job-worker-10`` is not one), case-insensitive, resolved as a pod's
    resolver would with the search path ``<ns>.svc.cluster.local svc.cluster.local cluster.local``. ``memo``: the
    answers kept from earlier starts, used when it has every name of the value, else given those of this one."""
    parts = split_names(value)   # text, name, text, name, ..., text (name_split.py: a long one from its sibling's)
    if len(parts) == 1:
        return value
    # Each name once (a job's MX_CONFIG names each peer once, and "url", "port"... per peer), the rest in C: a
    # Python call per match was most of a 1,000-peer MX_CONFIG's rewrite, for each of its 1,000 pods.
    hosts = parts[1::2]
    as_of, answers = 0, {}
    if memo is not None:
        known, as_of = memo.hosts(namespace)
        try:
            parts[1::2] = map(known.__getitem__, hosts)   # every name known: looked up in C (parts unchanged if not)
            return "".join(parts)
        except KeyError:
            answers = dict(known)   # a copy: an event may take names out of the memo meanwhile
    # Each name not known yet, inline, with no call of ours per name (each start of a 1,000-replica job's pods has
    # ~1,000 of them; with the memo, those whose Service changed since).
    keys = {host: _service_key(host, namespace) for host in set(hosts).difference(answers)}
    resolved = {host: (service_address(*key) if key is not None else None) or host for host, key in keys.items()}
    if memo is not None:
        memo.keep_hosts(namespace, resolved, keys, as_of)
    answers.update(resolved)
    parts[1::2] = map(answers.__getitem__, hosts)
    return "".join(parts)


@functools.lru_cache(maxsize=1 << 16)
def _service_key(host: str, namespace: str) -> tuple[str, str, bool] | None:
    """The (namespace, name, qualified) of the Service ``host`` (any case) would name, None if it names none: pure,
    so kept (each start of a 1,000-replica MXJob's pods asks it of the same ~1,000 peer names)."""
    host = host.lower()
    for suffix in (f".svc.{CLUSTER_DOMAIN}", ".svc"):
        if host.endswith(suffix):
            host = host[: -len(suffix)]
            parts = host.split(".")
            return (parts[1], parts[0], True) if len(parts) == 2 else None
    parts = host.split(".")
    if len(parts) == 1:
        return namespace, host, False
    return (parts[1], parts[0], False) if len(parts) == 2 else None


def _env_from(source: dict[str, Any], namespace: str, lookup: Lookup) -> dict[str, str]:
    prefix = source.get("prefix") or ""
    for key, kind in (("configMapRef", "ConfigMap"), ("secretRef", "Secret")):
        ref = source.get(key)
        if not isinstance(ref, dict):
            continue
        obj = lookup(kind, namespace, ref.get("name") or "")
        if obj is None:
            if ref.get("optional"):
                return {}
            raise ContainerConfigError(f'{kind.lower()} "{ref.get("name")}" not found')
        return {prefix + k: v for k, v in _data(obj).items()}
    return {}


def _data(obj: dict[str, Any]) -> dict[str, str]:
    """A ConfigMap's or Secret's values as text (a Secret's ``data`` is base64)."""
    out = {k: base64.b64decode(v).decode("utf-8", "replace") for k, v in (obj.get("data") or {}).items()} \
        if obj.get("kind") == "Secret" else dict(obj.get("data") or {})
    out.update(obj.get("stringData") or {})
    return out


def _value_from(source: dict[str, Any], name: str, pod: dict[str, Any], container: dict[str, Any], namespace: str,
                lookup: Lookup, allocatable: Mapping[str, str], pod_ip: str) -> str | None:
    if "fieldRef" in source:
        return field_value(pod, (source["fieldRef"] or {}).get("fieldPath") or "", pod_ip)
    if "resourceFieldRef" in source:
        return _resource_value(source["resourceFieldRef"] or {}, container, allocatable)
    for key, kind in (("configMapKeyRef", "ConfigMap"), ("secretKeyRef", "Secret")):
        ref = source.get(key)
        if not isinstance(ref, dict):
            continue
        obj = lookup(kind, namespace, ref.get("name") or "")
        value = None if obj is None else _data(obj).get(ref.get("key") or "")
        if value is None:
            if ref.get("optional"):
                return None
            what = f'{kind.lower()} "{ref.get("name")}" not found' if obj is None else \
                f'couldn\'t find key {ref.get("key")} in {kind} {namespace}/{ref.get("name")}'
            raise ContainerConfigError(what)
        return value
    raise ContainerConfigError(f"env {name}: valueFrom names no source")


def field_value(pod: dict[str, Any], path: str, pod_ip: str = LOCAL_IP) -> str:
    """The downward API's ``fieldRef`` values; on this machine the host's IP is 127.0.0.1 and the pod's is its own
    loopback address (``pod_ip``)."""
    meta, spec = pod.get("metadata") or {}, pod.get("spec") or {}
    simple = {
        "metadata.name": meta.get("name"), "metadata.namespace": meta.get("namespace"), "metadata.uid": meta.get("uid"),
        "spec.nodeName": spec.get("nodeName"), "spec.serviceAccountName": spec.get("serviceAccountName"),
        "status.hostIP": LOCAL_IP, "status.hostIPs": LOCAL_IP, "status.podIP": pod_ip, "status.podIPs": pod_ip,
    }
    if path in simple:
        return simple[path] or ""
    m = _FIELD_KEY.match(path)
    if m:
        return str((meta.get(m.group(1)) or {}).get(m.group(2), ""))
    if path in ("metadata.labels", "metadata.annotations"):
        values = meta.get(path.split(".")[1]) or {}
        return "\n".join(f'{k}="{v}"' for k, v in sorted(values.items()))
    raise ContainerConfigError(f'unsupported fieldPath "{path}"')


def _resource_value(ref: dict[str, Any], container: dict[str, Any], allocatable: Mapping[str, str]) -> str:
    """``resourceFieldRef``: the container's limit or request, else the node's allocatable, over the divisor,
    rounded up (cpu) as the kubelet rounds it."""
    resource = ref.get("resource") or ""
    kind, _, res = resource.partition(".")
    resources = container.get("resources") or {}
    text = (resources.get(kind) or {}).get(res) if kind in ("limits", "requests") else None
    if text is None:
        text = allocatable.get(res, "0")
    try:
        value = quantity.parse(text).value
        divisor = quantity.parse(ref.get("divisor") or "1").value
    except quantity.QuantityError as e:
        raise ContainerConfigError(f"resourceFieldRef {resource}: {e}") from None
    if divisor == 0:
        divisor = Fraction(1)
    return str(math.ceil(value / divisor))

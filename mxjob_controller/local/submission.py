"""How ``local run`` submits its files: every object checked before any is created, as kubectl checks them.

    jobs = submit(client, documents, validate="Strict")   # the jobs (MXJobs, TFJobs, GenericJobs) among them

kubectl sends ``fieldValidation=Strict`` by default since 1.27 (``--validate=strict``): an unknown or duplicate
field fails the request, naming each (``strict decoding error: unknown field "spec.runPolicy.backofLimit"``),
where the server's default (``Warn``) would drop it and run the job without it. ``local run --validate`` takes
kubectl's values: ``strict`` (``true``, the default), ``warn`` (each problem printed, the field dropped) and
``ignore`` (``false``).

Guarantees:

- nothing is created unless every object passes: each is first sent as a dry run (``dryRun=All``, with
  ``Strict``), so a typo in the eighth job of a sweep stops the run before the first pod starts; only the
  namespaces the objects need exist by then;
- each refusal names the object (kind, namespace/name, the file it came from) and keeps the server's words, then
  adds a line per likely typo (``field_hints``: "did you mean ``backoffLimit``");
- a refusal is :class:`SubmitError` with the exit code it deserves: 2 (a bad file, as a usage error) when the object
  does not decode as its kind (unknown or duplicate fields, a kind the cluster does not serve), 1 when the API
  refused a value (a 422: a job the webhook finds invalid), as README says.
"""

from __future__ import annotations

import logging
from collections.abc import Callable, Sequence
from typing import Any, NamedTuple

from mxjob_controller.frameworks import FRAMEWORKS
from mxjob_controller.local import field_hints
from mxjob_controller.runtime.client import NAMESPACES, AlreadyExists, ApiError, Client, KubeError, Resource

log = logging.getLogger(__name__)

#: The job kinds followed to their end, and where they are served.
JOB_RESOURCES = {entry.kind: entry.framework().resource for entry in FRAMEWORKS.values()}
BAD_FILE, REFUSED = 2, 1


class SubmitError(Exception):
    """A document the API server refused: the message names it and says why; ``exit_code`` as the module says."""

    def __init__(self, message: str, exit_code: int = REFUSED) -> None:
        super().__init__(message)
        self.exit_code = exit_code


class Job(NamedTuple):
    """A submitted job: its resource and where it is."""

    resource: Resource
    namespace: str
    name: str

    @property
    def key(self) -> str:
        return f"{self.namespace}/{self.name}"


class _Target(NamedTuple):
    doc: dict[str, Any]
    resource: Resource
    namespace: str | None
    what: str           # "typo.yaml: MXJob default/typo"


def submit(client: Client, docs: Sequence[dict[str, Any]], validate: str = "Strict",
           sources: Sequence[str] | None = None, warn: Callable[[str], None] | None = None) -> list[Job]:
    """Check every document (a dry run each), then create them in order: the jobs among them.

    ``validate``: the server's ``fieldValidation`` (Strict, Warn, Ignore); ``sources``: the file each came from;
    ``warn``: where ``Warn``'s problems go."""
    return create(client, check(client, docs, validate, sources, warn))


class Checked(NamedTuple):
    """Documents that passed their dry runs (:func:`check`), to be created by :func:`create`."""

    targets: list[_Target]
    validate: str


def check(client: Client, docs: Sequence[dict[str, Any]], validate: str = "Strict",
          sources: Sequence[str] | None = None, warn: Callable[[str], None] | None = None) -> Checked:
    """The first half of :func:`submit`: the namespaces the documents need, and a dry run of each (SubmitError at
    the first refusal). ``local run`` checks while the cluster's controllers still start, and creates once they
    run, so that a sweep's jobs get their pods, and their places in the scheduler's queue, in the files' order."""
    targets = [_target(client, doc, (sources or [])[i] if i < len(sources or []) else "")
               for i, doc in enumerate(docs)]
    made: set[str] = set()
    for target in targets:
        if target.namespace and target.namespace not in made:
            _ensure_namespace(client, target.namespace)
            made.add(target.namespace)
    for target in targets:
        try:
            _create(client, target, validate, dry_run=True)
        except KubeError as e:
            raise _refusal(client, target, e) from None
        if validate == "Warn" and warn is not None:
            for problem in _strict_problems(client, target):
                warn(f"Warning: {target.what}: {problem}")
    return Checked(targets, validate)


def create(client: Client, checked: Checked) -> list[Job]:
    """The second half of :func:`submit`: create the checked documents in order; the jobs among them."""
    jobs: list[Job] = []
    for target in checked.targets:
        try:
            created = _create(client, target, checked.validate, dry_run=False)
        except KubeError as e:
            raise _refusal(client, target, e) from None
        kind = target.doc.get("kind") or ""
        if kind in JOB_RESOURCES and target.resource.group == JOB_RESOURCES[kind].group:
            jobs.append(Job(JOB_RESOURCES[kind], target.namespace or "default", created["metadata"]["name"]))
    return jobs


def _target(client: Client, doc: dict[str, Any], source: str) -> _Target:
    kind, meta = doc.get("kind") or "", doc.get("metadata") or {}
    api_version = doc.get("apiVersion") or ""
    resource = resource_for(client, api_version, kind, source)
    namespace = (meta.get("namespace") or "default") if resource.namespaced else None
    name = meta.get("name") or meta.get("generateName") or ""
    what = (f"{source}: " if source else "") + f"{kind} {(namespace + '/') if namespace else ''}{name}"
    return _Target(doc, resource, namespace, what)


def _ensure_namespace(client: Client, namespace: str) -> None:
    try:
        client.create(NAMESPACES, {"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": namespace}})
    except AlreadyExists:
        pass


def _create(client: Client, target: _Target, validation: str, dry_run: bool) -> dict[str, Any]:
    query = {"fieldValidation": validation, "dryRun": "All" if dry_run else None}
    return client.request("POST", target.resource.path(target.namespace), query=query, body=dict(target.doc))


def resource_for(client: Client, api_version: str, kind: str, source: str = "") -> Resource:
    """The resource serving ``kind`` in ``api_version``, from discovery (as kubectl finds it)."""
    group, _, version = api_version.rpartition("/")
    path = f"/apis/{group}/{version}" if group else f"/api/{version}"
    try:
        listing = client.request("GET", path)
    except ApiError:
        listing = None
    entries = [e for e in (listing or {}).get("resources") or [] if "/" not in e.get("name", "")]
    for entry in entries:
        if entry.get("kind") == kind:
            return Resource(group, version, entry["name"], namespaced=bool(entry.get("namespaced")), kind=kind)
    guess = field_hints.nearest(kind, [e.get("kind") or "" for e in entries])
    where = f"{source}: " if source else ""
    raise SubmitError(f'{where}no matches for kind "{kind}" in version "{api_version}": the local cluster serves no '
                      f"such resource" + (f'; did you mean "{guess}"?' if guess else ""), BAD_FILE)


def api_message(e: KubeError) -> str:
    status = getattr(e, "status", None) or {}
    message = status.get("message") if isinstance(status, dict) else None
    return message or str(e)


def _undecodable(e: KubeError) -> bool:
    """A 400 ``strict decoding error``: the object is not one of its kind as written."""
    return getattr(e, "code", None) == 400 and "strict decoding error" in api_message(e)


def _problems(e: KubeError) -> list[str]:
    detail = api_message(e).partition("strict decoding error: ")[2]
    return [p.strip() for p in detail.split(", ") if p.strip().startswith(("unknown field", "duplicate field"))]


def _strict_problems(client: Client, target: _Target) -> list[str]:
    """What ``Strict`` would refuse in an object that passed under ``Warn`` (the dropped fields, to print)."""
    try:
        _create(client, target, "Strict", dry_run=True)
    except KubeError as e:
        if _undecodable(e):
            hints = field_hints.hints(api_message(e), lambda: _schema(client, target.resource))
            return _problems(e) + hints
    return []


def _refusal(client: Client, target: _Target, e: KubeError) -> SubmitError:
    message = api_message(e)
    lines = [f"{target.what}: {message}"]
    lines += [f"  {hint}" for hint in field_hints.hints(message, lambda: _schema(client, target.resource))]
    return SubmitError("\n".join(lines), BAD_FILE if _undecodable(e) else REFUSED)


def _schema(client: Client, resource: Resource) -> tuple[Any, Any] | None:
    """The kind's OpenAPI v3 schema as the server publishes it (None when it cannot be read: no hints then)."""
    path = f"apis/{resource.group}/{resource.version}" if resource.group else f"api/{resource.version}"
    try:
        document = client.request("GET", f"/openapi/v3/{path}")
    except KubeError as e:
        log.debug("reading the schema of %s failed: %s", resource.kind, e)
        return None
    return field_hints.kind_schema(document or {}, resource.group, resource.version, resource.kind or "")

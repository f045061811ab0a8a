"""An object's ``metadata.managedFields``: who owns which fields, and how an Update or an Apply changes that.

This is structured-merge-diff's ``Updater`` with the layers kube-apiserver wraps around it
(``k8s.io/apimachinery/pkg/util/managedfields/internal``), in one place:

- an **Update** (create, update, patch) gives its manager every field it added or changed and takes them from
  everyone else, without conflicts; fields it removed leave every manager. A write that changes nothing adds
  no entry and leaves times alone.
- an **Apply** merges the configuration in, owns exactly the configuration's fields, removes the fields it
  applied last time and no longer does (unless another manager owns them), and is refused with the conflicts
  where it would change a value someone else owns, unless forced, which moves those fields to it.
- the identity of a manager is (name, operation, subresource, and the apiVersion of an Update); the object's
  identity and bookkeeping fields (name, uid, resourceVersion…) are never owned; more than 10 Update managers
  fold the oldest into ``ancient-changes``; entries are written Apply first, then by time.
"""

from __future__ import annotations

import functools
import json
import threading
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, replace
from typing import Any

from mxjob_controller.kube.timefmt import parse_time
from mxjob_controller.local.apiserver.managedfields import fieldpath as fp
from mxjob_controller.local.apiserver.managedfields import typed
from mxjob_controller.local.apiserver.managedfields.fieldpath import EMPTY, FieldSet, Path
from mxjob_controller.local.apiserver.managedfields.schema import Type

APPLY, UPDATE = "Apply", "Update"
MAX_UPDATE_MANAGERS = 10
ANCIENT = "ancient-changes"
BEFORE_FIRST_APPLY = "before-first-apply"
_STRIPPED: FieldSet = frozenset({("f:apiVersion",), ("f:kind",), ("f:metadata",)} | {
    ("f:metadata", "f:" + name) for name in ("name", "namespace", "creationTimestamp", "selfLink", "uid",
                                              "clusterName", "generation", "managedFields", "resourceVersion")})


class ManagedFieldsError(ValueError):
    """``metadata.managedFields`` that kube cannot decode (its message)."""


#: The sets of FieldsV1 documents read lately, by the document (its identity; the entry keeps it alive, so the
#: identity cannot be another's): a controller's status writes hand its stored document back unchanged (``update``),
#: and each write would read it again. Only stored documents (lazy entries) get here, and nothing writes into a
#: stored object. Cleared when full.
_READ: dict[int, tuple[Any, FieldSet]] = {}
_READ_LIMIT = 1024


def _read_fields_v1(raw: Any) -> FieldSet:
    hit = _READ.get(id(raw))
    if hit is not None and hit[0] is raw:
        return hit[1]
    fields = fp.from_fields_v1(raw)
    if len(_READ) >= _READ_LIMIT:
        _READ.clear()
    _READ[id(raw)] = (raw, fields)
    return fields


@dataclass(frozen=True, slots=True)
class Entry:
    """One manager's fields. ``raw`` is the FieldsV1 document they were read from (or built as), written back
    unchanged; ``fields``, the set of paths, is read from it only when an operation needs it (None until then),
    so an entry a write does not touch costs neither decoding nor encoding."""

    manager: str
    operation: str
    api_version: str
    subresource: str = ""
    time: str | None = None
    fields: FieldSet | None = EMPTY
    raw: Any = None

    def paths(self) -> FieldSet:
        if self.fields is None:
            object.__setattr__(self, "fields", _read_fields_v1(self.raw))
        return self.fields  # type: ignore[return-value]

    def owns_any(self, paths: FieldSet) -> bool:
        if self.fields is not None:
            return not self.fields.isdisjoint(paths)
        return any(fp.fields_v1_has(self.raw, p) for p in paths)

    @property
    def identity(self) -> tuple[str, str, str, str]:
        return (self.manager, self.operation, self.api_version if self.operation == UPDATE else "",
                self.subresource)

    def identifier(self) -> str:
        """kube's manager identifier (the entry as JSON without fields and time), which orders conflicts."""
        out: dict[str, str] = {"manager": self.manager, "operation": self.operation}
        if self.operation == UPDATE and self.api_version:
            out["apiVersion"] = self.api_version
        if self.subresource:
            out["subresource"] = self.subresource
        return json.dumps(out, separators=(",", ":"))

    def described(self) -> str:
        """The manager as a conflict names it: ``"kubectl"``, ``"x" with subresource "status" using v1``."""
        text = json.dumps(self.manager, ensure_ascii=False)
        if self.subresource:
            text += f" with subresource {json.dumps(self.subresource)}"
        if self.operation == UPDATE:
            text += f" using {self.api_version}"
        return text

    def but(self, time: str | None, fields: FieldSet | None, raw: Any) -> Entry:
        """This manager with this time and these fields: ``dataclasses.replace``, which costs several times this
        (it walks the dataclass's fields), for what every write does once or twice."""
        return Entry(self.manager, self.operation, self.api_version, self.subresource, time, fields, raw)

    def with_fields(self, fields: FieldSet) -> Entry:
        return self if fields is self.fields else self.but(self.time, fields, None)

    def lazy(self) -> Entry:
        """This entry with its paths to be read from ``raw`` only when needed."""
        return self.but(self.time, None, self.raw) if self.raw is not None else self


Managers = dict[tuple[str, str, str, str], Entry]


class ApplyConflictError(Exception):
    """An Apply that would change fields other managers own: each (manager, path), in kube's order."""

    def __init__(self, conflicts: Sequence[tuple[Entry, Path]]) -> None:
        self.conflicts = list(conflicts)
        super().__init__(self.message())

    def message(self) -> str:
        if len(self.conflicts) == 1:
            entry, path = self.conflicts[0]
            return f"Apply failed with 1 conflict: conflict with {entry.described()}: {fp.path_string(path)}"
        lines: list[str] = []
        by_manager: dict[str, tuple[Entry, list[Path]]] = {}
        for entry, path in self.conflicts:
            by_manager.setdefault(entry.identifier(), (entry, []))[1].append(path)
        for ident in sorted(by_manager):
            entry, paths = by_manager[ident]
            lines.append(f"conflicts with {entry.described()}:")
            lines.extend(f"- {fp.path_string(p)}" for p in paths)
        return f"Apply failed with {len(self.conflicts)} conflicts: " + "\n".join(lines)

    def causes(self) -> list[dict[str, str]]:
        return [{"reason": "FieldManagerConflict", "message": f"conflict with {entry.described()}",
                 "field": fp.path_string(path)} for entry, path in self.conflicts]


# --- decoding and encoding ---------------------------------------------------------------------------------

def is_reset(raw: Any) -> bool:
    """``managedFields: []`` or ``[{}]`` in a write: the caller asks for no managed fields at all."""
    return isinstance(raw, list) and (not raw or (len(raw) == 1 and raw[0] == {}))


def decode(raw: Any, lazy: bool = False) -> Managers:
    """The entries of ``metadata.managedFields``; raises ManagedFieldsError with kube's message. ``lazy``: their
    FieldsV1 documents are read when first needed (stored entries, valid when they were written)."""
    out: Managers = {}
    if raw is None:
        return out
    if not isinstance(raw, list):
        raise ManagedFieldsError("managedFields must be a list")
    for i, item in enumerate(raw):
        if not isinstance(item, dict):
            raise ManagedFieldsError(f"managed fields entry {i} must be an object")
        operation = item.get("operation")
        if operation not in (APPLY, UPDATE):
            raise ManagedFieldsError("operation must be `Apply` or `Update`")
        if not item.get("apiVersion"):
            raise ManagedFieldsError("apiVersion must not be empty")
        fields_type = item.get("fieldsType")
        if not fields_type:
            raise ManagedFieldsError(f"missing fieldsType in managed fields entry {i}")
        if fields_type != "FieldsV1":
            raise ManagedFieldsError(f'invalid fieldsType "{fields_type}" in managed fields entry {i}')
        doc = item.get("fieldsV1")
        try:
            fields = None if lazy and isinstance(doc, dict) else fp.from_fields_v1(doc) if doc is not None else EMPTY
        except fp.FieldsV1Error as e:
            raise ManagedFieldsError(f"error decoding FieldsV1 of managed fields entry {i}: {e}") from None
        entry = Entry(str(item.get("manager") or ""), operation, str(item["apiVersion"]),
                      str(item.get("subresource") or ""), item.get("time"), fields, doc)
        out[entry.identity] = entry
    return out


@functools.lru_cache(maxsize=1024)
def _parsed_time(value: str) -> float:
    """Entries are ordered by their times on every write; an entry's time is read again by each later write."""
    return parse_time(value) or 0.0


def _time_order(entry: Entry) -> float:
    return _parsed_time(entry.time) if type(entry.time) is str else parse_time(entry.time) or 0.0


def encode(managers: Managers) -> list[dict] | None:
    """``metadata.managedFields`` for these entries, in kube's order; None when there are none."""
    if not managers:
        return None
    ordered = sorted(managers.values(), key=lambda e: (e.operation, _time_order(e), e.manager, e.api_version,
                                                        e.subresource))
    out = []
    for e in ordered:
        item: dict[str, Any] = {"manager": e.manager, "operation": e.operation, "apiVersion": e.api_version}
        if e.time:
            item["time"] = e.time
        item["fieldsType"] = "FieldsV1"
        item["fieldsV1"] = e.raw if e.raw is not None else fp.to_fields_v1(e.fields)
        if e.subresource:
            item["subresource"] = e.subresource
        out.append(item)
    return out


# --- Update --------------------------------------------------------------------------------------------------

def update(managers: Managers, old: Any, new: Any, t: Type, who: Entry, now: str,
           ignore: FieldSet = EMPTY) -> Managers:
    """The entries after ``who`` (an Update) turned ``old`` into ``new``: it owns what it added or changed, taken
    from the others; removed fields leave everyone. ``ignore``: reset fields, which nobody owns through this
    endpoint. Raises typed.FieldSetError for an object its schema cannot index."""
    cmp = typed.compare(old, new, t)
    changed, gone = cmp.changed(ignore), cmp.gone(ignore)
    touched = changed | gone
    out: Managers = {}
    for ident, entry in managers.items():
        if touched and entry.owns_any(touched):
            fields = entry.paths() - touched
            if fields:
                out[ident] = entry.with_fields(fields)
        else:
            out[ident] = entry
    mine = changed - _STRIPPED
    if mine:
        previous = out.get(who.identity)
        fields = mine | previous.paths() if previous is not None else mine
        stored = managers.get(who.identity)
        if stored is not None and stored.raw is not None and fields == stored.paths():
            # The writer's set is what it was (a controller writing the same status fields again, the common
            # case): its FieldsV1 document is written back as read, only its time moves; not built again.
            out[who.identity] = stored.but(now, stored.fields, stored.raw)
        else:
            out[who.identity] = who.but(now, frozenset(fields), None)
    return cap_updaters(out)


def created(zero: Any, new: Any, t: Type, who: Entry, now: str, ignore: FieldSet = EMPTY) -> Managers:
    """``update({}, zero, new, ...)`` for a create, the common case, built straight as FieldsV1."""
    doc = typed.added_fields_v1(zero, new, t)
    doc = fp.prune_fields_v1(doc, ignore)
    doc = fp.prune_fields_v1(doc, _STRIPPED, members_only=True)
    if not doc:
        return {}
    return {who.identity: who.but(now, None, _shared(doc))}


#: The FieldsV1 documents of creates lately (a few, the latest first): the objects a controller creates from one
#: template have one document (their names and values differ, not their fields), which they then share: it is
#: read into a set once (:func:`_read_fields_v1`) and encoded once (``storage/json_parts``), and kept once.
_CREATED: list[dict] = []
_CREATED_KEPT = 8
_CREATED_LOCK = threading.Lock()


def _shared(doc: dict) -> dict:
    """An equal document created before, or ``doc`` (then kept). Documents built by :func:`created` are in kube's
    order, so equal ones are the same JSON; nothing writes into a stored document."""
    with _CREATED_LOCK:
        recent = _CREATED
        for i, known in enumerate(recent):
            if known == doc:
                if i:
                    recent.insert(0, recent.pop(i))
                return known
        recent.insert(0, doc)
        del recent[_CREATED_KEPT:]
    return doc


def cap_updaters(managers: Managers, limit: int = MAX_UPDATE_MANAGERS) -> Managers:
    """Fold the oldest Update managers into one ``ancient-changes`` entry per apiVersion until at most ``limit``
    remain, as kube's capManagers does (an object would otherwise grow an entry per client)."""
    updaters = [e for e in managers.values() if e.operation == UPDATE]
    if len(updaters) <= limit:
        return managers
    out = dict(managers)
    count = len(updaters)
    first: dict[str, tuple[str, str, str, str]] = {}
    for entry in sorted(updaters, key=lambda e: (_time_order(e), e.identifier())):
        if count <= limit:
            break
        version = entry.api_version
        bucket_id = (ANCIENT, UPDATE, version, "")
        if version not in first:
            first[version] = entry.identity
            continue
        bucket = out.get(bucket_id)
        if bucket is None:
            oldest = out.pop(first[version])
            bucket = Entry(ANCIENT, UPDATE, version, "", oldest.time, oldest.paths())
        out.pop(entry.identity, None)
        out[bucket_id] = replace(bucket, fields=bucket.paths() | entry.paths(), time=entry.time, raw=None)
        count -= 1
    return out


# --- Apply -----------------------------------------------------------------------------------------------------

def apply(managers: Managers, live: Any, config: dict, t: Type, who: Entry, now: str, force: bool,
          ignore: FieldSet = EMPTY) -> tuple[dict | None, Managers]:
    """``config`` applied by ``who`` to ``live``: (the new object, or None when nothing changes; the entries).

    Raises ApplyConflictError unless ``force``; typed.FieldSetError for a configuration the schema cannot hold."""
    typed.check_no_duplicates(config, t)
    config_set = fp.recursive_difference(typed.to_set(config, t, strict=True), ignore)
    merged = typed.merge(live, config, t)
    if merged is typed.ABSENT:
        merged = {}
    ident = who.identity
    last = managers.get(ident)
    working = dict(managers)
    working[ident] = replace(who, fields=config_set, raw=None, time=last.time if last else None)
    if last is not None and last.paths():
        merged = _prune(merged, working, last.paths(), t)
    cmp = typed.compare(live, merged, t)
    changed, gone = cmp.changed(ignore), cmp.gone(ignore)
    conflicts: list[tuple[Entry, Path]] = []
    out: Managers = {}
    for other, entry in working.items():
        if other == ident:
            continue
        if not entry.owns_any(changed | gone):
            out[other] = entry
            continue
        taken = entry.paths() & changed
        if taken:
            conflicts.extend((entry, p) for p in fp.sorted_paths(taken))
        fields = entry.paths() - taken - gone
        if fields:
            out[other] = entry.with_fields(fields)
    if conflicts and not force:
        conflicts.sort(key=lambda c: c[0].identifier())
        raise ApplyConflictError(conflicts)
    mine = working[ident].paths() - _STRIPPED
    noop = live == merged
    if mine:
        out[ident] = replace(working[ident], fields=frozenset(mine), time=working[ident].time if noop else now)
    return (None if noop else merged), out


def _prune(merged: dict, managers: Mapping[Any, Entry], last: FieldSet, t: Type) -> dict:
    """Remove what the applier applied last time and no longer does, unless another manager owns it (kube's
    ``prune`` with its two add-back passes, as set operations)."""
    def named(paths: Iterable[Path]) -> FieldSet:
        return typed.ensure_named_fields(paths, t)

    def removed(paths: FieldSet) -> dict:
        value = typed.remove(merged, paths, t)
        return {} if value is typed.ABSENT else value

    last_named = named(last)
    merged_set = named(typed.to_set(merged, t))
    first = removed(last_named)
    owned: set[Path] = set()
    for entry in managers.values():
        owned |= entry.paths()
    second = removed(merged_set - (named(typed.to_set(first, t)) | named(owned)))
    return removed((merged_set - named(typed.to_set(second, t))) & last_named)


def before_first_apply(live: Any, zero: Any, t: Type, api_version: str, now: str) -> Managers:
    """Owners for an object nobody tracked yet, before its first Apply: ``before-first-apply`` owns all it holds."""
    return created(zero, live, t, Entry(BEFORE_FIRST_APPLY, UPDATE, api_version), now)

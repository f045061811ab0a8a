"""The garbage collector of kube-controller-manager, inside the embedded API server.

It follows ``metadata.ownerReferences``:
- when an owner is gone, its dependents are deleted (in the background; each with the policy its own
  finalizers ask for);
- an owner deleted in the foreground (``foregroundDeletion`` finalizer) has all its dependents deleted, and loses
  the finalizer (so goes) once no dependent with ``blockOwnerDeletion: true`` remains;
- an owner deleted with ``orphan`` has its reference stripped from every dependent, then loses the finalizer;
- a dependent whose owner does not exist (or has another uid) is deleted, but only if the owner's kind is served:
  a reference to a kind the server does not know is left alone, and looked at again when the served kinds change
  (kube retries it the same way). Owners seen deleted are remembered (kube's absentOwnerCache), so the dependents
  of a custom resource still go when its CRD went with it.

The dependency graph is an index by owner uid, kept current from ``Store.add_commit_hook`` (one event at a time, in
commit order, never a scan). The hook only records and queues; the work (reads, patches, deletes through the REST
layer, so with every rule a client's request gets) happens on one thread, ``apiserver-gc``.
"""

from __future__ import annotations

import json
import logging
import threading
from collections import OrderedDict
from dataclasses import dataclass

from mxjob_controller.local.apiserver.controllers.workqueue import Park, QueueController
from mxjob_controller.local.apiserver.errors import StatusError
from mxjob_controller.local.apiserver.patch.field_manager import controller_manager_agent
from mxjob_controller.local.apiserver.request import MERGE_PATCH, Request
from mxjob_controller.local.apiserver.resources import Registry, ResourceType
from mxjob_controller.local.apiserver.rest import REST
from mxjob_controller.local.apiserver.storage.store import Store
from mxjob_controller.local.apiserver.storage.watch import DELETED, Entry, Event
from mxjob_controller.local.apiserver.verbs.deletion import (
    BACKGROUND,
    FOREGROUND,
    FOREGROUND_FINALIZER,
    ORPHAN,
    ORPHAN_FINALIZER,
    DeleteOptions,
)

log = logging.getLogger(__name__)

_ABSENT_OWNERS = 10_000  # how many deleted owners are remembered
_USER_AGENT = controller_manager_agent("generic-garbage-collector")


@dataclass(frozen=True, slots=True)
class ObjRef:
    """One object, as the collector tracks it: where it is stored and which incarnation (uid)."""

    key: str
    namespace: str
    name: str
    uid: str


_DELETE, _ORPHAN = "delete", "orphan"
WorkItem = tuple[str, ObjRef]


class _NotCollectable(Exception):  # noqa: N818
    """The dependent's references can never be resolved (a cluster-scoped object with a namespaced owner)."""


class GarbageCollector(QueueController[WorkItem]):
    """References to kinds not served yet park (and do not count for ``wait_idle``) until the served kinds change."""

    def __init__(self, registry: Registry, store: Store, rest: REST) -> None:
        self._registry = registry
        self._store = store
        self._rest = rest
        self._lock = threading.Lock()
        self._by_uid: dict[str, ObjRef] = {}
        self._owners: dict[ObjRef, tuple[dict, ...]] = {}        # dependent -> its ownerReferences
        self._dependents: dict[str, dict[ObjRef, dict]] = {}      # owner uid -> dependent -> the reference
        self._absent: OrderedDict[str, None] = OrderedDict()     # uids of owners seen deleted
        super().__init__("apiserver-gc", store, self._work)
        registry.add_listener(self._queue.unpark)

    # --- introspection --------------------------------------------------------------------------------

    def dependents(self, owner_uid: str) -> list[ObjRef]:
        with self._lock:
            return list(self._dependents.get(owner_uid, {}))

    # --- the graph, from commit hooks (writer threads: record and queue, nothing more) -----------------

    def _record(self, key: str, ev: Event) -> None:
        meta = ev.entry.obj.get("metadata") or {}
        uid = meta.get("uid")
        if not isinstance(uid, str) or not uid:
            return
        ref = ObjRef(key, meta.get("namespace") or "", meta.get("name") or "", uid)
        refs = () if ev.type == DELETED else tuple(r for r in meta.get("ownerReferences") or []
                                                   if isinstance(r, dict) and isinstance(r.get("uid"), str)
                                                   and r["uid"])
        work: list[WorkItem] = []
        with self._lock:
            old_refs = self._owners.pop(ref, ())
            for r in old_refs:
                deps = self._dependents.get(r["uid"])
                if deps is not None:
                    deps.pop(ref, None)
                    if not deps:
                        del self._dependents[r["uid"]]
            if refs:
                self._owners[ref] = refs
                for r in refs:
                    self._dependents.setdefault(r["uid"], {})[ref] = r
            if ev.type == DELETED:
                self._by_uid.pop(uid, None)
                dependents = list(self._dependents.get(uid, {}))
                if dependents:
                    self._remember_absent(uid)
                work.extend((_DELETE, d) for d in dependents)
                waiting_owners = [self._by_uid.get(r["uid"]) for r in old_refs]
            else:
                self._by_uid[uid] = ref
                old_uids = {r["uid"] for r in old_refs}
                new_uids = {r["uid"] for r in refs}
                if new_uids - old_uids:
                    work.append((_DELETE, ref))  # a new owner: does it exist?
                waiting_owners = [self._by_uid.get(u) for u in old_uids - new_uids]
                if meta.get("deletionTimestamp"):
                    finalizers = meta.get("finalizers") or ()
                    if ORPHAN_FINALIZER in finalizers:
                        work.append((_ORPHAN, ref))
                    if FOREGROUND_FINALIZER in finalizers:
                        work.append((_DELETE, ref))
                        if not _deleting_dependents(ev.prev):
                            work.extend((_DELETE, d) for d in self._dependents.get(uid, {}))
        for owner in waiting_owners:  # a dependent went away: an owner in foreground deletion may be done
            if owner is not None and _deleting_dependents(self._store.get(owner.key, (owner.namespace, owner.name))):
                work.append((_DELETE, owner))
        for item in work:
            self._queue.add(item)

    def _remember_absent(self, uid: str) -> None:
        self._absent[uid] = None
        self._absent.move_to_end(uid)
        while len(self._absent) > _ABSENT_OWNERS:
            self._absent.popitem(last=False)

    # --- the worker ---------------------------------------------------------------------------------------

    def _work(self, item: WorkItem) -> None:
        action, ref = item
        found = self._current(ref)
        if found is None:
            return
        rt, entry = found
        if action == _ORPHAN:
            self._orphan_dependents(ref, rt, entry)
        else:
            self._attempt_to_delete(ref, rt, entry)

    def _current(self, ref: ObjRef) -> tuple[ResourceType, Entry] | None:
        types = self._registry.by_storage_key(ref.key)
        entry = self._store.get(ref.key, (ref.namespace, ref.name))
        if not types or entry is None or (entry.obj.get("metadata") or {}).get("uid") != ref.uid:
            return None
        return types[0], entry

    def _attempt_to_delete(self, ref: ObjRef, rt: ResourceType, entry: Entry) -> None:
        """kube's attemptToDeleteItem."""
        meta = entry.obj.get("metadata") or {}
        if meta.get("deletionTimestamp"):
            if FOREGROUND_FINALIZER in (meta.get("finalizers") or ()):
                self._process_deleting_dependents(ref, rt, entry)
            return
        references = [r for r in meta.get("ownerReferences") or []
                      if isinstance(r, dict) and isinstance(r.get("uid"), str) and r["uid"]]
        if not references:
            return
        try:
            solid, dangling, waiting = self._classify(ref, references)
        except _NotCollectable:
            log.info("garbage collector: %s/%s is cluster-scoped but names a namespaced owner; left alone",
                     ref.key, ref.name)
            return
        if solid:
            gone = {r["uid"] for r in dangling + waiting}
            if gone:
                kept = [r for r in meta.get("ownerReferences") or [] if r.get("uid") not in gone]
                self._patch(ref, rt, entry, {"ownerReferences": kept or None})
            return
        if waiting and self.dependents(ref.uid):
            if any(_deleting_dependents(self._entry(d)) for d in self.dependents(ref.uid)):
                # Break a possible cycle of foreground deletions: stop blocking our owners first.
                unblocked = [dict(r, blockOwnerDeletion=False) if r.get("blockOwnerDeletion") else r
                             for r in meta.get("ownerReferences") or []]
                entry = self._patch(ref, rt, entry, {"ownerReferences": unblocked}) or entry
            self._delete(ref, rt, entry, FOREGROUND)
            return
        finalizers = meta.get("finalizers") or ()
        policy = ORPHAN if ORPHAN_FINALIZER in finalizers else FOREGROUND if FOREGROUND_FINALIZER in finalizers \
            else BACKGROUND
        self._delete(ref, rt, entry, policy)

    def _classify(self, ref: ObjRef, references: list[dict]) -> tuple[list[dict], list[dict], list[dict]]:
        """(solid, dangling, waiting-for-dependents) owners, as kube's classifyReferences; Park if unresolvable."""
        solid: list[dict] = []
        dangling: list[dict] = []
        waiting: list[dict] = []
        for r in references:
            with self._lock:
                known_absent = r["uid"] in self._absent
            if known_absent:
                dangling.append(r)
                continue
            owner_rt = self._registry.by_kind(str(r.get("apiVersion") or ""), str(r.get("kind") or ""))
            if owner_rt is None:
                raise Park  # the owner's kind is not served (yet): never delete on its account
            if owner_rt.namespaced and not ref.namespace:
                raise _NotCollectable
            namespace = ref.namespace if owner_rt.namespaced else ""
            owner = self._store.get(owner_rt.storage_key, (namespace, str(r.get("name") or "")))
            owner_meta = (owner.obj.get("metadata") or {}) if owner is not None else {}
            if owner is None or owner_meta.get("uid") != r["uid"]:
                with self._lock:
                    self._remember_absent(r["uid"])
                dangling.append(r)
            elif owner_meta.get("deletionTimestamp") and FOREGROUND_FINALIZER in (owner_meta.get("finalizers") or ()):
                waiting.append(r)
            else:
                solid.append(r)
        return solid, dangling, waiting

    def _process_deleting_dependents(self, ref: ObjRef, rt: ResourceType, entry: Entry) -> None:
        """An owner in foreground deletion goes once no dependent blocks it; until then, push its blockers."""
        with self._lock:
            blocking = [d for d, r in self._dependents.get(ref.uid, {}).items() if r.get("blockOwnerDeletion")]
        blocking = [d for d in blocking if self._entry(d) is not None]
        if not blocking:
            finalizers = [f for f in (entry.obj.get("metadata") or {}).get("finalizers") or []
                          if f != FOREGROUND_FINALIZER]
            self._patch(ref, rt, entry, {"finalizers": finalizers or None})
            return
        for d in blocking:
            if not _deleting_dependents(self._entry(d)):
                self._queue.add((_DELETE, d))

    def _orphan_dependents(self, owner: ObjRef, rt: ResourceType, entry: Entry) -> None:
        """Strip the owner from every dependent, then drop its ``orphan`` finalizer (kube's attemptToOrphan)."""
        meta = entry.obj.get("metadata") or {}
        if not meta.get("deletionTimestamp") or ORPHAN_FINALIZER not in (meta.get("finalizers") or ()):
            return
        for d in self.dependents(owner.uid):
            found = self._current(d)
            if found is None:
                continue
            d_rt, d_entry = found
            refs = (d_entry.obj.get("metadata") or {}).get("ownerReferences") or []
            kept = [r for r in refs if r.get("uid") != owner.uid]
            if len(kept) != len(refs):
                self._patch(d, d_rt, d_entry, {"ownerReferences": kept or None})
        latest = self._current(owner)
        if latest is None:
            return
        finalizers = [f for f in (latest[1].obj.get("metadata") or {}).get("finalizers") or []
                      if f != ORPHAN_FINALIZER]
        self._patch(owner, rt, latest[1], {"finalizers": finalizers or None})

    # --- writes, through the REST layer ---------------------------------------------------------------

    def _entry(self, ref: ObjRef) -> Entry | None:
        entry = self._store.get(ref.key, (ref.namespace, ref.name))
        if entry is None or (entry.obj.get("metadata") or {}).get("uid") != ref.uid:
            return None
        return entry

    def _patch(self, ref: ObjRef, rt: ResourceType, entry: Entry, metadata: dict) -> Entry | None:
        """A merge patch of ``metadata`` guarded by uid and resourceVersion; None if the object is gone."""
        body = {"metadata": dict(metadata, uid=ref.uid,
                                 resourceVersion=(entry.obj.get("metadata") or {}).get("resourceVersion"))}
        req = Request("patch", rt, namespace=ref.namespace or None, name=ref.name, content_type=MERGE_PATCH,
                      body=json.dumps(body).encode(), user_agent=_USER_AGENT)
        try:
            self._rest.handle(req)
        except StatusError as e:
            if e.code == 404:
                return None
            raise  # 409: retried with backoff by the queue
        return self._entry(ref)

    def _delete(self, ref: ObjRef, rt: ResourceType, entry: Entry, policy: str) -> None:
        opts = DeleteOptions(propagation_policy=policy, uid=ref.uid,
                             resource_version=(entry.obj.get("metadata") or {}).get("resourceVersion"))
        try:
            self._rest.deleter.delete(rt, (ref.namespace, ref.name), opts)
        except StatusError as e:
            if e.code != 404:
                raise


def _deleting_dependents(entry: Entry | None) -> bool:
    meta = (entry.obj.get("metadata") or {}) if entry is not None else {}
    return bool(meta.get("deletionTimestamp")) and FOREGROUND_FINALIZER in (meta.get("finalizers") or ())

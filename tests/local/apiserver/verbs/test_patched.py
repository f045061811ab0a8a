"""A merge patch is applied to the stored object itself, then copies what its result holds of it.

``verbs/write._patched`` must give what patching a copy gave, and a result the write may change: no container of
the stored object in it but its managed fields (and, on a custom resource's status write, the parts other than
metadata and status, which the status strategy replaces).
"""

from __future__ import annotations

import copy

import pytest

from mxjob_controller.kube.patch.merge import apply_merge_patch
from mxjob_controller.local.apiserver.patch.patchers import json_patch, merge_patch
from mxjob_controller.local.apiserver.verbs.write import _patched
from tests.local.apiserver.validation.test_status_walk import RT

STORED = {
    "apiVersion": "example.com/v1", "kind": "Widget",
    "metadata": {"name": "w", "namespace": "default", "resourceVersion": "7", "labels": {"a": "1", "b": "2"},
    "ownerReferences": [{"kind": "X", "name": "x", "uid": "u"}],
                 "managedFields": [{"manager": "m", "operation": "Update", "fieldsV1": {"f:spec": {}}}]},
    "spec": {"replicas": 2, "template": {"containers": [{"name": "a", "env": [{"name": "E", "value": "1"}]}]}},
    "status": {"phase": "Running", "conditions": [{"type": "Running", "status": "True"}],
               "replicaStatuses": {"Worker": {"active": 2}, "Server": {"active": 1}}, "startTime": "t"},
}

PATCHES = [
    {"metadata": {"resourceVersion": "7"}, "status": {"conditions": [{"type": "Done"}],
                                                      "replicaStatuses": {"Worker": {"active": 1}}}},
    {"status": {"phase": None, "replicaStatuses": {"Server": None, "Chief": {"active": 1}}}},
    {"metadata": {"labels": {"a": None, "c": "3"}}, "spec": {"template": {"containers": []}}},
    {"spec": {"replicas": 3}},
    {"status": "gone"},
    {"metadata": None},
    {},
]


def _containers(value: object, skip: tuple = ()) -> list[object]:
    """Every dict and list in ``value`` (by identity), but those found at the top-level keys or metadata keys in
    ``skip``."""
    out: list[object] = []
    stack = [(value, ())]
    while stack:
        node, path = stack.pop()
        if path in skip:
            continue
        if isinstance(node, dict):
            out.append(node)
            stack.extend((v, (*path, k)) for k, v in node.items())
        elif isinstance(node, list):
            out.append(node)
            stack.extend((v, (*path, i)) for i, v in enumerate(node))
    return out


@pytest.mark.parametrize("patch", PATCHES)
@pytest.mark.parametrize("status_write", [False, True])
def test_a_merge_patch_gives_what_patching_a_copy_gave_and_shares_only_what_it_may(patch, status_write):
    stored = copy.deepcopy(STORED)
    pristine = copy.deepcopy(STORED)
    got = _patched(RT, stored, merge_patch, copy.deepcopy(patch), status_write)
    assert got == apply_merge_patch(copy.deepcopy(STORED), patch)
    assert stored == pristine
    shared_ok = [("metadata", "managedFields")] + ([("spec",)] if status_write else [])
    mine = {id(c) for c in _containers(got, tuple(shared_ok))}
    theirs = {id(c) for c in _containers(stored, tuple(shared_ok))}
    assert not mine & theirs
    if "managedFields" in (got.get("metadata") or {}) and "metadata" in patch:
        assert got["metadata"]["managedFields"] is stored["metadata"]["managedFields"]
    if status_write and "spec" not in patch:
        assert got["spec"] is stored["spec"]


def test_other_patches_get_a_copy() -> None:
    stored = copy.deepcopy(STORED)
    got = _patched(RT, stored, json_patch, [{"op": "replace", "path": "/spec/replicas", "value": 5}], False)
    assert got["spec"]["replicas"] == 5 and stored["spec"]["replicas"] == 2
    assert not {id(c) for c in _containers(got)} & {id(c) for c in _containers(stored)}

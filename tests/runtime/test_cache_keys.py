"""The cache's keys and index functions (runtime/cache_keys.py): only a controller reference whose ``controller`` is
boolean true controls, for the index and the core's ownership checks alike."""

from __future__ import annotations

from mxjob_controller.runtime.cache_keys import controller_ref, controller_uid_index


def test_only_a_controller_reference_that_is_boolean_true_controls():
    """kube decodes ``controller`` as a bool: "true" or 1 is not a controller. The cache's index and the core's
    ownership checks read the reference through one function, so they cannot disagree."""
    def owned(controller: object, uid: str = "u1") -> dict:
        return {"metadata": {"name": "p", "namespace": "n",
                             "ownerReferences": [{"apiVersion": "v1", "kind": "X", "name": "x", "uid": "u0"},
                                                 {"apiVersion": "v1", "kind": "X", "name": "y", "uid": uid,
                                                  "controller": controller}]}}

    assert controller_uid_index(owned(True)) == ["u1"] and controller_ref(owned(True))["name"] == "y"
    for not_true in ("true", 1, "yes", None, False):
        assert controller_uid_index(owned(not_true)) == [], not_true
        assert controller_ref(owned(not_true)) is None
    assert controller_uid_index({"metadata": {"name": "p"}}) == []

    from mxjob_controller.core import job_vocabulary as ownership
    assert ownership.controller_ref is controller_ref
    assert ownership.is_controlled_by(owned(True), "u1") and not ownership.is_controlled_by(owned("true"), "u1")

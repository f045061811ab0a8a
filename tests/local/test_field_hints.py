"""``local/field_hints.py``: the nearest valid name for a typo, from the kind's OpenAPI schema as the server
publishes it; table-tested on a schema shaped as kube-openapi writes one (references, ``allOf`` wrappers, maps)."""

from __future__ import annotations

import pytest

from mxjob_controller.local.field_hints import hints, kind_schema, nearest, parent_properties, segments, unknown_fields

REF = "#/components/schemas/"
DOCUMENT = {"components": {"schemas": {
    "org.kubeflow.v1.MXJob": {
        "type": "object", "x-kubernetes-group-version-kind": [{"group": "kubeflow.org", "version": "v1",
                                                               "kind": "MXJob"}],
        "properties": {"apiVersion": {"type": "string"}, "kind": {"type": "string"},
                       "metadata": {"allOf": [{"$ref": REF + "io.k8s.ObjectMeta"}]},
                       "spec": {"type": "object", "properties": {
                           "runPolicy": {"type": "object", "properties": {"backoffLimit": {"type": "integer"},
                                                                          "cleanPodPolicy": {"type": "string"}}},
                           "mxReplicaSpecs": {"type": "object", "additionalProperties": {
                               "type": "object", "properties": {
                                   "replicas": {"type": "integer"},
                                   "template": {"type": "object", "properties": {"spec": {
                                       "type": "object", "properties": {"containers": {
                                           "type": "array", "items": {"$ref": REF + "io.k8s.Container"}}}}}}}}},
                           "jobMode": {"type": "string"}}}}},
    "io.k8s.ObjectMeta": {"type": "object", "properties": {"name": {"type": "string"},
                                                           "labels": {"type": "object"}}},
    "io.k8s.Container": {"type": "object", "properties": {"command": {}, "args": {}, "image": {}, "name": {}}},
}}}


def schema():
    return kind_schema(DOCUMENT, "kubeflow.org", "v1", "MXJob")


def test_unknown_fields_are_read_from_kubes_strict_decoding_error_in_order_once_each():
    message = ('MXJob in version "v1" cannot be handled as a MXJob: strict decoding error: unknown field '
               '"spec.runPolicy.backofLimit", unknown field "spec.x", unknown field "spec.runPolicy.backofLimit"')
    assert unknown_fields(message) == ["spec.runPolicy.backofLimit", "spec.x"]


@pytest.mark.parametrize(("name", "candidates", "expected"), [
    ("backofLimit", ["backoffLimit", "cleanPodPolicy"], "backoffLimit"),
    ("mxReplicaSpec", ["jobMode", "mxReplicaSpecs", "runPolicy"], "mxReplicaSpecs"),
    ("comand", ["args", "command", "image", "name"], "command"),
    ("Jobmode", ["jobMode", "runPolicy"], "jobMode"),          # case aside
    ("totallyDifferent", ["jobMode", "runPolicy"], None),      # no typo of anything
])
def test_nearest_is_the_close_candidate_or_none(name, candidates, expected):
    assert nearest(name, candidates) == expected


def test_parent_properties_walk_references_maps_and_arrays():
    root, resolve = schema()
    assert segments("spec.mxReplicaSpecs.Worker.template.spec.containers[0].comand") == [
        "spec", "mxReplicaSpecs", "Worker", "template", "spec", "containers", 0, "comand"]
    assert parent_properties(root, segments("spec.mxReplicaSpecs.Worker.template.spec.containers[0].comand"),
                             resolve) == ["args", "command", "image", "name"]
    assert parent_properties(root, ["metadata", "nmae"], resolve) == ["labels", "name"]
    assert parent_properties(root, ["spec", "nowhere", "x"], resolve) == []


def test_hints_name_each_typo_with_its_path_and_the_nearest_valid_name():
    message = ('MXJob in version "v1" cannot be handled as a MXJob: strict decoding error: unknown field '
               '"spec.mxReplicaSpec", unknown field "spec.mxReplicaSpecs.Worker.template.spec.containers[0].comand",'
               ' unknown field "spec.runPolicy.backofLimit", unknown field "spec.zzzzzzzz"')
    assert hints(message, schema) == [
        'spec.mxReplicaSpec: unknown field; did you mean "mxReplicaSpecs"?',
        'spec.mxReplicaSpecs.Worker.template.spec.containers[0].comand: unknown field; did you mean "command"?',
        'spec.runPolicy.backofLimit: unknown field; did you mean "backoffLimit"?']


def test_an_unsupported_value_gets_the_nearest_supported_one():
    message = ('MXJob.kubeflow.org "j" is invalid: [spec.mxReplicaSpecs: Unsupported value: "Workr": supported '
               'values: "Scheduler", "Server", "Worker", spec.mxReplicaSpecs: Required value: every job needs a '
               '"Worker"]')
    assert hints(message, lambda: None) == ['spec.mxReplicaSpecs: "Workr" is not supported; did you mean "Worker"?']


def test_no_schema_no_hint_for_unknown_fields():
    assert hints('strict decoding error: unknown field "spec.foo"', lambda: None) == []
    assert kind_schema(DOCUMENT, "kubeflow.org", "v1", "TFJob") is None


def test_the_cli_knows_the_job_kinds_local_run_follows():
    """``local run`` refuses files without a job before it loads the cluster: its list is the submitter's."""
    from mxjob_controller.cli.local import JOB_KINDS
    from mxjob_controller.local.submission import JOB_RESOURCES

    assert set(JOB_KINDS) == set(JOB_RESOURCES)

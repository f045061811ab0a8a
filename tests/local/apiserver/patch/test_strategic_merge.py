"""Strategic merge patch, table-driven: the semantics of apimachinery's strategicpatch (its test suite's
facts, in cases of our own), then Kubernetes' real patch metadata (merge keys of pods, services, metadata).

Each case is (current object, patch as kubectl or a controller sends it, what kube-apiserver stores).
"""

from __future__ import annotations

import random

import pytest
import yaml

from mxjob_controller.local.apiserver.patch import strategic_merge
from mxjob_controller.local.apiserver.patch.strategic_merge import (
    PatchSchema,
    StrategicPatchError,
    apply_strategic_patch,
    go_stable_sort,
    schema_for,
)

# A test type shaped like apimachinery's own (MergeItem): lists that merge by "name", scalar sets, lists
# replaced wholesale, a map replaced wholesale and a union type cleared by $retainKeys.
_S = {"type": "string"}
_MERGING = {"type": "array", "items": {"$ref": "#/$defs/t.Item"}, "x-kubernetes-patch-strategy": "merge",
            "x-kubernetes-patch-merge-key": "name"}
DEFS = {
    "t.Item": {"type": "object", "properties": {
        "name": _S, "value": _S, "other": _S,
        "items": _MERGING,
        "replaced": {"type": "array", "items": {"$ref": "#/$defs/t.Item"}},
        "ints": {"type": "array", "items": {"type": "integer"}, "x-kubernetes-patch-strategy": "merge"},
        "plainInts": {"type": "array", "items": {"type": "integer"}},
        "labels": {"type": "object", "additionalProperties": _S},
        "blob": {"$ref": "#/$defs/t.Blob", "x-kubernetes-patch-strategy": "replace"},
        "union": {"$ref": "#/$defs/t.Union", "x-kubernetes-patch-strategy": "retainKeys"},
        "retained": {**_MERGING, "x-kubernetes-patch-strategy": "merge,retainKeys"},
        "anything": {"type": "array", "items": {}, "x-kubernetes-patch-strategy": "merge"},
    }},
    "t.Blob": {"type": "object"},
    "t.Union": {"type": "object", "properties": {
        "kind": _S, "first": _S, "second": _S, "labels": {"type": "object", "additionalProperties": _S},
        "items": _MERGING, "ints": {"type": "array", "items": {"type": "integer"},
                                    "x-kubernetes-patch-strategy": "merge"}}},
}
ITEM = PatchSchema(DEFS, {"$ref": "#/$defs/t.Item"})


def _case(description: str, current: str, patch: str, result: str) -> object:
    return pytest.param(yaml.safe_load(current), yaml.safe_load(patch), yaml.safe_load(result), id=description)


SEMANTICS = [
    # maps
    _case("a null deletes a key; other keys merge", "{value: a, other: b, labels: {x: '1', y: '2'}}",
          "{value: null, labels: {y: null, z: '3'}}", "{other: b, labels: {x: '1', z: '3'}}"),
    _case("nulls inside a new subtree are dropped", "{name: n}", "{labels: {a: '1', b: null}}",
          "{name: n, labels: {a: '1'}}"),
    _case("a type change replaces the value", "{value: a, labels: {x: '1'}}", "{labels: null, value: {k: v}}",
          "{value: {k: v}}"),
    _case("$patch: replace replaces a whole map", "{labels: {x: '1', y: '2'}}",
          "{labels: {$patch: replace, z: '3'}}", "{labels: {z: '3'}}"),
    _case("$patch: delete empties a map", "{labels: {x: '1'}, value: v}", "{labels: {$patch: delete}}",
          "{labels: {}, value: v}"),
    _case("a field with the replace strategy is not merged", "{blob: {a: 1, b: 2}}", "{blob: {c: 3}}",
          "{blob: {c: 3}}"),
    # lists of maps merged by key
    _case("items merge by key, in the patch's order", "{items: [{name: a, value: '1'}]}",
          "{items: [{name: b}, {name: a, other: x}]}", "{items: [{name: b}, {name: a, value: '1', other: x}]}"),
    _case("without an order, new items go before the server's", "{items: [{name: a, value: '1'}, {name: c}]}",
          "{items: [{name: b}]}", "{items: [{name: b}, {name: a, value: '1'}, {name: c}]}"),
    _case("$patch: delete removes by key (every duplicate)",
          "{items: [{name: a}, {name: b}, {name: a, value: dup}]}", "{items: [{name: a, $patch: delete}]}",
          "{items: [{name: b}]}"),
    _case("deleting a missing key is a no-op", "{items: [{name: b, other: x}]}",
          "{$setElementOrder/items: [{name: b}], items: [{name: z, $patch: delete}]}",
          "{items: [{name: b, other: x}]}"),
    _case("$patch: replace in a list replaces the list", "{items: [{name: a}, {name: b}]}",
          "{items: [{$patch: replace}, {name: c}]}", "{items: [{name: c}]}"),
    _case("a list without merge strategy is replaced", "{replaced: [{name: a, value: '1'}, {name: b}]}",
          "{replaced: [{name: a}]}", "{replaced: [{name: a}]}"),
    _case("a list nested in a merged item is replaced", "{items: [{name: a, replaced: [{name: x}, {name: y}]}]}",
          "{items: [{name: a, replaced: [{name: z}]}]}", "{items: [{name: a, replaced: [{name: z}]}]}"),
    _case("a merged list nested in a merged item merges",
          "{items: [{name: a, items: [{name: x, value: '1'}, {name: y, value: '2'}]}, {name: b}]}",
          "{$setElementOrder/items: [{name: a}, {name: b}], items: [{name: a, "
          "$setElementOrder/items: [{name: x}, {name: y}], items: [{name: x, value: '9'}]}]}",
          "{items: [{name: a, items: [{name: x, value: '9'}, {name: y, value: '2'}]}, {name: b}]}"),
    # $setElementOrder
    _case("the patch order wins", "{items: [{name: a}, {name: b, value: '2'}, {name: c}]}",
          "{$setElementOrder/items: [{name: c}, {name: a}, {name: b}]}",
          "{items: [{name: c}, {name: a}, {name: b, value: '2'}]}"),
    _case("server-only items keep their place", "{items: [{name: a}, {name: b}, {name: s1}, {name: s2}, {name: c}]}",
          "{$setElementOrder/items: [{name: b}, {name: a}, {name: c}]}",
          "{items: [{name: b}, {name: a}, {name: s1}, {name: s2}, {name: c}]}"),
    _case("server-only items at the end stay there", "{items: [{name: a}, {name: b}, {name: s}]}",
          "{$setElementOrder/items: [{name: b}, {name: a}]}", "{items: [{name: b}, {name: a}, {name: s}]}"),
    _case("an added item lands where the order puts it", "{items: [{name: a}, {name: c}]}",
          "{$setElementOrder/items: [{name: a}, {name: b}, {name: c}], items: [{name: b, value: new}]}",
          "{items: [{name: a}, {name: b, value: new}, {name: c}]}"),
    _case("delete one, add one, server-only item keeps its neighbour",
          "{items: [{name: a}, {name: b, other: x}, {name: s}]}",
          "{$setElementOrder/items: [{name: b}, {name: c}], items: [{name: c}, {name: a, $patch: delete}]}",
          "{items: [{name: b, other: x}, {name: s}, {name: c}]}"),
    _case("an order naming unknown items ignores them", "{items: [{name: a}, {name: b}]}",
          "{$setElementOrder/items: [{name: b}, {name: ghost}, {name: a}], items: [{name: b, value: v}]}",
          "{items: [{name: b, value: v}, {name: a}]}"),
    _case("duplicates stay together", "{items: [{name: a}, {name: b, value: d1}, {name: c}, {name: b, value: d2}]}",
          "{$setElementOrder/items: [{name: b}, {name: c}, {name: a}, {name: b}]}",
          "{items: [{name: b, value: d1}, {name: b, value: d2}, {name: c}, {name: a}]}"),
    # lists of scalars
    _case("a merged scalar list is a set", "{ints: [1, 2]}", "{ints: [2, 3]}", "{ints: [1, 2, 3]}"),
    _case("without an order, new scalars go first", "{ints: [1, 2]}", "{ints: [3]}", "{ints: [3, 1, 2]}"),
    _case("$setElementOrder orders scalars", "{ints: [1, 2, 4]}",
          "{$setElementOrder/ints: [1, 2, 3], ints: [3]}", "{ints: [1, 2, 3, 4]}"),
    _case("$deleteFromPrimitiveList removes every copy", "{ints: [1, 2, 3, 2]}",
          "{$deleteFromPrimitiveList/ints: [2, 9]}", "{ints: [1, 3]}"),
    _case("add and delete scalars in one patch", "{ints: [1, 2, 3]}",
          "{$setElementOrder/ints: [4, 2, 1], ints: [4], $deleteFromPrimitiveList/ints: [3]}",
          "{ints: [4, 2, 1]}"),
    _case("$deleteFromPrimitiveList works without a merge strategy", "{plainInts: [1, 2, 3]}",
          "{$deleteFromPrimitiveList/plainInts: [2]}", "{plainInts: [1, 3]}"),
    _case("$deleteFromPrimitiveList of a missing list adds nothing", "{value: v}",
          "{$deleteFromPrimitiveList/ints: [1]}", "{value: v}"),
    _case("a scalar list without merge strategy is replaced", "{plainInts: [1, 2]}", "{plainInts: [3]}",
          "{plainInts: [3]}"),
    # $retainKeys
    _case("$retainKeys clears the other members of a union", "{union: {kind: a, first: x}}",
          "{union: {$retainKeys: [kind, second], kind: b, second: y}}", "{union: {kind: b, second: y}}"),
    _case("$retainKeys keeps and merges listed nested values",
          "{union: {kind: a, labels: {x: '1'}, first: f}}",
          "{union: {$retainKeys: [kind, labels], labels: {y: '2'}}}",
          "{union: {kind: a, labels: {x: '1', y: '2'}}}"),
    _case("$retainKeys with a null deletes", "{union: {kind: a, first: x, second: y}}",
          "{union: {$retainKeys: [kind], first: null}}", "{union: {kind: a}}"),
    _case("$retainKeys in a merged list item", "{retained: [{name: a, value: v, other: o}, {name: b}]}",
          "{$setElementOrder/retained: [{name: a}, {name: b}], retained: [{$retainKeys: [name, value], name: a}]}",
          "{retained: [{name: a, value: v}, {name: b}]}"),
    _case("$retainKeys with nested ordered scalars", "{union: {kind: a, ints: [1, 2, 3, 4]}}",
          "{union: {$retainKeys: [ints, kind], ints: [5], $deleteFromPrimitiveList/ints: [2], "
          "$setElementOrder/ints: [1, 3, 5]}}", "{union: {kind: a, ints: [1, 3, 5, 4]}}"),
    # directives never reach the stored object
    _case("directives in a new subtree are dropped", "{name: n}",
          "{union: {$retainKeys: [kind], kind: k, $setElementOrder/items: [{name: a}]}}",
          "{name: n, union: {kind: k}}"),
]


@pytest.mark.parametrize(("current", "patch", "expected"), SEMANTICS)
def test_strategic_merge_semantics(current, patch, expected):
    before = yaml.safe_dump(current), yaml.safe_dump(patch)
    assert apply_strategic_patch(current, patch, ITEM) == expected
    assert (yaml.safe_dump(current), yaml.safe_dump(patch)) == before  # neither argument is modified


ERRORS = [
    ("order that contradicts the patch list", "{items: [{name: a}, {name: b}, {name: c}]}",
     "{$setElementOrder/items: [{name: a}, {name: b}, {name: c}], items: [{name: c}, {name: a}]}", 500,
     "doesn't match $setElementOrder list"),
    ("item without the merge key", "{items: [{name: a}]}", "{items: [{value: v}]}", 500,
     "does not contain declared merge key: name"),
    ("$retainKeys that is not a list", "{union: {kind: a}}", "{union: {$retainKeys: kind}}", 400,
     "invalid patch format of retainKeys"),
    ("a patched key missing from $retainKeys", "{union: {kind: a}}",
     "{union: {$retainKeys: [kind], first: x}}", 400, "invalid patch format of retainKeys"),
    ("a malformed $deleteFromPrimitiveList key", "{ints: [1]}", "{$deleteFromPrimitiveListX/ints: [1]}", 400,
     "invalid patch format of primitive list"),
    ("a malformed $setElementOrder key", "{ints: [1]}", "{$setElementOrder: [1]}", 400,
     "invalid patch format of setElementOrder list"),
    ("a list of lists", "{anything: [[1]]}", "{anything: [[2]]}", 422, "lists of lists are not supported"),
    ("1 and 1.0 in one list", "{ints: [1]}", "{ints: [1.0]}", 500, "list element types are not identical"),
    ("an unknown map directive", "{labels: {a: '1'}}", "{labels: {$patch: shuffle}}", 500,
     "unknown patch type: shuffle"),
    ("$patch: merge in a list", "{items: [{name: a}]}", "{items: [{$patch: merge}]}", 500,
     "merging lists cannot yet be specified in the patch"),
    ("an unknown field holding a map", "{nope: {a: 1}}", "{nope: {b: 2}}", 500,
     'unable to find api field in struct Item for the json field "nope"'),
    ("mixed element types", "{ints: [1]}", "{ints: [a]}", 500, "list element types are not identical"),
]


@pytest.mark.parametrize(("current", "patch", "code", "message"),
                         [pytest.param(yaml.safe_load(c), yaml.safe_load(p), code, m, id=d)
                          for d, c, p, code, m in ERRORS])
def test_strategic_merge_errors_carry_kube_apiservers_status(current, patch, code, message):
    with pytest.raises(StrategicPatchError) as info:
        apply_strategic_patch(current, patch, ITEM)
    assert info.value.code == code
    assert message in str(info.value)


# --- Kubernetes' own patch metadata -----------------------------------------------------------------------

POD = """
metadata:
  name: p
  finalizers: [a.example.com/one, b.example.com/two]
  ownerReferences:
  - {apiVersion: v1, kind: ConfigMap, name: owner1, uid: u1}
  - {apiVersion: v1, kind: ConfigMap, name: owner2, uid: u2}
spec:
  imagePullSecrets: [{name: reg1}]
  volumes:
  - {name: data, emptyDir: {}}
  - {name: conf, configMap: {name: c1}}
  tolerations: [{key: t1, operator: Exists}]
  containers:
  - name: main
    image: app:1
    args: [--a, --b]
    env: [{name: A, value: '1'}, {name: B, value: '2'}]
    ports: [{containerPort: 80, name: http}, {containerPort: 443, name: https}]
    volumeMounts: [{name: data, mountPath: /data}, {name: conf, mountPath: /etc/conf}]
  - name: sidecar
    image: side:1
"""

K8S = [
    ("containers merge by name, env by name, ports by containerPort",
     """{spec: {containers: [{name: main, env: [{name: C, value: '3'}, {name: A, value: '9'}],
                               ports: [{containerPort: 8080, name: alt}]}]}}""",
     lambda p: (
         [c["name"] for c in p["spec"]["containers"]] == ["main", "sidecar"]
         and p["spec"]["containers"][0]["env"] == [{"name": "C", "value": "3"}, {"name": "A", "value": "9"},
                                                   {"name": "B", "value": "2"}]
         and [x["containerPort"] for x in p["spec"]["containers"][0]["ports"]] == [8080, 80, 443])),
    ("volumeMounts merge by mountPath",
     "{spec: {containers: [{name: main, volumeMounts: [{name: other, mountPath: /data}]}]}}",
     lambda p: p["spec"]["containers"][0]["volumeMounts"] == [{"name": "other", "mountPath": "/data"},
                                                              {"name": "conf", "mountPath": "/etc/conf"}]),
    ("lists without a strategy (args, tolerations) are replaced",
     "{spec: {tolerations: [{key: t2, operator: Exists}], containers: [{name: main, args: [--c]}]}}",
     lambda p: p["spec"]["tolerations"] == [{"key": "t2", "operator": "Exists"}]
     and p["spec"]["containers"][0]["args"] == ["--c"]),
    ("imagePullSecrets merge by name", "{spec: {imagePullSecrets: [{name: reg2}]}}",
     lambda p: p["spec"]["imagePullSecrets"] == [{"name": "reg2"}, {"name": "reg1"}]),
    ("volumes merge by name and $retainKeys switches the source",
     "{spec: {volumes: [{name: conf, $retainKeys: [name, secret], secret: {secretName: s1}}]}}",
     lambda p: p["spec"]["volumes"] == [{"name": "data", "emptyDir": {}},
                                        {"name": "conf", "secret": {"secretName": "s1"}}]),
    ("ownerReferences merge by uid",
     "{metadata: {ownerReferences: [{uid: u1, $patch: delete}, {apiVersion: v1, kind: Pod, name: o3, uid: u3}]}}",
     lambda p: [r["uid"] for r in p["metadata"]["ownerReferences"]] == ["u3", "u2"]),
    ("finalizers are a set", "{metadata: {finalizers: [b.example.com/two, c.example.com/three]}}",
     lambda p: p["metadata"]["finalizers"] == ["a.example.com/one", "b.example.com/two", "c.example.com/three"]),
    ("a new finalizer alone goes first", "{metadata: {finalizers: [c.example.com/three]}}",
     lambda p: p["metadata"]["finalizers"] == ["c.example.com/three", "a.example.com/one", "b.example.com/two"]),
    ("a finalizer is removed with $deleteFromPrimitiveList",
     "{metadata: {$deleteFromPrimitiveList/finalizers: [a.example.com/one]}}",
     lambda p: p["metadata"]["finalizers"] == ["b.example.com/two"]),
    ("a container is removed with $patch: delete",
     "{spec: {$setElementOrder/containers: [{name: main}], containers: [{name: sidecar, $patch: delete}]}}",
     lambda p: [c["name"] for c in p["spec"]["containers"]] == ["main"]),
]


@pytest.mark.parametrize(("patch", "check"), [pytest.param(yaml.safe_load(p), c, id=d) for d, p, c in K8S])
def test_pod_patch_metadata_comes_from_kubernetes_schemas(patch, check):
    schema = schema_for("", "v1", "Pod")
    assert schema is not None
    assert check(apply_strategic_patch(yaml.safe_load(POD), patch, schema))


def test_service_ports_merge_by_port():
    svc = {"spec": {"ports": [{"name": "a", "port": 80, "targetPort": 8080}, {"name": "b", "port": 81}]}}
    patched = apply_strategic_patch(svc, {"spec": {"ports": [{"port": 80, "targetPort": 9090}]}},
                                    schema_for("", "v1", "Service"))
    assert patched["spec"]["ports"] == [{"name": "a", "port": 80, "targetPort": 9090}, {"name": "b", "port": 81}]


def test_deployment_strategy_union_is_cleared_by_retain_keys():
    dep = {"spec": {"strategy": {"type": "RollingUpdate", "rollingUpdate": {"maxSurge": 1}}}}
    patch = {"spec": {"strategy": {"$retainKeys": ["type"], "type": "Recreate"}}}
    assert apply_strategic_patch(dep, patch, schema_for("apps", "v1", "Deployment")) == {
        "spec": {"strategy": {"type": "Recreate"}}}


def test_unknown_kinds_have_no_patch_schema():
    assert schema_for("example.com", "v1", "Widget") is None


def test_go_stable_sort_is_stable_through_its_merge_phase():
    # Past 20 items Go's SliceStable merges sorted blocks (SymMerge); equal keys must keep their order.
    records = [(i * 7919) % 13 for i in range(100)]
    items = list(enumerate(records))
    go_stable_sort(items, lambda i, j: items[i][1] < items[j][1])
    assert items == sorted(enumerate(records), key=lambda r: r[1])
    small = [3, 1, 2]
    go_stable_sort(small, lambda i, j: small[i] < small[j])
    assert small == [1, 2, 3]


# --- the indexed paths answer as Go's scans do (issue 33: linear in list size) ---------------------------------

def _go_dedupe_scalars(items: list) -> list:
    """apimachinery's deduplicateScalars, transcribed: the scan the indexed version must agree with."""
    s = list(items)
    length = len(s) - 1
    i = 0
    while i < length:
        j = i + 1
        while j <= length:
            if s[i] == s[j]:
                s[j] = s[length]
                s = s[:length]
                length -= 1
                j -= 1
            j += 1
        i += 1
    return s


def test_deduplicating_scalars_moves_items_as_gos_scan_does():
    rng = random.Random(33)
    for _ in range(3000):
        items = [rng.randint(0, 6) for _ in range(rng.randint(0, 24))]
        assert strategic_merge._dedupe_scalars(items) == _go_dedupe_scalars(items), items


def test_deleting_by_key_in_one_pass_leaves_gos_backing_array():
    """``$patch: delete`` items remove matches one by one in Go, shifting the array each time; the one-pass
    deletion must leave the same items and the same leftovers past the new length (the caller's view)."""
    rng = random.Random(33)
    for _ in range(3000):
        items = [{"name": rng.choice("abcdef"), "n": i} for i in range(rng.randint(0, 16))]
        deleted = [rng.choice("abcdefg") for _ in range(rng.randint(0, 5))]
        one_by_one, one_pass = strategic_merge._GoSlice(list(items)), strategic_merge._GoSlice(list(items))
        for value in deleted:
            one_by_one.delete_by_key("name", value)
        one_pass.delete_by_keys("name", deleted, strategic_merge._positions_by_value(items, "name"))
        assert (one_pass.backing, one_pass.length) == (one_by_one.backing, one_by_one.length), (items, deleted)

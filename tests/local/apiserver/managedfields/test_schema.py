"""The schema compiler (local/apiserver/managedfields/schema.py): types compiled and resolved on first use, by
whichever request gets there first, complete for every thread that races there."""

from __future__ import annotations

import json

from mxjob_controller.local.apiserver.managedfields import schema, typed


def test_a_fresh_compiler_gives_every_thread_the_same_complete_types():
    """Types are compiled and their fields resolved on first use, by whichever request gets there first: threads
    that race there must all see complete types (a placeholder or unresolved fields once made concurrent pod
    creates fail with a 500)."""
    import sys
    import threading

    from mxjob_controller.kube import k8s_schemas

    pod_def = k8s_schemas.gvk_index()[("", "v1", "Pod")]
    pod = {"apiVersion": "v1", "kind": "Pod", "metadata": {"name": "p", "labels": {"a": "b"}},
           "spec": {"containers": [{"name": "c", "image": "i", "ports": [{"containerPort": 80, "protocol": "TCP"}],
                                    "resources": {"limits": {"cpu": "1"}}}],
                    "volumes": [{"name": "v", "emptyDir": {}}]}}
    def create(compiler: schema.Compiler, start: threading.Barrier, results: list[str]) -> None:
        start.wait(timeout=30)
        try:
            t = compiler.definition(pod_def)
            results.append(json.dumps([schema.zero_object(t), typed.added_fields_v1(schema.zero_object(t), pod, t)]))
        except Exception as e:   # what a racing thread met is the finding
            results.append(repr(e))

    previous = sys.getswitchinterval()
    sys.setswitchinterval(1e-6)   # switch threads as often as CPython allows: a race shows at once
    try:
        for _ in range(20):
            compiler, start, results = schema.Compiler(k8s_schemas.definitions()), threading.Barrier(8), []
            threads = [threading.Thread(target=create, args=(compiler, start, results), name=f"compile-{i}")
                       for i in range(8)]
            for thread in threads:
                thread.start()
            for thread in threads:
                thread.join(timeout=30)
            assert len(results) == 8 and len(set(results)) == 1 and results[0].startswith("[{"), results
    finally:
        sys.setswitchinterval(previous)

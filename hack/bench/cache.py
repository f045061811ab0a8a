"""The cache benchmarks: what holding the controller's pods costs, and how fast watch events get into its store.

- memory  RSS growth of a fresh process holding N of the controller's pods (as the embedded API server stores them,
          reported Running), per byte of their JSON: the plain dict cache (managedFields dropped: the controller
          before issue 17), the transformed cache (``core/handlers.py``: what the controller keeps now), and the
          ``kubernetes`` client's ``V1Pod`` models
- ingest  M watch events through the informer's real path (``WatchStream`` line splitting and decoding, the
          reflector, the controller's transform and index, the store, a no-op handler called inline as the
          controller registers its handlers; also on a thread of its own), events per CPU second of this
          process (which runs nothing else meanwhile: a busy machine's other work does not count, as it would in
          events per wall second), divided by the rate of only decoding the same JSON lines; the best of 3 each
"""

from __future__ import annotations

import json
import subprocess
import sys
import tempfile
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

from hack.bench.common import ROOT, Outcome

POD_SHAPE = {"Scheduler": 1, "Server": 4, "Worker": 16}


def controller_pods(count: int) -> list[dict[str, Any]]:
    """``count`` pods as the controller creates them (its own builders) for 1/4/16 jobs, stored by the embedded
    API server (its defaults, uid, resourceVersion, timestamps) and then reported Running as a kubelet would."""
    from hack.bench.common import mxjob
    from mxjob_controller.core.child_sync import ChildSync
    from mxjob_controller.core.framework import JobContext
    from mxjob_controller.kube.timefmt import now_rfc3339
    from mxjob_controller.local.apiserver.server import APIServer
    from mxjob_controller.mxnet.crd import mxjob_crd
    from mxjob_controller.mxnet.framework import MXNetFramework
    from tests.kubelet_sim import running_status

    framework = MXNetFramework()
    builder = ChildSync(framework, None, None, None, write_timeout=60)  # type: ignore[arg-type]
    pods: list[dict[str, Any]] = []
    with APIServer() as server:
        server.create(mxjob_crd())
        j = 0
        while len(pods) < count:
            job = server.create(mxjob(f"mem-{j}", POD_SHAPE))
            spec, _ = framework.parse(job)
            assert spec is not None
            ctx = JobContext(f"default/mem-{j}", job, spec, framework)
            for rtype in framework.replica_types(spec):
                for index in range(spec.replicas[rtype].replicas):
                    if len(pods) < count:
                        pod = server.create(builder._pod(ctx, rtype, index))
                        pod["status"] = {**(pod.get("status") or {}),
                                         **running_status(pod["spec"]["containers"], now_rfc3339())}
                        pods.append(pod)
            j += 1
    return pods


# Runs in a fresh interpreter: holds the pods of a JSON-lines file in one form and prints RSS growth and bytes.
_HOLD = r"""
import gc, json, sys
from hack.bench.common import rss_kib
variant, path = sys.argv[1], sys.argv[2]
from mxjob_controller.core.handlers import pod_cache_view
from mxjob_controller.runtime.cache_keys import CONTROLLER_UID_INDEX, controller_uid_index
from mxjob_controller.runtime.cache_store import Indexer
from mxjob_controller.runtime.informer import drop_managed_fields
if variant == "model":
    from kubernetes import client as k8s
    api = k8s.ApiClient()
    class Resp:
        def __init__(self, data): self.data = data
held = {}
store = Indexer(indexers={CONTROLLER_UID_INDEX: controller_uid_index})
transform = {"dict": drop_managed_fields, "transformed": pod_cache_view}.get(variant)
gc.collect()
before = rss_kib()
total = 0
with open(path, "rb") as f:
    for line in f:
        total += len(line) - 1
        if variant == "model":
            pod = api.deserialize(Resp(line), "V1Pod")
            held[pod.metadata.namespace + "/" + pod.metadata.name] = pod
        else:
            store.upsert(transform(json.loads(line)))
gc.collect()
print(json.dumps({"rss_kib": rss_kib() - before, "json_bytes": total}))
"""


def _hold(variant: str, path: Path) -> dict[str, int]:
    out = subprocess.run([sys.executable, "-c", _HOLD, variant, str(path)], cwd=ROOT, capture_output=True, text=True,
                         timeout=600, check=True).stdout
    return json.loads(out.strip().splitlines()[-1])


def bench_memory(full: bool) -> Outcome:
    count = 10_000 if full else 3_000
    pods = controller_pods(count)
    with tempfile.TemporaryDirectory(prefix="mxjob-bench-") as tmp:
        path = Path(tmp) / "pods.jsonl"
        with path.open("w", encoding="utf-8") as f:
            for pod in pods:
                f.write(json.dumps(pod, separators=(",", ":")) + "\n")
        del pods
        runs = {v: _hold(v, path) for v in ("dict", "transformed", "model")}
    json_bytes = runs["dict"]["json_bytes"]
    per = {v: r["rss_kib"] * 1024 / json_bytes for v, r in runs.items()}
    rows = [(f"{count} controller pods (1/4/16 jobs, Running), {json_bytes / count / 1024:.1f} KiB of JSON each", ""),
            ("  plain dict cache, managedFields dropped (before)", f"{per['dict']:.2f} B RSS per JSON byte  "
                                                                  f"({runs['dict']['rss_kib'] / 1024:.1f} MiB)"),
            ("  transformed cache, fields read only (core/handlers.py)",
             f"{per['transformed']:.2f} B RSS per JSON byte  ({runs['transformed']['rss_kib'] / 1024:.1f} MiB)"),
            ("  kubernetes client V1Pod models", f"{per['model']:.2f} B RSS per JSON byte  "
                                                 f"({runs['model']['rss_kib'] / 1024:.1f} MiB)"),
            ("  plain dict / transformed", f"{per['dict'] / per['transformed']:.1f}x")]
    return Outcome(rows, inputs={"pods": count, "shape": "1/4/16", "json_bytes": json_bytes},
                   figures={f"{v}_rss_kib": r["rss_kib"] for v, r in runs.items()},
                   ratios={f"{v}_rss_per_json_byte": p for v, p in per.items()},
                   targets={"transformed cache <= 2 B RSS per JSON byte": per["transformed"] <= 2.0})


# --- ingest -------------------------------------------------------------------------------------------------

class _Response:
    """What ``WatchStream`` reads from: a not-chunked urllib3 response over bytes in memory."""

    chunked = False

    def __init__(self, blob: bytes, repeat: int) -> None:
        self._chunks = self._gen(memoryview(blob), repeat)

    @staticmethod
    def _gen(blob: memoryview, repeat: int) -> Iterator[bytes]:
        for _ in range(repeat):
            for at in range(0, len(blob), 64 * 1024):
                yield bytes(blob[at:at + 64 * 1024])

    def read1(self, _size: int) -> bytes:
        return next(self._chunks, b"")

    def supports_chunked_reads(self) -> bool:
        return False

    def shutdown(self) -> None: ...

    def close(self) -> None: ...

    def release_conn(self) -> None: ...


class _OneWatchClient:
    """A client whose only call, ``watch``, returns one stream of the prepared events."""

    def __init__(self, blob: bytes, repeat: int) -> None:
        self.blob, self.repeat = blob, repeat

    def watch(self, *_a: Any, **_kw: Any) -> Any:
        from mxjob_controller.runtime.client import WatchStream

        return WatchStream(_Response(self.blob, self.repeat), "bench watch")


def bench_ingest(full: bool) -> Outcome:
    from mxjob_controller.core.handlers import pod_cache_view
    from mxjob_controller.runtime.cache_keys import CONTROLLER_UID_INDEX, controller_uid_index
    from mxjob_controller.runtime.client import PODS
    from mxjob_controller.runtime.informer import SharedInformer

    events, distinct = 50_000, 1_000
    pods = controller_pods(distinct)
    blob = b"".join(json.dumps({"type": "MODIFIED", "object": p}, separators=(",", ":")).encode() + b"\n"
                    for p in pods)
    repeat = events // distinct

    def parse_only() -> float:
        start = time.process_time()
        for _ in range(repeat):
            for line in blob.split(b"\n"):
                if line:
                    json.loads(line)
        return events / (time.process_time() - start)

    def ingest(transform: Any, inline: bool = True) -> float:
        informer = SharedInformer(_OneWatchClient(blob, repeat), PODS, transform=transform,  # type: ignore[arg-type]
                                  indexers={CONTROLLER_UID_INDEX: controller_uid_index})
        registration = informer.add_handler(on_add=lambda _o: None, on_update=lambda _o, _n: None, inline=inline)
        listener = registration._listener
        listener.start()
        try:
            start = time.process_time()   # every thread of this process: a threaded handler's work counts
            informer.reflector._watch_once()
            deadline = time.monotonic() + 120
            while listener.delivered < events:   # polled, so that the handler stays a no-op
                if time.monotonic() > deadline:
                    raise RuntimeError("the handler fell behind for 120 s")
                time.sleep(0.001)
            return events / (time.process_time() - start)
        finally:
            informer.stop(5)

    parse = max(parse_only() for _ in range(3))
    ours = max(ingest(pod_cache_view) for _ in range(3))
    plain = max(ingest(None) for _ in range(3))
    threaded = max(ingest(pod_cache_view, inline=False) for _ in range(3))
    rows = [(f"{events} watch events of controller pods ({len(blob) / distinct / 1024:.1f} KiB each)", ""),
            ("  json.loads of the same lines only", f"{parse:,.0f} events per CPU s"),
            ("  informer with the controller's transform, index and inline no-op handler",
             f"{ours:,.0f} events per CPU s"),
            ("  the same without a transform", f"{plain:,.0f} events per CPU s"),
            ("  the same with the handler on a thread of its own", f"{threaded:,.0f} events per CPU s"),
            ("  controller's informer / parse-only", f"{ours / parse:.2f}")]
    return Outcome(rows, inputs={"events": events, "distinct_pods": distinct},
                   figures={"parse_events_per_s": parse, "ingest_events_per_s": ours,
                            "ingest_plain_events_per_s": plain, "ingest_threaded_events_per_s": threaded},
                   ratios={"ingest_over_parse": ours / parse, "plain_over_parse": plain / parse,
                           "threaded_over_parse": threaded / parse},
                   targets={"ingest >= 0.5 of parse-only": ours / parse >= 0.5})


CACHE = {"memory": bench_memory, "ingest": bench_ingest}

"""The API server's memory after a burst of large writes (issue 33): does it give back what it no longer keeps?

- server_memory  ``local up`` in its own process; a 1 MB ConfigMap, 200 merge patches each carrying a new 1 MB value
                 (so every version differs), then its deletion. RSS before, at the peak, and each second after the
                 deletion until it is back within 100 MB of where it started (or 2 minutes pass), beside the
                 store's own gauges (``apiserver_storage_size_bytes``, ``apiserver_storage_history_size_bytes``).

The server keeps the ConfigMap's earlier versions in its watch history (bounded by bytes) until they age out on its
pruning timer; the pruner then hands the freed memory back to the system (``malloc_trim``).
"""

from __future__ import annotations

import re
import time
import urllib.request
from pathlib import Path
from typing import Any

from hack.bench.common import NAMESPACE, Outcome, Procs, client_for, rss_kib

VALUE_BYTES = 1_000_000
PATCHES = 200
BACK_WITHIN_MIB = 100
DEADLINE = 120.0


def _peak_kib(pid: int) -> int:
    for line in Path(f"/proc/{pid}/status").read_text().splitlines():
        if line.startswith("VmHWM:"):
            return int(line.split()[1])
    raise RuntimeError(f"no VmHWM for {pid}")


def _gauges(client: Any) -> dict[str, int]:
    """The store's size gauges, in bytes: the total and the ConfigMaps' history."""
    with urllib.request.urlopen(client.config.host + "/metrics", timeout=30) as resp:
        text = resp.read().decode()
    total = re.search(r"^apiserver_storage_size_bytes\{[^}]*\} (\d+)$", text, re.M)
    history = re.search(r'^apiserver_storage_history_size_bytes\{group="",resource="configmaps"\} (\d+)$', text, re.M)
    if total is None or history is None:
        raise RuntimeError("the storage size gauges are missing from /metrics")
    return {"storage": int(total.group(1)), "configmap_history": int(history.group(1))}


def bench_server_memory(full: bool) -> Outcome:
    from mxjob_controller.runtime.client.resource import CONFIGMAPS

    with Procs() as procs:
        server = procs.server()
        client = client_for(procs.kubeconfig)
        try:
            client.request("GET", "/version")
            start = rss_kib(server.pid)
            name = "big"
            client.create(CONFIGMAPS, {"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": name},
                                       "data": {"value": "a" * VALUE_BYTES}}, NAMESPACE)
            began = time.monotonic()
            for i in range(PATCHES):
                fill = "bcdefghijklmnopqrstuvwxyz"[i % 25] + str(i)
                value = (fill * (VALUE_BYTES // len(fill) + 1))[:VALUE_BYTES]
                client.patch(CONFIGMAPS, name, {"data": {"value": value}}, NAMESPACE)
            patching = time.monotonic() - began
            at_peak = _gauges(client)
            client.delete(CONFIGMAPS, name, NAMESPACE)
            deleted = time.monotonic()
            back_in = settled_in = None
            while time.monotonic() - deleted < DEADLINE:   # until back and settled: the history all pruned
                after, at_end = rss_kib(server.pid), _gauges(client)
                if back_in is None and after - start <= BACK_WITHIN_MIB * 1024:
                    back_in = time.monotonic() - deleted
                if back_in is not None and at_end["configmap_history"] == 0:
                    settled_in = time.monotonic() - deleted
                    break
                time.sleep(1.0)
            peak = _peak_kib(server.pid)
        finally:
            client.close()
    mib = 1024.0
    rows = [
        (f"{PATCHES} merge patches of a {VALUE_BYTES / 1e6:g} MB ConfigMap (a new value each)", f"{patching:.1f} s"),
        ("server RSS at start / peak", f"{start / mib:.0f} / {peak / mib:.0f} MiB"),
        ("store at the peak: storage / ConfigMap history (encoded)",
         f"{at_peak['storage'] / 2**20:.0f} / {at_peak['configmap_history'] / 2**20:.0f} MiB"),
        ("after the deletion: RSS back within 100 MiB of start in",
         f"{back_in:.0f} s" if back_in is not None else f"not within {DEADLINE:.0f} s"),
        ("then, the ConfigMap history pruned, in" if settled_in is not None else "the ConfigMap history not pruned in",
         f"{settled_in:.0f} s: RSS {after / mib:.0f} MiB" if settled_in is not None else f"{DEADLINE:.0f} s"),
        ("store then: storage / ConfigMap history",
         f"{at_end['storage'] / 2**20:.1f} / {at_end['configmap_history'] / 2**20:.1f} MiB"),
    ]
    return Outcome(rows, inputs={"patches": PATCHES, "value_bytes": VALUE_BYTES},
                   figures={"patch_seconds": patching, "rss_start_kib": start, "rss_peak_kib": peak,
                            "rss_after_kib": after, "back_in_seconds": back_in,
                            "settled_in_seconds": settled_in, "gauges_at_peak": at_peak,
                            "gauges_after": at_end},
                   targets={f"RSS within {BACK_WITHIN_MIB} MB of start {DEADLINE:.0f} s after the deletion":
                            back_in is not None})


SERVER_MEMORY = {"server_memory": bench_server_memory}

"""MXTune's tuner, as an AutoTVM tuning script plays it: it asks the tracker for an RPC server by its TVM key, sends
it candidate configurations to measure, keeps the best, and tells server and tracker it is done.
"""

import json
import os
import socket
import time

config = json.loads(os.environ["MX_CONFIG"])
tracker = config["cluster"]["tunertracker"][0]
key = config["labels"]["tunerserver"]


def call(host: str, port: int, request: dict) -> dict:
    deadline = time.time() + 60
    while True:
        try:
            with socket.create_connection((host, port), timeout=70) as conn:
                conn.sendall(json.dumps(request).encode() + b"\n")
                return json.loads(conn.makefile().readline())
        except OSError:
            if time.time() > deadline:
                raise
            time.sleep(0.1)


server = call(tracker["url"], tracker["port"], {"op": "request", "key": key})
if "error" in server:
    raise SystemExit(server["error"])
print(f"tracker gave server {server['host']}:{server['port']} for key {key!r}", flush=True)
best = None
for tile in (1, 2, 4, 8, 12, 16, 32):
    cost = call(server["host"], server["port"], {"op": "measure", "config": {"tile": tile}})["cost"]
    print(f"tile {tile:>2}: cost {cost:.1f}", flush=True)
    if best is None or cost < best[1]:
        best = (tile, cost)
print(f"best configuration: tile {best[0]} (cost {best[1]:.1f})", flush=True)
call(server["host"], server["port"], {"op": "done"})
call(tracker["url"], tracker["port"], {"op": "done"})

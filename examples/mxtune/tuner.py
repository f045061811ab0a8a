"""MXTune's tuner, as an AutoTVM tuning script plays it: it asks the tracker for an RPC server by its TVM key, sends
it candidate configurations to measure, keeps the best, and tells server and tracker it is done.
"""

from wire import KEY, TRACKER, call

server = call(TRACKER["url"], TRACKER["port"], {"op": "request", "key": KEY})
if "error" in server:
    raise SystemExit(server["error"])
print(f"tracker gave server {server['host']}:{server['port']} for key {KEY!r}", flush=True)
best = None
for tile in (1, 2, 4, 8, 12, 16, 32):
    cost = call(server["host"], server["port"], {"op": "measure", "config": {"tile": tile}})["cost"]
    print(f"tile {tile:>2}: cost {cost:.1f}", flush=True)
    if best is None or cost < best[1]:
        best = (tile, cost)
print(f"best configuration: tile {best[0]} (cost {best[1]:.1f})", flush=True)
call(server["host"], server["port"], {"op": "done"})
call(TRACKER["url"], TRACKER["port"], {"op": "done"})

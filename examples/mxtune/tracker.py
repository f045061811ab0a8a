"""MXTune's tracker, as TVM's RPC tracker plays it: RPC servers register under a key, tuners ask for a server by key.

Reads its own port from MX_CONFIG (``cluster.tunertracker[0].port``, the replica's ``mxjob-port``), serves JSON
lines over TCP, and exits 0 once a tuner says it is done. A stand-in for ``python -m tvm.exec.rpc_tracker``: it
proves the MXJob's wiring (ports, addresses, the TVM key in ``labels``) without TVM.
"""

import json
import socketserver
import sys
import threading

from wire import TRACKER

port = TRACKER["port"]
servers: dict[str, dict] = {}        # TVM key -> {"host", "port"} of the registered RPC server
registered = threading.Condition()
done = threading.Event()


class Handler(socketserver.StreamRequestHandler):
    def handle(self) -> None:
        request = json.loads(self.rfile.readline())
        if request["op"] == "register":
            with registered:
                servers[request["key"]] = {"host": request["host"], "port": request["port"]}
                registered.notify_all()
            print(f"server registered under key {request['key']!r} at {request['host']}:{request['port']}", flush=True)
            reply = {"ok": True}
        elif request["op"] == "request":
            with registered:  # a tuner may ask before the server has registered: wait for it (bounded)
                registered.wait_for(lambda: request["key"] in servers, timeout=60)
            reply = servers.get(request["key"]) or {"error": f"no server with key {request['key']!r}"}
            print(f"tuner asked for key {request['key']!r}: {reply}", flush=True)
        else:
            reply = {"ok": True}
            done.set()
        self.wfile.write(json.dumps(reply).encode() + b"\n")


socketserver.ThreadingTCPServer.allow_reuse_address = True
with socketserver.ThreadingTCPServer(("", port), Handler) as tracker:
    print(f"tracker listening on port {port}", flush=True)
    threading.Thread(target=tracker.serve_forever, kwargs={"poll_interval": 0.1}, daemon=True).start()
    finished = done.wait(timeout=300)
    tracker.shutdown()
sys.exit(0 if finished else "no tuner finished within 300 s")

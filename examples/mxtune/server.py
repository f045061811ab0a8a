"""MXTune's RPC server, as TVM's ``rpc_server --tracker … --key …`` plays it: it listens on its own port, registers
with the tracker under its TVM key (the replica spec's ``label``, in MX_CONFIG's ``labels.tunerserver``), then
"measures" the configurations a tuner sends (here: a made-up cost) until the tuner says it is done.
"""

import json
import socketserver
import sys
import time

from wire import CONFIG, KEY, TRACKER, call

me = CONFIG["cluster"]["tunerserver"][CONFIG["task"]["index"]]


class Handler(socketserver.StreamRequestHandler):
    def handle(self) -> None:
        request = json.loads(self.rfile.readline())
        if request["op"] == "measure":
            tile = request["config"]["tile"]
            reply = {"cost": abs(tile - 12) + 1.0}  # "the kernel is fastest with a tile of 12"
        else:
            reply = {"ok": True}
            self.server.done = True
        self.wfile.write(json.dumps(reply).encode() + b"\n")


socketserver.TCPServer.allow_reuse_address = True
with socketserver.TCPServer(("", me["port"]), Handler) as server:
    server.done = False
    server.timeout = 1
    call(TRACKER["url"], TRACKER["port"], {"op": "register", "key": KEY, "host": me["url"], "port": me["port"]})
    print(f"registered with the tracker at {TRACKER['url']}:{TRACKER['port']} under key {KEY!r}", flush=True)
    deadline = time.time() + 300
    while not server.done and time.time() < deadline:
        server.handle_request()
sys.exit(0 if server.done else "the tuner never finished")

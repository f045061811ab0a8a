"""MXTune's RPC server, as TVM's ``rpc_server --tracker … --key …`` plays it: it listens on its own port, registers
with the tracker under its TVM key (the replica spec's ``label``, in MX_CONFIG's ``labels.tunerserver``), then
"measures" the configurations a tuner sends (here: a made-up cost) until the tuner says it is done.
"""

import json
import os
import socket
import socketserver
import sys
import time

config = json.loads(os.environ["MX_CONFIG"])
me = config["cluster"]["tunerserver"][config["task"]["index"]]
tracker = config["cluster"]["tunertracker"][0]
key = config["labels"]["tunerserver"]


def call(host: str, port: int, request: dict) -> dict:
    """One JSON-line request; the tracker may not be listening yet, so connecting is retried for a while."""
    deadline = time.time() + 60
    while True:
        try:
            with socket.create_connection((host, port), timeout=10) as conn:
                conn.sendall(json.dumps(request).encode() + b"\n")
                return json.loads(conn.makefile().readline())
        except OSError:
            if time.time() > deadline:
                raise
            time.sleep(0.1)


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
    call(tracker["url"], tracker["port"], {"op": "register", "key": key, "host": me["url"], "port": me["port"]})
    print(f"registered with the tracker at {tracker['url']}:{tracker['port']} under key {key!r}", flush=True)
    deadline = time.time() + 300
    while not server.done and time.time() < deadline:
        server.handle_request()
sys.exit(0 if server.done else "the tuner never finished")

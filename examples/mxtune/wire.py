"""What the three MXTune scripts share: the job's MX_CONFIG and one JSON-line request over TCP."""

import json
import os
import socket
import time

CONFIG = json.loads(os.environ["MX_CONFIG"])   # {"cluster": {type: [{"url", "port"}]}, "labels": {...}, "task": {...}}
TRACKER = CONFIG["cluster"]["tunertracker"][0]
KEY = CONFIG["labels"]["tunerserver"]          # the TunerServer's TVM key (its replica spec's `label`)


def call(host: str, port: int, request: dict, read_timeout: float = 70) -> dict:
    """Send one request, return the reply; connecting is retried for a minute (the peer may not listen yet)."""
    deadline = time.time() + 60
    while True:
        try:
            with socket.create_connection((host, port), timeout=read_timeout) as conn:
                conn.sendall(json.dumps(request).encode() + b"\n")
                return json.loads(conn.makefile().readline())
        except OSError:
            if time.time() > deadline:
                raise
            time.sleep(0.1)

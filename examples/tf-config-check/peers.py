"""A TensorFlow-free check of a TFJob's wiring: every replica reads TF_CONFIG, listens on its own address (its entry
in the cluster spec) and connects to every peer over TCP, exchanging who it is. It exits 0 once it has reached every
peer and been reached by every peer, 1 otherwise (after a minute). What a TensorFlow server needs from TF_CONFIG,
proven without TensorFlow: every address resolves, every replica listens where its peers look for it, and replicas
of one type share their type's port (2222) without colliding.
"""

import json
import os
import socket
import sys
import threading
import time

CONFIG = json.loads(os.environ["TF_CONFIG"])
ME = f"{CONFIG['task']['type']}-{CONFIG['task']['index']}"
ADDRESSES = {f"{rtype}-{i}": address for rtype, hosts in CONFIG["cluster"].items() for i, address in enumerate(hosts)}
PEERS = {name: address for name, address in ADDRESSES.items() if name != ME}
DEADLINE = time.time() + 60


def split(address: str) -> tuple[str, int]:
    host, _, port = address.rpartition(":")
    return host, int(port)


heard: set[str] = set()
lock = threading.Lock()
everyone_heard = threading.Event()


def serve(listener: socket.socket) -> None:
    """Accept the peers until every one has said who it is."""
    listener.settimeout(1.0)
    while not everyone_heard.is_set() and time.time() < DEADLINE:
        try:
            conn, _ = listener.accept()
        except TimeoutError:
            continue
        with conn:
            conn.settimeout(10)
            name = conn.makefile().readline().strip()
            conn.sendall(f"{ME}\n".encode())
        with lock:
            heard.add(name)
            if heard >= set(PEERS):
                everyone_heard.set()


def reach(name: str, address: str) -> str:
    """Connect to a peer (retried: it may not listen yet), say who we are, read who answered."""
    while True:
        try:
            with socket.create_connection(split(address), timeout=5) as conn:
                conn.sendall(f"{ME}\n".encode())
                return conn.makefile().readline().strip()
        except OSError:
            if time.time() > DEADLINE:
                raise
            time.sleep(0.1)


listener = socket.create_server(split(ADDRESSES[ME]))   # our own address: a peer's bind elsewhere cannot collide
print(f"{ME} listening on {ADDRESSES[ME]}", flush=True)
server = threading.Thread(target=serve, args=(listener,), daemon=True)
server.start()
if not PEERS:
    everyone_heard.set()
for name, address in sorted(PEERS.items()):
    answered = reach(name, address)
    if answered != name:
        sys.exit(f"{ME}: {address} answered as {answered!r}, not {name!r}")
    print(f"{ME} reached {name} at {address}", flush=True)
if not everyone_heard.wait(max(0.0, DEADLINE - time.time())):
    sys.exit(f"{ME}: not every peer reached us: missing {sorted(set(PEERS) - heard)}")
print(f"{ME} reached every peer and was reached by every peer ({len(PEERS)})", flush=True)

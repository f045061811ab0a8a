"""The embedded API server under issue 33's load, at full size and default settings; prints what it measured.

    .venv/bin/python hack/apiserver_limits.py slow --connections 3000     # slowloris: threads stay under the cap
    .venv/bin/python hack/apiserver_limits.py flood --requests 2000       # one user floods: the admin still answers
    .venv/bin/python hack/apiserver_limits.py flood --hostile             # ... with clients that ignore Retry-After

``slow``: that many connections each send half a request line, then a header line every 5 s; the server's thread
count is sampled, and ``/readyz`` timed on fresh connections all along. ``flood``: a TLS server; a child process
runs that many clients of a non-admin user, each sending slow lists (a fault adds 0.5 s each) one after another on
its connection for 20 s, waiting Retry-After after a 429 as client-go does, while the administrator's ``kubectl get
ns`` is timed; every answer must be 200 or 429 with ``Retry-After`` and both PF headers.
"""

from __future__ import annotations

import argparse
import http.client
import json
import socket
import ssl
import subprocess
import sys
import tempfile
import threading
import time
from pathlib import Path
from typing import Any

from mxjob_controller.local.apiserver.http.faults import FaultRule
from mxjob_controller.local.apiserver.http.flowcontrol import FLOW_SCHEMA_HEADER, PRIORITY_LEVEL_HEADER
from mxjob_controller.local.apiserver.server import APIServer, ServerOptions

CMS = "/api/v1/namespaces/default/configmaps"


def _get(host: str, port: int, path: str, token: str | None = None, ca: str | None = None,
         agent: str = "limits") -> tuple[int, dict[str, str], bytes]:
    if ca:
        conn: http.client.HTTPConnection = http.client.HTTPSConnection(
            host, port, timeout=120, context=ssl.create_default_context(cafile=ca))
    else:
        conn = http.client.HTTPConnection(host, port, timeout=120)
    try:
        conn.request("GET", path, headers={"User-Agent": agent,
                                           **({"Authorization": f"Bearer {token}"} if token else {})})
        resp = conn.getresponse()
        return resp.status, {k.lower(): v for k, v in resp.getheaders()}, resp.read()
    finally:
        conn.close()


def slow(connections: int, seconds: float) -> None:
    """Open ``connections`` slow ones, then trickle a header line on each every 5 s until the server has closed
    them all (or ``seconds`` pass): how many threads it ran, how /readyz fared, how long the longest one lived."""
    with APIServer(ServerOptions()) as api:
        assert api._http is not None
        before = threading.active_count()
        opened: dict[socket.socket, float] = {}
        lived: list[float] = []
        most, readyz = before, []

        def check_readyz() -> None:
            started = time.monotonic()
            assert _get(api.host, api.port, "/readyz")[0] == 200
            readyz.append(time.monotonic() - started)

        try:
            for i in range(connections):
                s = socket.create_connection((api.host, api.port), timeout=10)
                s.sendall(b"GET /version HTTP/1.1\r\nX-Slow: ")
                opened[s] = time.monotonic()
                most = max(most, threading.active_count())
                if i % 500 == 499:
                    check_readyz()
            stop, line = time.monotonic() + seconds, 0
            while opened and time.monotonic() < stop:
                for s, at in list(opened.items()):
                    if _closed(s):
                        lived.append(time.monotonic() - at)
                        del opened[s]
                        s.close()
                        continue
                    if line % 5 == 0:  # a header line every 5 s; closings looked for every second
                        try:
                            s.sendall(f"\r\nX-Line-{line}: y".encode())
                        except OSError:
                            pass
                line += 1
                check_readyz()
                most = max(most, threading.active_count())
                time.sleep(1)
        finally:
            for s in opened:
                s.close()
        print(f"{connections} slow connections, cap {api._http.max_connections}: threads before {before}, "
              f"most {most} (+{most - before}); /readyz max {max(readyz) * 1000:.0f} ms, median "
              f"{sorted(readyz)[len(readyz) // 2] * 1000:.0f} ms over {len(readyz)} tries; closed by the server: "
              f"{len(lived)}, the longest after {max(lived):.1f} s; still open: {len(opened)}")


def _closed(s: socket.socket) -> bool:
    s.setblocking(False)
    try:
        return s.recv(1) == b""
    except BlockingIOError:
        return False
    except OSError:
        return True


def flood(requests: int, hostile: bool = False) -> None:
    with APIServer(ServerOptions(tls=True)) as api, tempfile.TemporaryDirectory() as tmp:
        api.faults.add(FaultRule(verb="list", resource="configmaps", user_agent="flood", latency=0.5))
        binding = {"apiVersion": "rbac.authorization.k8s.io/v1", "kind": "ClusterRoleBinding",
                "metadata": {"name": "flood"},
                "roleRef": {"apiGroup": "rbac.authorization.k8s.io", "kind": "ClusterRole", "name": "cm"},
                "subjects": [{"kind": "User", "name": "flood", "apiGroup": "rbac.authorization.k8s.io"}]}
        api.create({"apiVersion": "rbac.authorization.k8s.io/v1", "kind": "ClusterRole", "metadata": {"name": "cm"},
                    "rules": [{"apiGroups": [""], "resources": ["configmaps"], "verbs": ["list"]}]})
        api.create(binding)
        kubeconfig = api.write_kubeconfig(Path(tmp) / "kubeconfig")
        kubectl = ["kubectl", "--kubeconfig", str(kubeconfig), "--cache-dir", str(Path(tmp) / "cache"), "get", "ns"]
        subprocess.run(kubectl, check=True, capture_output=True)
        before: list[float] = []
        _timed_runs(kubectl, lambda: len(before) < 10, before)
        child = subprocess.Popen([sys.executable, __file__, "flood-client", api.host, str(api.port),
                                  api.issue_user_token("flood"), str(api.ca_file), str(requests), "20",
                                  *(["hostile"] if hostile else [])],
                                 stdout=subprocess.PIPE, text=True)
        assert child.stdout is not None
        assert child.stdout.readline().strip() == "flooding"
        flooded_since = time.time()
        during = _timed_runs(kubectl, lambda: child.poll() is None, [])
        result = json.loads(child.stdout.read())
        # The server's own part of each admin request (from its headers read to its answer sent), from the audit log.
        served = [r.elapsed for r in api.audit.records(verb="list", resource="namespaces", user_agent="kubectl",
                                                        since=flooded_since)]
        print(f"{requests} concurrent lists from one user: {result}")
        print(f"admin kubectl get ns without the flood: {_spread(before)}")
        print(f"admin kubectl get ns during the flood:  {_spread(during)}; each: "
              f"{' '.join(f'{t * 1000:.0f}' for t in during)} ms")
        print(f"... of which the server's part: {_spread(served)}")


def _timed_runs(argv: list[str], more: Any, times: list[float]) -> list[float]:
    """Run ``argv`` while ``more()``, half a second apart; how long each run took."""
    while more():
        started = time.monotonic()
        subprocess.run(argv, check=True, capture_output=True)
        times.append(time.monotonic() - started)
        time.sleep(0.5)
    return times


def _spread(times: list[float]) -> str:
    if not times:
        return "no runs"
    ordered = sorted(times)
    return (f"{len(ordered)} runs, median {ordered[len(ordered) // 2] * 1000:.0f} ms, 90th percentile "
            f"{ordered[int(len(ordered) * 0.9)] * 1000:.0f} ms, max {ordered[-1] * 1000:.0f} ms")


def flood_client(host: str, port: int, token: str, ca: str, clients: int, seconds: float,
                 hostile: bool = False) -> None:
    """``clients`` threads, each on one connection sending lists one after another (after a 429, waiting its
    Retry-After as client-go does, unless ``hostile``) from the moment it is connected until ``seconds`` after all
    are (``seconds`` 0: until standard input is closed): what came back, by status, any answer not in kube's shape
    counted apart. None waits idle for the others: on a loaded machine connecting 2,000 clients takes longer than
    the header deadline, which closes a connection that sends no request within 32 s, as kube-apiserver's does. A
    child process of its own, as real clients are: in the server's process they would compete with it for the
    interpreter."""
    codes: dict[str, int] = {}
    flow_headers: dict[str, int] = {}  # answers by their "<flow schema UID> <priority level UID>"
    problems: list[str] = []
    lock = threading.Lock()
    context = ssl.create_default_context(cafile=ca)
    stop_at = [float("inf")]
    connected = [0]

    def client() -> None:
        conn = http.client.HTTPSConnection(host, port, timeout=120, context=context)
        try:
            conn.connect()
            with lock:
                connected[0] += 1
            while time.monotonic() < stop_at[0]:
                conn.request("GET", CMS, headers={"User-Agent": "flood", "Authorization": f"Bearer {token}"})
                resp = conn.getresponse()
                body = resp.read()
                headers = {k.lower(): v for k, v in resp.getheaders()}
                key = str(resp.status) if _in_kubes_shape(resp.status, headers, body) else f"{resp.status} malformed"
                pf = f"{headers.get(FLOW_SCHEMA_HEADER.lower())} {headers.get(PRIORITY_LEVEL_HEADER.lower())}"
                with lock:
                    codes[key] = codes.get(key, 0) + 1
                    flow_headers[pf] = flow_headers.get(pf, 0) + 1
                if resp.status == 429 and not hostile:
                    time.sleep(int(headers.get("retry-after", "1")))
        except Exception as e:
            with lock:
                codes["dropped"] = codes.get("dropped", 0) + 1
                problems.append(repr(e))
        finally:
            conn.close()

    threads = [threading.Thread(target=client, name=f"flood-{i}") for i in range(clients)]
    for t in threads:
        t.start()
    # The timed window opens once every client is connected (and flooding), or after 60 s.
    ready_by = time.monotonic() + 60
    while connected[0] < clients and time.monotonic() < ready_by:
        time.sleep(0.1)
    print("flooding", flush=True)
    if seconds > 0:
        stop_at[0] = time.monotonic() + seconds
    else:  # until the parent closes our standard input
        sys.stdin.read()
        stop_at[0] = time.monotonic()
    for t in threads:
        t.join(150)
    print(json.dumps({"codes": codes, "flow_headers": flow_headers, "connected": connected[0],
                      "problems": problems[:3]}), flush=True)


def _in_kubes_shape(status: int, headers: dict[str, str], body: bytes) -> bool:
    """200, or kube's plain-text 429 with ``Retry-After``; either with both PF headers."""
    if FLOW_SCHEMA_HEADER.lower() not in headers or PRIORITY_LEVEL_HEADER.lower() not in headers:
        return False
    if status != 429:
        return status == 200
    return int(headers.get("retry-after", "0")) >= 1 and body == b"Too many requests, please try again later.\n" \
        and headers.get("content-type") == "text/plain; charset=utf-8"


def main() -> None:
    if sys.argv[1:2] == ["flood-client"]:
        host, port, token, ca, clients, seconds = sys.argv[2:8]
        flood_client(host, int(port), token, ca, int(clients), float(seconds), hostile="hostile" in sys.argv[8:])
        return
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("scenario", choices=["slow", "flood"])
    parser.add_argument("--connections", type=int, default=3000)
    parser.add_argument("--seconds", type=float, default=40.0, help="how long the slow connections trickle")
    parser.add_argument("--requests", type=int, default=2000)
    parser.add_argument("--hostile", action="store_true", help="flood clients send again at once after a 429")
    args = parser.parse_args()
    if args.scenario == "slow":
        slow(args.connections, args.seconds)
    else:
        flood(args.requests, args.hostile)


if __name__ == "__main__":
    main()

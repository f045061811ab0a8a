"""Container logs as the kubelet keeps them: rotated at 10 MiB by 5 files (a pod printing 1 GB keeps 50 MiB, and
``--previous`` is whole after rotations), read across the rotated files, and stamped (``--timestamps``) in time
linear in a line's length."""

from __future__ import annotations

import os
import select
import time

import pytest

from mxjob_controller.local.apiserver.server import ServerOptions
from mxjob_controller.local.cluster import ClusterOptions, LocalCluster
from mxjob_controller.local.kubelet.log_rotation import RotatedLog
from mxjob_controller.local.kubelet.log_times import Timeline, stamped
from mxjob_controller.local.kubelet.options import KubeletOptions
from tests.local_support import container_status, local_cluster, pod_file, pod_path, script_pod, wait_phase
from tests.support import Kube, Kubectl, wait_for

PODS = "/api/v1/namespaces/default/pods"
MIB = 1024 * 1024


def _stamp_cpu(line_bytes: int) -> float:
    """CPU seconds ``stamped`` takes for one line of ``line_bytes`` bytes arriving in 64 KiB chunks."""
    chunk = b"x" * 65536
    chunks = [chunk] * (line_bytes // len(chunk)) + [b"\n"]
    timeline = Timeline(0.0)
    timeline.note(line_bytes + 1, 1.0)
    started = time.process_time()
    out = sum(len(part) for part in stamped(iter(chunks), 0, timeline))
    took = time.process_time() - started
    assert out == line_bytes + 1 + len(b"1970-01-01T00:00:01.000000000Z ")
    return took


def test_timestamps_are_linear_in_a_lines_length():
    """Issue 44: a 30 MB line took 12 s of server CPU (each chunk copied all the line before it). Ten times the
    line is now about ten times the work, not a hundred."""
    small, large = (min(_stamp_cpu(n) for _ in range(3)) for n in (3 * MIB, 30 * MIB))
    assert large < 1.0, f"30 MiB line: {large:.2f} s of CPU"
    # (a floor above the small line's few hundred µs, a busy machine's noise; quadratic work is a hundredfold)
    assert large / max(small, 3e-3) < 25, (small, large)


def test_stamped_lines_keep_their_bytes_and_times():
    timeline = Timeline(0.0)
    timeline.note(4, 1.0)          # "a\nb\n" ... first line whole at t=1
    timeline.note(10, 2.0)
    out = b"".join(stamped(iter([b"a\nb", b"\ncc", b"c\nd"]), 0, timeline))
    whole, last = out.rsplit(b"\n", 1)
    assert whole + b"\n" == (b"1970-01-01T00:00:01.000000000Z a\n1970-01-01T00:00:01.000000000Z b\n"
                             b"1970-01-01T00:00:02.000000000Z ccc\n")
    assert last.endswith(b"Z d") and len(last) == 32, "a last line no sample saw whole is stamped now"


def test_a_rotated_log_keeps_its_last_files_and_reads_across_them(tmp_path):
    path = tmp_path / "0.log"
    log = RotatedLog(path, max_size=64 * 1024, max_files=3)
    fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_APPEND, 0o600)   # as the container's stdout is
    written = b""
    for i in range(40):
        block = (f"{i:04d}".encode() * 2500)[:10_000] + b"\n"
        os.write(fd, block)
        written += block
        log.rotate()
    os.close(fd)
    end = log.rotate()
    assert end == len(written), "absolute offsets count every byte written"
    files = sorted(p.name for p in tmp_path.iterdir())
    assert len(files) <= 3 and "0.log" in files, files
    first, last = log.bounds()
    assert last == len(written) and first > 0
    reader = log.reader()
    assert reader.read() == written[first:], "the kept files hold the last bytes, in order, nothing lost"
    assert written[first - 1:first] == b"\n", "a read from the start begins with a whole line"
    on_disk = sum(p.stat().st_size for p in tmp_path.iterdir())
    assert len(written) - first <= on_disk < len(written) - first + 10_001, "at most a cut line before it"


@pytest.mark.slow
def test_a_pod_printing_a_gigabyte_keeps_at_most_50_mib_and_previous_survives_rotation(tmp_path):
    loud = ("import os, sys\nblock = b'y' * ((1 << 20) - 1) + b'\\n'\n"
            "for _ in range(1024):\n    os.write(1, block)\nos.write(1, b'the end\\n')\n")
    # First life: 30 MiB (three rotations) then exit 1; second life: one line. --previous is the first, whole.
    twice = ("import os, pathlib, sys\nmark = pathlib.Path('/tmp/ran')\n"
             "if mark.exists():\n    print('second life', flush=True)\n    sys.exit(0)\nmark.touch()\n"
             "block = b'z' * ((1 << 20) - 1) + b'\\n'\n"
             "for _ in range(30):\n    os.write(1, block)\nos.write(1, b'first life ends\\n')\nsys.exit(1)\n")
    with local_cluster(tmp_path) as (cluster, kube, kubectl):
        assert kube.post(PODS, script_pod("loud", loud)).ok
        assert kube.post(PODS, script_pod("twice", twice, restart_policy="OnFailure")).ok
        pod = wait_phase(kube, "loud", "Succeeded", "Failed", timeout=300)
        assert pod["status"]["phase"] == "Succeeded"
        folder = cluster.kubelet.logs.root / pod["metadata"]["uid"]
        kept = wait_for(lambda: (n := sum(p.stat().st_size for p in folder.rglob("*") if p.is_file()))
                        <= 50 * MIB and n, timeout=30, what="the log rotated down to its 5 files")
        assert kept > 40 * MIB, "the newest 40 MiB and more are kept"
        assert kubectl.ok("logs", "loud", "--tail", "1") == "the end\n"
        pod = wait_phase(kube, "twice", "Succeeded", timeout=120)
        assert container_status(pod)["restartCount"] == 1
        previous = kubectl.ok("logs", "twice", "--previous", timeout=120)
        assert len(previous) == 30 * MIB + len("first life ends\n") and previous.endswith("first life ends\n")
        assert kubectl.ok("logs", "twice") == "second life\n"
        tail = kube.get(pod_path("twice") + "/log", previous="true", tailLines="1").body
        assert tail == "first life ends\n"


@pytest.mark.slow
def test_following_a_log_keeps_its_place_across_rotations(tmp_path):
    """``kubectl logs -f`` from the start to the end of a container that rotates its log a dozen times (64 KiB
    files here): every line once, in order; with five files kept, a later read starts at the oldest kept line."""
    tmp_path.chmod(0o777)
    # The container writes its first line, then waits for the follower to have it (the test leaves /tmp/read in
    # the pod's own /tmp): a follower that started after five rotations would rightly miss the first file. Then,
    # every 500 lines, it waits until the follower has read all but 1,000 of them (about 1.5 of the 64 KiB files),
    # so a follower slowed by a busy machine is never five files behind, which kube's kubelet would rightly skip.
    script = ("import os, time\nprint(f'{0:06d} ' + 'x' * 92, flush=True)\n"
              "def read():\n    try:\n        return int(open('/tmp/read').read() or -1)\n"
              "    except (OSError, ValueError):\n        return -1\n"
              "for i in range(1, 8000):\n"
              "    if i % 500 == 1:\n        deadline = time.monotonic() + 120\n"
              "        while read() < i - 1000 and time.monotonic() < deadline:\n            time.sleep(0.02)\n"
              "    print(f'{i:06d} ' + 'x' * 92, flush=True)\n")
    options = ClusterOptions(server=ServerOptions(bookmark_interval=0.2), controller=False, webhooks=False,
                             kubelet_options=KubeletOptions(workdir=str(tmp_path), container_log_max_size=64 * 1024,
                                                            container_log_max_files=5))
    with LocalCluster(options) as cluster:
        kubectl = Kubectl(cluster.server.write_kubeconfig(tmp_path / "kubeconfig"), tmp_path / "cache")
        kube = Kube(cluster.server.url)
        assert kube.post(PODS, script_pod("rotating", script)).ok
        pod = wait_phase(kube, "rotating", "Running", "Succeeded")
        follower = kubectl.popen("logs", "-f", "rotating")
        try:
            progress = pod_file(cluster, pod, "/tmp/read")
            followed: list[str] = []
            while len(followed) < 8000:
                assert select.select([follower.stdout], [], [], 60)[0], f"nothing new in 60 s after {len(followed)}"
                line = follower.stdout.readline()
                if not line:
                    break
                followed.append(line.rstrip("\n"))
                if len(followed) % 500 == 1:   # the follower's place, for the writer's next 500 lines
                    (progress.parent / "read.tmp").write_text(str(len(followed) - 1))
                    (progress.parent / "read.tmp").replace(progress)
            assert follower.wait(60) == 0 and follower.stdout.read() == ""
        finally:
            follower.kill()
            follower.wait(10)
        assert followed == [f"{i:06d} " + "x" * 92 for i in range(8000)], "each line once, in order"
        wait_phase(kube, "rotating", "Succeeded")
        kept = kubectl.ok("logs", "rotating").splitlines()
        assert kept[-1].startswith("007999 ") and 2000 < len(kept) < 3400, len(kept)   # 5 x 64 KiB of 100-byte lines
        first = int(kept[0].split()[0])
        assert kept == [f"{i:06d} " + "x" * 92 for i in range(first, 8000)]
        assert kubectl.ok("logs", "rotating", "--tail", "3").splitlines() == kept[-3:]
        kube.close()

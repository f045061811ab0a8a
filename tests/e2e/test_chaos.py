"""The chaos run's short form (hack/chaos.py, issue 16): every target of its summary holds.

The harness runs in a process of its own, as ``make chaos`` runs it: it starts ``local up`` and the controllers as
processes, SIGKILLs one, hands over a Lease and throws malformed requests at the API server; a failing run prints
the seed and the command that reproduces it.
"""

from __future__ import annotations

import json
import signal
import subprocess
import sys
from pathlib import Path

import pytest

# Not run alone: its targets hold beside four or five CPU burners (more than the other workers' tests plus the two
# burners of the suite's loaded runs), so the other workers need not idle for the minute it runs.
pytestmark = pytest.mark.slow

ROOT = Path(__file__).resolve().parents[2]
# The large job's 240 children are created within the 20 s submission window (it ends about when the window does),
# so every small job still arrives while it runs and the main phase does not wait on it after the window; the
# large job deleted mid-creation has 60 replicas, still being created when its delete comes 3-6 s in.
SHORT_FORM = ["--seed", "11", "--jobs", "16", "--kills", "1", "--large", "120", "--duration", "20",
              "--deadline", "60", "--malformed", "300", "--bombs", "2", "--bomb-max-nodes", "10000000",
              "--leader-jobs", "3", "--settle", "15", "--event-grace", "10"]
BUDGET = 240.0  # seconds; the run itself takes about a minute on 2 cores


def run_chaos(tmp_path: Path) -> tuple[int, str, dict]:
    summary = tmp_path / "summary.json"
    proc = subprocess.Popen([sys.executable, "hack/chaos.py", *SHORT_FORM, "--json", str(summary)], cwd=ROOT,
                            stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True)
    try:
        out, _ = proc.communicate(timeout=BUDGET)
    except subprocess.TimeoutExpired:
        proc.send_signal(signal.SIGTERM)  # the harness cleans up (processes, temp dir) on SIGTERM
        out, _ = proc.communicate(timeout=90)
        raise AssertionError(f"the chaos run took more than {BUDGET:.0f} s:\n{out}") from None
    return proc.returncode, out, json.loads(summary.read_text()) if summary.exists() else {}


def test_chaos_short_form_meets_every_target(tmp_path: Path) -> None:
    code, out, summary = run_chaos(tmp_path)
    assert summary, f"no summary written (exit {code}):\n{out}"
    assert not summary["error"], f"the harness could not finish: {summary['error']}\n{out}"
    rows = {r["name"]: r for r in summary["rows"]}
    for needed in ("duplicate pods (creates beyond need + overlapping)", "lost jobs", "wrong end states",
                   "stray children", "terminal events present", "metrics vs truth (metric/true)",
                   "replicas: 1000000000 refused", "max first-status wait, small job while the large one runs",
                   "leader takeover after SIGKILL (Lease holder changed)", "API server crashes",
                   "hangs (no answer in 10 s; bombs 20 s)", "error answers that are not a JSON Status",
                   "controller readiness lost (3 probes in a row unanswered)",
                   "large job (60 replicas) deleted: last create after the delete"):
        assert needed in rows, f"the summary has no row {needed!r}:\n{out}"
    missed = [f"{r['name']}: {r['value']} (target {r['target']})" for r in summary["rows"] if r["ok"] is False]
    assert not missed, "chaos targets missed:\n  " + "\n  ".join(missed) + f"\n\n{out}"
    assert code == 0, out

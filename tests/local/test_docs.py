"""``docs/local-cluster.md``'s ``local run`` checks and shell completion blocks run as they are written (its other
blocks are tests/e2e/test_readme_flows.py's, which knows these as read here): each fenced ``sh`` block under
``CHECKS`` and ``COMPLETION``, taken from the page at test time, run by bash (``-euo pipefail``) with the real CLI
from a directory laid out as a checkout (``.venv`` is this run's virtualenv, ``examples/`` the checkout's), and what
the page says each prints is checked."""

from __future__ import annotations

import subprocess

import pytest

from tests.e2e.test_readme_flows import blocks as section_blocks
from tests.e2e.test_readme_flows import checkout_like, shell_env

pytestmark = [pytest.mark.slow, pytest.mark.xdist_group("local-run")]

CHECKS = ("docs/local-cluster.md", "### What `local run` checks, shows and exits with")
COMPLETION = ("docs/local-cluster.md", "## Shell completion")


def blocks() -> list[str]:
    return [*section_blocks(CHECKS), *section_blocks(COMPLETION)]


#: For each block, in order: what its output must say.
EXPECTED = [
    ["all 8 job(s) succeeded in ", "all 8 job(s) succeeded in "],
    ['spec.runPolicy.backofLimit: unknown field; did you mean "backoffLimit"?', "local run exited 2"],
    ["default/huge failed: the gang of default/huge (PodGroup default/huge, minMember 5) can never be scheduled on "
     "this machine: it needs cpu 5 (the node has 4) at once", "local run exited 1"],
    ["complete -o nosort -F _mxjob_controller_completion mxjob-controller"],
]


def test_the_page_has_the_blocks_this_module_checks():
    assert len(blocks()) == len(EXPECTED), blocks()


@pytest.mark.parametrize("index", range(len(EXPECTED)))
def test_each_block_runs_as_written(tmp_path, index):
    work = checkout_like(tmp_path)
    done = subprocess.run(["bash", "-euo", "pipefail", "-c", blocks()[index]], cwd=work, env=shell_env(),
                          capture_output=True, text=True, timeout=600, check=False)
    out = done.stdout + done.stderr
    assert done.returncode == 0, out
    for said in dict.fromkeys(EXPECTED[index]):
        assert out.count(said) == EXPECTED[index].count(said), f"{said!r} not in:\n{out}"

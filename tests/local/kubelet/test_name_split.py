"""name_split: the split of a long value made from a kept near-identical one is exactly the expression's split."""

from __future__ import annotations

import json
import random

from mxjob_controller.local.kubelet import name_split
from mxjob_controller.local.kubelet.name_split import SPLIT, split_names

ALPHABET = "ab-.9Z\":,{} _/"


def _mx_config(peers: int, index: int, task: str = "worker") -> str:
    cluster = {"worker": [{"url": f"job-worker-{i}", "port": 9091} for i in range(peers)],
               "scheduler": [{"url": "job-scheduler-0.ns.svc", "port": 9090}]}
    return json.dumps({"cluster": cluster, "labels": {"worker": ""}, "task": {"type": task, "index": index}})


def test_the_pods_of_a_job_split_as_the_expression_splits_them():
    name_split._kept.clear()
    for index in (0, 1, 10, 999, 7, 123456):
        value = _mx_config(1000, index)
        assert split_names(value) == SPLIT.split(value)
    other = _mx_config(1000, 3, task="server")
    assert split_names(other) == SPLIT.split(other)
    assert split_names(other) == SPLIT.split(other)   # the very value kept
    assert len(name_split._kept) <= name_split.KEPT


def test_random_changes_anywhere_split_as_the_expression_splits_them():
    """Edits of one to a few characters (names' characters, separators, at the start, the end, beside a name) of a
    long value, each split from the one before it: the cut points never change what a name is."""
    name_split._kept.clear()
    rng = random.Random(48)
    value = "".join(rng.choice(ALPHABET) for _ in range(name_split.REUSE_FROM * 2))
    reused = 0
    for _ in range(400):
        at = rng.choice([0, 1, len(value) // 2, len(value) - 1, rng.randrange(len(value))])
        cut = rng.randint(0, 3)
        value = value[:at] + "".join(rng.choice(ALPHABET) for _ in range(rng.randint(0, 4))) + value[at + cut:]
        if len(value) < name_split.REUSE_FROM:
            value += "x" * name_split.REUSE_FROM
        before = list(name_split._kept)
        assert split_names(value) == SPLIT.split(value), value
        reused += any(name_split._from(k, value) is not None for k in before)
    assert reused > 200   # most (those not at the very start) were made from the kept split


def test_short_and_unrelated_values_are_split_by_the_expression():
    name_split._kept.clear()
    assert split_names("a b.ns.svc x-1 ") == ["", "a", " ", "b.ns.svc", " ", "x-1", " "]
    assert not name_split._kept   # too short to keep
    first, second = "a" * 5000 + " x", "{" * 5000 + " y"
    assert split_names(first) == SPLIT.split(first)
    assert name_split._from(name_split._kept[0], second) is None
    assert split_names(second) == SPLIT.split(second)

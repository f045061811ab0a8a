"""The local node's capacity (local/kubelet/node.py), table-tested: ``--capacity`` parsed and refused with the
reason, and overriding the machine's resources one by one."""

from __future__ import annotations

import pytest

from mxjob_controller.local.kubelet.node import CapacityError, node_capacity, parse_capacity


@pytest.mark.parametrize(("text", "expected"), [
    ("cpu=2,memory=4Gi,pods=110", {"cpu": "2", "memory": "4Gi", "pods": "110"}),
    ("cpu=1500m", {"cpu": "1500m"}),
    (" cpu = 2 , example.com/foo=4 ", {"cpu": "2", "example.com/foo": "4"}),
    ("memory=1024Mi,ephemeral-storage=10G", {"memory": "1Gi", "ephemeral-storage": "10G"}),
    ("", {}),
])
def test_capacity_parses(text, expected):
    assert parse_capacity(text) == expected


@pytest.mark.parametrize(("text", "says"), [
    ("cpu", "expected NAME=QUANTITY"),
    ("cpu=lots", "cpu=lots"),
    ("gpu=1", "not a resource name"),
    ("pods=1.5", "whole number"),
    ("example.com/foo=500m", "whole number"),
    ("cpu=-1", "at least 0"),
])
def test_capacity_refuses(text, says):
    with pytest.raises(CapacityError, match=says):
        parse_capacity(text)


def test_capacity_overrides_the_machine_resource_by_resource():
    machine = {"cpu": "8", "memory": "16Gi", "pods": "110", "ephemeral-storage": "100Gi"}
    assert node_capacity({"cpu": "2", "example.com/foo": "1"}, machine) == {
        "cpu": "2", "memory": "16Gi", "pods": "110", "ephemeral-storage": "100Gi", "example.com/foo": "1"}

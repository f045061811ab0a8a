"""The local node's GPUs, table-tested on the pure rules of ``local/kubelet/devices.py``: ``--gpus`` values,
``nvidia-smi -L`` output, what a container asks for, kube's device-manager allocation (init containers' devices
reused, sidecars' not, the admission error's message), what a container's environment says, and the node's table."""

from __future__ import annotations

import os
import shutil
import stat
from pathlib import Path

import pytest

from mxjob_controller.local.kubelet.devices import (
    GPU_RESOURCE,
    DevicesUnavailableError,
    GpuSpecError,
    NodeDevices,
    assign,
    detect_nvidia_gpus,
    device_env,
    free_devices,
    gpus_requested,
    node_resources,
    parse_gpus,
    parse_nvidia_smi_list,
)

FOUR = ("0", "1", "2", "3")


def detect_two() -> tuple[str, ...]:
    return ("0", "1")


@pytest.mark.parametrize(("text", "expected"), [
    ("auto", ("0", "1")),
    (" Auto ", ("0", "1")),
    ("none", ()),
    ("NONE", ()),
    ("0,1,2,3", FOUR),
    (" 3 , 1 ", ("3", "1")),
    ("7", ("7",)),
    ("01,2", ("1", "2")),
])
def test_gpus_values(text, expected):
    assert parse_gpus(text, detect_two) == expected


@pytest.mark.parametrize(("text", "says"), [
    ("", "'' is not a device index"),
    ("0,x", "'x' is not a device index"),
    ("-1", "'-1' is not a device index"),
    ("0,,1", "'' is not a device index"),
    ("all", "expected auto, none or device indices separated by commas (e.g. 0,1,2,3); 'all' is not"),
    ("GPU-5e8d1b0a", "'gpu-5e8d1b0a' is not a device index"),
    ("1,2,1", "'1,2,1': device 1 is listed more than once"),
    ("0,00", "device 0 is listed more than once"),
])
def test_bad_gpus_values_say_why(text, says):
    with pytest.raises(GpuSpecError) as caught:
        parse_gpus(text, detect_two)
    assert says in str(caught.value)


NVIDIA_SMI_L = """\
GPU 0: NVIDIA A100-SXM4-40GB (UUID: GPU-5e8d1b0a-7c44-2b3c-4e1f-9a0b1c2d3e4f)
  MIG 1g.5gb      Device  0: (UUID: MIG-0e5d6c4b-3a29-5f81-8c7d-6e5f4a3b2c1d)
  MIG 1g.5gb      Device  1: (UUID: MIG-1f6e7d5c-4b3a-6092-9d8e-7f6a5b4c3d2e)
GPU 1: NVIDIA A100-SXM4-40GB (UUID: GPU-6f9e2c1b-8d55-3c4d-5f2a-ab1c2d3e4f50)
GPU 2: Tesla V100-SXM2-16GB (UUID: GPU-7a0f3d2c-9e66-4d5e-6a3b-bc2d3e4f5061)
"""


@pytest.mark.parametrize(("output", "expected"), [
    (NVIDIA_SMI_L, ("0", "1", "2")),
    ("GPU 0: NVIDIA GeForce RTX 3090 (UUID: GPU-0b1c2d3e-4f50-6172-8394-a5b6c7d8e9f0)\n", ("0",)),
    ("No devices found.\n", ()),
    ("", ()),
])
def test_nvidia_smi_list_output(output, expected):
    assert parse_nvidia_smi_list(output) == expected


def container(name: str, limit: object = None, request: object = None, **extra: object) -> dict:
    resources: dict = {}
    if limit is not None:
        resources["limits"] = {GPU_RESOURCE: limit, "cpu": "1"}
    if request is not None:
        resources["requests"] = {GPU_RESOURCE: request}
    return {"name": name, "resources": resources, **extra}


@pytest.mark.parametrize(("spec", "expected"), [
    (container("c"), 0),
    (container("c", limit="2"), 2),
    (container("c", limit=2), 2),
    (container("c", limit="2", request="2"), 2),
    (container("c", request="1"), 1),            # kube's API wants the limit; the request alone still counts here
    (container("c", limit="0"), 0),
    (container("c", limit="1k"), 1000),
    (container("c", limit="1.5"), 0),            # refused by the API as "must be an integer"
    (container("c", limit="lots"), 0),
    ({"name": "c", "resources": {"limits": {"cpu": "2"}}}, 0),
])
def test_what_a_container_asks_for(spec, expected):
    assert gpus_requested(spec) == expected


def pod(*containers: dict, init: tuple[dict, ...] = ()) -> dict:
    spec: dict = {"containers": list(containers)}
    if init:
        spec["initContainers"] = list(init)
    return {"metadata": {"name": "p", "uid": "u"}, "spec": spec}


@pytest.mark.parametrize(("spec", "free", "expected"), [
    (pod(container("a")), FOUR, {}),
    (pod(container("a", limit="2")), FOUR, {"a": ("0", "1")}),
    (pod(container("a", limit="2"), container("b"), container("c", limit="1")), FOUR,
     {"a": ("0", "1"), "c": ("2",)}),
    (pod(container("a", limit="2")), ("2", "3"), {"a": ("2", "3")}),
    (pod(container("a", limit="4")), FOUR, {"a": FOUR}),
    # An init container's devices go on to the containers after it: the pod needs max(init, sum), not the total.
    (pod(container("app", limit="2"), init=(container("init", limit="2"),)), ("0", "1"),
     {"init": ("0", "1"), "app": ("0", "1")}),
    (pod(container("app", limit="3"), init=(container("i1", limit="1"), container("i2", limit="2"))), ("5", "6", "7"),
     {"i1": ("5",), "i2": ("5", "6"), "app": ("5", "6", "7")}),
    # ... each device to one container: the first takes the reused ones, the second free ones.
    (pod(container("a", limit="2"), container("b", limit="2"), init=(container("init", limit="2"),)), FOUR,
     {"init": ("0", "1"), "a": ("0", "1"), "b": ("2", "3")}),
    # A sidecar (an init container that keeps running) keeps its devices: nothing of them is reused.
    (pod(container("app", limit="1"), init=(container("side", limit="1", restartPolicy="Always"),)), ("0", "1"),
     {"side": ("0",), "app": ("1",)}),
])
def test_allocation_as_kube_s_device_manager(spec, free, expected):
    assert assign(spec, free) == expected


@pytest.mark.parametrize(("spec", "free", "needed", "available"), [
    (pod(container("a", limit="3")), ("0", "1"), 3, 2),
    (pod(container("a", limit="1")), (), 1, 0),
    (pod(container("a", limit="2"), container("b", limit="2")), ("0", "1", "2"), 2, 1),
    # What the container still needs once the reused devices are taken, as kube's message counts it.
    (pod(container("app", limit="3"), init=(container("init", limit="1"),)), ("0", "1"), 2, 1),
])
def test_devices_unavailable_say_it_as_kube(spec, free, needed, available):
    with pytest.raises(DevicesUnavailableError) as caught:
        assign(spec, free)
    assert caught.value.reason == "UnexpectedAdmissionError"
    assert str(caught.value) == ("Allocate failed due to requested number of devices unavailable for nvidia.com/gpu. "
                                 f"Requested: {needed}, Available: {available}, which is unexpected")


@pytest.mark.parametrize(("ids", "expected"), [
    ((), {"NVIDIA_VISIBLE_DEVICES": "void", "CUDA_VISIBLE_DEVICES": ""}),
    (("1", "3"), {"NVIDIA_VISIBLE_DEVICES": "1,3", "CUDA_VISIBLE_DEVICES": "1,3", "CUDA_DEVICE_ORDER": "PCI_BUS_ID"}),
])
def test_what_a_container_sees(ids, expected):
    assert device_env(ids) == expected


def test_the_node_advertises_only_what_it_has():
    assert node_resources(FOUR) == {GPU_RESOURCE: "4"}
    assert node_resources(()) == {}
    assert free_devices(FOUR, [{"a": ("1",)}, {"b": ("3", "0")}]) == ["2"]


def test_the_node_s_table_holds_each_pod_s_devices_until_released():
    node = NodeDevices(FOUR)
    two = pod(container("main", limit="2"))
    first = node.admit("u1", two)
    assert first == {"main": ("0", "1")}
    assert node.admit("u1", two) == first, "asked again (a restart): the same devices"
    assert node.admit("u2", two) == {"main": ("2", "3")}
    assert node.admit("none", pod(container("main"))) == {} and node.free() == []
    with pytest.raises(DevicesUnavailableError):
        node.admit("u3", pod(container("main", limit="1")))
    assert node.free() == [], "a refused pod holds nothing"
    node.release("u1")
    assert node.free() == ["0", "1"]
    assert node.admit("u3", pod(container("main", limit="1"))) == {"main": ("0",)}
    assert node.admit("u2", two) == {"main": ("2", "3")}, "a later free device does not move a pod's"
    node.release("u1")   # twice, or for a pod that held nothing: no harm
    assert node.free() == ["1"]


def fake_nvidia_smi(folder: Path, script: str) -> str:
    """A program named nvidia-smi on PATH (no GPU on the test machine): what ``auto`` does with its output and
    exit status."""
    program = folder / "nvidia-smi"
    program.write_text(f"#!/bin/sh\n{script}\n")
    program.chmod(program.stat().st_mode | stat.S_IXUSR)
    return str(folder)


@pytest.mark.integration
def test_auto_detection_runs_nvidia_smi(tmp_path, monkeypatch):
    cat = shutil.which("cat")
    assert cat
    monkeypatch.setenv("PATH", str(tmp_path))
    assert detect_nvidia_gpus() == (), "no nvidia-smi: no GPUs"
    listing = tmp_path / "listing"
    listing.write_text(NVIDIA_SMI_L)
    fake_nvidia_smi(tmp_path, f'[ "$1" = "-L" ] && exec {cat} {listing}')
    assert detect_nvidia_gpus() == ("0", "1", "2")
    fake_nvidia_smi(tmp_path, "echo \"NVIDIA-SMI has failed because it couldn't communicate with the NVIDIA "
                              "driver.\"; exit 9")
    assert detect_nvidia_gpus() == (), "a failing nvidia-smi: no GPUs (and a warning)"
    assert os.access(tmp_path / "nvidia-smi", os.X_OK)

"""What ``execve`` takes (local/kubelet/exec_bounds.py), as a container's environment and arguments are built
within it: ``MAX_ARG_STRLEN`` per string (its name and NUL included) and ``ARG_MAX`` for all of them, the error
naming the variable or argument that passes the bound."""

from __future__ import annotations

import pytest

from mxjob_controller.local.kubelet.container_env import ContainerConfigError, container_argv, container_env
from mxjob_controller.local.kubelet.exec_bounds import ARG_MAX, MAX_ARG_STRLEN

POD = {"metadata": {"name": "job-worker-0", "namespace": "team", "uid": "u1"}, "spec": {"nodeName": "local"}}


def _env(*variables: tuple[str, str], base: dict[str, str] | None = None) -> dict[str, str]:
    container = {"name": "c", "env": [{"name": n, "value": v} for n, v in variables]}
    return container_env(POD, container, base or {}, lookup=lambda *_: None, service_address=lambda *_: None)


def test_a_doubling_chain_stops_at_the_first_variable_past_max_arg_strlen():
    chain = [("V0", "xxxxxxxx")] + [(f"V{n}", f"$(V{n - 1})$(V{n - 1})") for n in range(1, 40)]
    with pytest.raises(ContainerConfigError, match=r"^environment variable V14 is longer than Linux takes") as e:
        _env(*chain)
    assert e.value.reason == "CreateContainerConfigError"
    assert len(_env(*chain[:14])["V13"]) == 65536


def test_one_string_may_reach_max_arg_strlen_with_its_name_and_nul_not_more():
    fits = "x" * (MAX_ARG_STRLEN - len("A=") - 1)
    assert _env(("A", fits))["A"] == fits
    assert _env(("B", fits[:1000]), ("A", "$(B)" + fits[1000:]))["A"] == fits
    with pytest.raises(ContainerConfigError, match="environment variable A is longer"):
        _env(("A", fits + "x"))
    with pytest.raises(ContainerConfigError, match="environment variable A is longer"):
        _env(("B", "é"), ("A", "$(B)" + fits[1:]))   # two bytes in UTF-8: one too many
    env = {"A": fits}
    assert container_argv({"name": "c", "command": ["run", "$(A)"]}, {}) == ["run", "$(A)"]
    assert len(container_argv({"name": "c", "command": ["run"], "args": ["xx$(A)"]}, env)[1]) == MAX_ARG_STRLEN - 1
    with pytest.raises(ContainerConfigError, match="argument 1 is longer"):
        container_argv({"name": "c", "command": ["run"], "args": ["xxx$(A)"]}, env)


def test_all_strings_together_stay_within_arg_max_naming_the_one_that_passes_it():
    big = "x" * 100_000
    count = ARG_MAX // 100_000
    with pytest.raises(ContainerConfigError, match=f"^environment variable V{count - 1} takes the environment and "
                                                   "arguments past this machine's ARG_MAX"):
        _env(("BIG", big), *((f"V{i}", "$(BIG)") for i in range(count + 5)))
    env = _env(("BIG", big), *((f"V{i}", "$(BIG)") for i in range(count - 2)))
    with pytest.raises(ContainerConfigError, match=r"^argument \d+ takes the environment and arguments past"):
        container_argv({"name": "c", "command": ["run"], "args": ["$(BIG)"] * 5}, env)
    with pytest.raises(ContainerConfigError, match="past this machine's ARG_MAX"):
        _env(("A", "x"), base={f"B{i}": big for i in range(count + 1)})

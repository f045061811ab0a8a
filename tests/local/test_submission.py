"""``local run`` checks every object as kubectl does (``fieldValidation=Strict`` by default, ``--validate`` as kubectl
spells it) before it creates any: a misspelled field is a bad file (exit 2) named with its path and the nearest
valid name, and nothing of the run starts; a value the API refuses is exit 1, with the nearest supported value."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest
import yaml

from tests.local.test_run import local_run

pytestmark = [pytest.mark.slow, pytest.mark.xdist_group("local-run")]


def job(name: str, script: str = "print('ran')") -> dict[str, Any]:
    container = {"name": "mxnet", "image": "mxnet/python", "command": ["python3", "-c", script]}
    return {"apiVersion": "kubeflow.org/v1", "kind": "MXJob", "metadata": {"name": name},
            "spec": {"runPolicy": {"backoffLimit": 3}, "mxReplicaSpecs": {"Worker": {
                "replicas": 1, "restartPolicy": "Never", "template": {"spec": {"containers": [container]}}}}}}


def misspelled(name: str) -> dict[str, Any]:
    """``backofLimit`` for ``backoffLimit`` and ``comand`` for ``command``."""
    bad = job(name)
    bad["spec"]["runPolicy"] = {"backofLimit": 3}
    container = bad["spec"]["mxReplicaSpecs"]["Worker"]["template"]["spec"]["containers"][0]
    container["comand"] = container.pop("command")
    return bad


def write(tmp_path: Path, name: str, *docs: dict[str, Any]) -> Path:
    path = tmp_path / name
    path.write_text(yaml.safe_dump_all(docs))
    return path


def test_a_misspelled_field_exits_2_before_anything_starts_naming_each_field_and_what_was_meant(tmp_path):
    """A valid job first, in a file of its own; the misspelled one second: nothing is created (each object is
    checked first), so the valid job's worker never writes its marker."""
    tmp_path.chmod(0o777)
    marker = tmp_path / "ran"
    first = write(tmp_path, "first.yaml", job("first", f"open({str(marker)!r}, 'w').write('ran')"))
    second = write(tmp_path, "second.yaml", misspelled("typo"))
    run = local_run("--timeout", "60", str(first), str(second), timeout=120)
    assert run.returncode == 2, run.stdout + run.stderr
    assert f"Error: {second}: MXJob default/typo: MXJob in version \"v1\" cannot be handled as a MXJob: strict " \
           "decoding error: " in run.stderr, run.stderr
    assert 'unknown field "spec.runPolicy.backofLimit"' in run.stderr
    assert '  spec.runPolicy.backofLimit: unknown field; did you mean "backoffLimit"?' in run.stderr.splitlines()
    assert '  spec.mxReplicaSpecs.Worker.template.spec.containers[0].comand: unknown field; did you mean ' \
           '"command"?' in run.stderr.splitlines()
    assert "Running " not in run.stdout and not marker.exists()


def test_a_misspelled_replica_spec_key_and_replica_type_are_answered_with_the_nearest_valid_name(tmp_path):
    key = job("key-typo")
    key["spec"]["mxReplicaSpec"] = key["spec"].pop("mxReplicaSpecs")
    run = local_run(str(write(tmp_path, "key.yaml", key)), timeout=120)
    assert run.returncode == 2, run.stdout + run.stderr
    assert 'unknown field "spec.mxReplicaSpec"' in run.stderr
    assert 'spec.mxReplicaSpec: unknown field; did you mean "mxReplicaSpecs"?' in run.stderr, run.stderr

    rtype = job("type-typo")
    rtype["spec"]["mxReplicaSpecs"] = {"Workr": rtype["spec"]["mxReplicaSpecs"]["Worker"]}
    run = local_run(str(write(tmp_path, "type.yaml", rtype)), timeout=120)
    assert run.returncode == 1, run.stdout + run.stderr   # a value the API refused (the webhook's 422)
    assert 'spec.mxReplicaSpecs: Unsupported value: "Workr"' in run.stderr
    assert 'spec.mxReplicaSpecs: "Workr" is not supported; did you mean "Worker"?' in run.stderr, run.stderr


@pytest.mark.parametrize(("flag", "warned"), [("--validate=warn", True), ("--validate=ignore", False),
                                              ("--validate=false", False)])
def test_validate_warn_and_ignore_drop_the_field_as_kubectl_does(tmp_path, flag, warned):
    bad = misspelled("lax")
    container = bad["spec"]["mxReplicaSpecs"]["Worker"]["template"]["spec"]["containers"][0]
    container["command"] = container["comand"]   # runnable, with one field the schema does not know
    run = local_run(flag, "--timeout", "60", str(write(tmp_path, "lax.yaml", bad)), timeout=120)
    assert run.returncode == 0, run.stdout + run.stderr
    said = 'Warning: ' in run.stderr and 'unknown field "spec.runPolicy.backofLimit"' in run.stderr
    assert said == warned, run.stderr
    if warned:
        assert 'spec.runPolicy.backofLimit: unknown field; did you mean "backoffLimit"?' in run.stderr


def test_a_valid_job_still_runs_under_strict_validation(tmp_path):
    run = local_run("--validate", "strict", "--timeout", "1m", str(write(tmp_path, "ok.yaml", job("ok"))),
                    timeout=120)
    assert run.returncode == 0, run.stdout + run.stderr
    assert "all 1 job(s) succeeded" in run.stdout


def test_a_file_without_a_job_exits_2(tmp_path):
    path = write(tmp_path, "config.yaml", {"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": "only"}})
    run = local_run(str(path), timeout=120)
    assert run.returncode == 2, run.stdout + run.stderr
    assert "no MXJob, TFJob or GenericJob in the files given" in run.stderr, run.stderr


def test_a_misspelled_kind_exits_2_with_the_nearest_kind_served(tmp_path):
    path = write(tmp_path, "kind.yaml", job("a-job"), {**job("other"), "kind": "MXJobs"})
    run = local_run(str(path), timeout=120)
    assert run.returncode == 2, run.stdout + run.stderr
    assert f'{path}: no matches for kind "MXJobs" in version "kubeflow.org/v1"' in run.stderr, run.stderr
    assert 'did you mean "MXJob"?' in run.stderr


def test_a_directory_stands_for_its_manifests_and_timeout_takes_go_durations(tmp_path):
    folder = tmp_path / "jobs"
    folder.mkdir()
    write(folder, "one.yaml", job("one"))
    (folder / "two.json").write_text(yaml.safe_dump(job("two"), default_flow_style=True))
    (folder / "notes.txt").write_text("not a manifest")
    run = local_run("--timeout", "1m30s", str(folder), timeout=150)
    assert run.returncode == 0, run.stdout + run.stderr
    assert "all 2 job(s) succeeded" in run.stdout
    empty = tmp_path / "empty"
    empty.mkdir()
    run = local_run(str(empty), timeout=60)
    assert run.returncode == 2 and "a directory with no .yaml, .yml or .json file" in run.stderr
    run = local_run("--timeout", "5x", str(folder), timeout=60)
    assert run.returncode == 2 and 'time: unknown unit "x" in duration "5x"' in run.stderr, run.stderr

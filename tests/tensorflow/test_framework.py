"""The TensorFlow framework adapter (tensorflow/framework.py), pure: the names and labels it gives children as
training-operator 1.9 does for TFJobs, the master role (the chief, else worker 0), and the services' ports."""

from __future__ import annotations

import pytest

from mxjob_controller.core.job_vocabulary import replica_labels
from mxjob_controller.frameworks import FRAMEWORKS
from mxjob_controller.tensorflow.framework import TensorFlowFramework
from tests.tensorflow_support import tfjob, view

# --- names and labels: training-operator 1.9's for TFJobs -----------------------------------------------------

def test_the_framework_names_things_as_training_operator_does_for_tfjobs() -> None:
    framework = TensorFlowFramework()
    assert (framework.operator_name, framework.framework_name, framework.resource.kind,
            framework.resource.plural, framework.default_container) == (
        "tfjob-controller", "tensorflow", "TFJob", "tfjobs", "tensorflow")
    labels = replica_labels(framework.operator_name, framework.group_label, "dist", "PS", 1)
    assert labels == {"training.kubeflow.org/operator-name": "tfjob-controller",
                      "training.kubeflow.org/job-name": "dist", "training.kubeflow.org/replica-type": "ps",
                      "training.kubeflow.org/replica-index": "1"}, "exactly 1.9's labels: no legacy ones"
    assert FRAMEWORKS["tensorflow"].framework().operator_name == "tfjob-controller"


@pytest.mark.parametrize(("body", "masters"), [
    (tfjob(chief=1, ps=1, worker=2), {("Chief", 0)}),
    (tfjob(master=1, worker=2), {("Master", 0)}),
    (tfjob(ps=2, worker=2), {("Worker", 0)}),
])
def test_job_role_master_goes_to_the_chief_else_worker_0(body: dict, masters: set) -> None:
    job = view(body)
    framework = TensorFlowFramework()
    found = {(t, i) for t, r in job.replicas.items() for i in range(r.replicas) if framework.is_master(job, t, i)}
    assert found == masters


def test_services_expose_every_named_port_of_the_tensorflow_container() -> None:
    body = tfjob(worker=1)
    body["spec"]["tfReplicaSpecs"]["Worker"]["template"]["spec"]["containers"][0]["ports"] = [
        {"name": "debug", "containerPort": 6006}, {"containerPort": 7000}]
    assert TensorFlowFramework().service_ports(view(body), "Worker") == [
        {"name": "debug", "port": 6006}, {"name": "tfjob-port", "port": 2222}]

"""Tests of ``mxjob_controller/kubeflow_api/``: the generated CRDs and the validation every Kubeflow kind shares."""

"""Tests of ``mxjob_controller/mxnet/``: MXJob's API, wiring, status rules, v1alpha1, and its CRD on the embedded API
server."""

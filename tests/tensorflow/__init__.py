"""Tests of ``mxjob_controller/tensorflow/``: TFJob's API, wiring, status rules, its CRD on the server and its
reconcile."""

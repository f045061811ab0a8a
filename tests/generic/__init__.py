"""Tests of ``mxjob_controller/generic/``: T9k GenericJob's API, variables, wiring, status and its reconcile."""

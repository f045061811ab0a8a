"""Tests of ``mxjob_controller/runtime/workqueue/``: a file per module of the package."""

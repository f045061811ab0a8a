"""Tests of ``mxjob_controller/runtime/client/``: the API client, its transport and its budget."""

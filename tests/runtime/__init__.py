"""Tests of ``mxjob_controller/runtime/``: the generic controller machinery, against the embedded API server over HTTP
where it talks to one."""

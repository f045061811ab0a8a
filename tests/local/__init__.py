"""Tests of ``mxjob_controller/local/``, the embedded cluster: ``local run`` and the whole cluster here, each component
in its folder."""

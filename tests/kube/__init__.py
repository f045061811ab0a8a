"""Tests of ``mxjob_controller/kube/``: Kubernetes' own rules (quantities, selectors) as pure tables."""

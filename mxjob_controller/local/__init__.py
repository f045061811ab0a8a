"""The embedded cluster: an in-memory Kubernetes API server, a local kubelet, a scheduler, and the glue to run them
(``local up``, ``local run``) on one machine.

The operator never imports this package (``mxjob-controller run``, the webhook server and the manager import nothing
of it: a declared contract in ``pyproject.toml``, checked by ``make lint`` and tests/test_layering.py), and the
controller image leaves it out (``.dockerignore``). It depends on the operator, never the reverse: ``apiserver/`` and
``kubelet/`` stand on ``kube/`` and ``runtime/`` only; ``cluster.py``, ``run.py`` and ``scheduler/`` use the
frameworks and the core to run real jobs.
"""

"""The REST verbs of the embedded API server, one module per verb group as kube-apiserver's
``endpoints/handlers/``; ``rest.py`` assembles them into :class:`~mxjob_controller.local.apiserver.rest.REST`."""

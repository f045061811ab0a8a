"""MXNet specifics, in the same modules as every framework package: the MXJob API (``api``: names, defaults,
validation, the reconciler's typed view), its CRD (``crd``), how an MXJob's replicas find each other (``wiring``),
when an MXJob has succeeded (``status_rules``) and the adapter the job-controller core works through
(``framework``). MXJob alone also has ``v1alpha1`` (the oldest API and its conversion to ``v1``) with the CRD
entry that serves it (``crd_conversion``), and ``controller``: ``MXJobController``, the core's generic controller
assembly (``core/job_controller.py``) run with this adapter, kept as the name embedders and tests construct."""

"""MXNet specifics: how an MXJob's replicas find each other (``wiring``), when an MXJob has succeeded
(``status_rules``), the adapter the job-controller core works through (``framework``), and ``MXJobController``, the
core's generic controller assembly (``core/job_controller.py``) run with that adapter (``controller``)."""

"""MXNet specifics: how an MXJob's replicas find each other (``wiring``), when an MXJob has succeeded
(``status_rules``), the adapter the job-controller core works through (``framework``), and the controller that
assembles informers, work queue and reconciler (``controller``)."""

"""The operator process behind ``mxjob-controller run``: its settings (``settings``), the start-up CRD check
(``crd_check``), the controller factory (``controllers``) and the manager that runs endpoints, leader election and
the controller and stops them in order (``process``).

Nothing is imported here, so that reading the settings (the command line does, for every ``mxjob-controller``
invocation) does not load the controller."""

"""The manager (``mxjob_controller/manager/``) in-process."""

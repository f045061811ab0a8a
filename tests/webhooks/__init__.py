"""The operator's webhook server (``mxjob_controller/webhooks/``), and as users meet it on the local cluster."""

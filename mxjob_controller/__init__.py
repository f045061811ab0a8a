"""mxjob-controller: a Kubernetes operator for distributed Apache MXNet training (MXJob)."""

__version__ = "0.1.0"

"""The reconciler (``core/reconciler.py``, ``core/job_controller.py``) end to end against the embedded API server,
through the MXJob framework, with a helper playing the kubelet."""

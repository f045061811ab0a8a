"""What every Kubeflow job kind of this project shares: run policy, typed checks, replica-spec rules, defaults, the
reconciler's view, the status shape and the CRD schema pieces (MXJob and TFJob use all of it; GenericJob, a T9k
kind, its checks, run policy and CRD pieces).

Each kind's own API lives beside its controller wiring (``mxnet/api.py``, ``tensorflow/api.py``, ``generic/api.py``)
and passes its vocabulary (replica types, container, port, count maps) to these functions, so nothing here names a
kind. Pure functions over plain dicts (JSON as the API server sends it): no I/O, no threads.
"""

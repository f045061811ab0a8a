"""Tests of ``mxjob_controller/mxnet/v1alpha1/``: a file per module of the package; the conversion as a whole
(round trips, ``convert``) in test_convert.py."""

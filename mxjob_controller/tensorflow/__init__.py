"""TensorFlow on the job-controller core: Kubeflow's ``kubeflow.org/v1`` TFJob.

- ``api``: the TFJob API (names, defaults, validation, the reconciler's typed view, status shape), built on the
  pieces every Kubeflow kind shares, ``mxjob_controller.kubeflow_api`` (run policy, checks, template schema);
- ``crd``: the generated TFJob CRD;
- ``wiring``: ``TF_CONFIG``, how a replica finds its peers (pure);
- ``status_rules``: when a TFJob runs, succeeds or fails (pure);
- ``framework``: the adapter the core works through.

Both shapes of TFJob are served: tf-operator v1.0's (2019: run policy inline in ``spec``, as the cloud vendors'
REST bodies have it) and training-operator 1.9's (``spec.runPolicy``), merged field by field as MXJob's are.
"""

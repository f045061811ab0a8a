"""The job-controller core: what every Kubeflow-style training job controller does, whatever the framework.

A job owns, for each replica type and index, one pod and one headless service named ``<job>-<type>-<index>``; the
core creates, adopts and deletes them, follows their phases to the job's status, records events and counts jobs.
What is specific to a framework (its API, how a pod is wired into the cluster, when the job has succeeded) comes
through the small :class:`~mxjob_controller.core.framework.Framework` protocol; nothing here knows about a
particular framework (a layering test checks that no module here imports one).
"""

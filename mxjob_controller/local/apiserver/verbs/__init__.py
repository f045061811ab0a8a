"""The REST verbs of the embedded API server, one module per verb group as kube-apiserver's ``endpoints/handlers/``:
``read.py`` (get, list, watch, a pod's log), ``write.py`` (create, update, patch, server-side apply, delete,
deletecollection), ``deletion.py`` (finalizers, grace and propagation), ``scale.py`` (the ``scale`` subresource:
an autoscaling/v1 Scale over the parent's replicas), ``paging.py`` (a list's pages and continue tokens, each page
cut from its first page's snapshot); ``base.py`` what they share.

Guarantees: ``rest.py``'s :class:`~mxjob_controller.local.apiserver.rest.REST` dispatches a request to its verb by
name; every write ends in one tail that validates, admits and writes with compare-and-swap, retried on a conflict
within its attempts; a verb does no socket I/O and answers every failure with the ``Status`` kube-apiserver sends.
"""

"""Tests of ``mxjob_controller/core/``: a file per module of pure decisions; ``reconciler/`` runs the reconcile end to
end."""

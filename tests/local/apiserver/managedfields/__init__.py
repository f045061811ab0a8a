"""Field ownership as structured-merge-diff computes it, as pure tables."""

"""Each kind's own rules: the resources served, pod log options."""

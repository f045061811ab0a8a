"""GenericJob (``batch.tensorstack.dev/v1beta1``): T9k's general-purpose job API on the generic core.

``api`` (names, validation, the typed view), ``variables`` (``$(…)`` substitution), ``wiring`` (a replica's pod),
``status_rules`` (finish rules and restarts), ``status`` (phase, conditions, tasks, aggregate), ``scheduler`` (the T9k
PodGroup), ``reconciler`` (the loop), ``framework`` (the adapter the core runs), ``crd``.
"""

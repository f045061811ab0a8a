"""The local scheduler: binds pods to the local node where their requests fit, in priority order, and acts as Volcano
and scheduler-plugins' coscheduling for gangs (``fit``: kube's fit rules; ``plan``: one pass's decisions;
``podgroups``: the PodGroup APIs; ``scheduler``: the informer-fed loop that acts on them)."""

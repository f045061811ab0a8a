"""The local scheduler: binds pods to the local node where their requests fit, in priority order, and acts as Volcano
and scheduler-plugins' coscheduling for gangs (``placement``: kube's fit rules and one pass's decisions, pure;
``queue``: kube-scheduler's scheduling queue, which pods a pass tries and when, pure; ``scheduler``: the PodGroup
APIs, and the informer-fed loop that acts on the decisions)."""

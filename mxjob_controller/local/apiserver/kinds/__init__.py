"""Each kind's own rules, as kube-apiserver's registry strategies hold them: defaults, server-set fields, what may
change on update, and subresources (a pod's binding, log and connect; a CRD serving its kinds; a CSR's approval).
``workloads.py`` and ``defaults.py`` hold the ``SetDefaults_*`` of the kinds served since issue 47 (one function
per kind where defaulting is the only rule), ``conversions.py`` the kinds served at two versions or groups from one
storage (HPA v1/v2, events.k8s.io), ``flowcontrol.py`` the FlowSchemas and priority levels flow control runs.

Guarantees: a kind without a strategy here gets the shared rules (``custom_resources.py`` over ``strategy.py``);
the built-in kinds the server serves are described once, in ``builtin.py`` at the package's root; a strategy is a
function of the objects and the write's context, and reaches the store only through the verbs that call it.
"""

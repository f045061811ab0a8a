"""The local kubelet: runs the pods of the embedded cluster as processes on this machine (see ``kubelet``).

Re-exports nothing, so that the modules inside import their siblings as modules without a circle through
``kubelet.py``; its public surface is ``kubelet.py``'s :class:`Kubelet` and ``options.py``'s :class:`KubeletOptions`.
"""

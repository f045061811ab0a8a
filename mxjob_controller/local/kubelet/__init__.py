"""The local kubelet: runs the pods of the embedded cluster as processes on this machine (see ``kubelet``)."""

from mxjob_controller.local.kubelet.kubelet import NODE_NAME, Kubelet, KubeletOptions

__all__ = ["NODE_NAME", "Kubelet", "KubeletOptions"]

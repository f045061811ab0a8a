"""The local kubelet on real processes, its sandbox, and their pure rules."""

"""The REST verbs: create, get, update, patch, delete with kube's semantics."""

"""Admission and conversion webhooks as kube-apiserver calls them."""

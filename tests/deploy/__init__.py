"""What ``manifests/`` ships: every overlay renders, its RBAC is least privilege and enough, the monitoring works with
the real tools."""

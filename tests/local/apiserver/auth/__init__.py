"""Authentication, impersonation and RBAC."""

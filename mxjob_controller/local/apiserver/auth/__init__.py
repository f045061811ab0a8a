"""Authentication, authorization and TLS of the embedded API server (``security.py`` assembles them)."""

from mxjob_controller.local.apiserver.auth.authorizer import ALWAYS_ALLOW, MODES, RBAC
from mxjob_controller.local.apiserver.auth.security import Security
from mxjob_controller.local.apiserver.auth.user import ADMIN, UserInfo

__all__ = ["ADMIN", "ALWAYS_ALLOW", "MODES", "RBAC", "Security", "UserInfo"]

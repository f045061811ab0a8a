"""API access: a thin, thread-safe client over the official ``kubernetes`` client's transport.

    config = load_config(kubeconfig=path)                # or in-cluster, or $KUBECONFIG, or ~/.kube/config
    client = Client(config, component="job-controller",  # one per process, shared by every thread
                    program="my-operator", version="1.2.0")  # the User-Agent: my-operator/1.2.0 (linux/amd64) ...
    pod = client.get(PODS, "p1", "default")              # plain dicts in and out
    page = client.list(PODS, "default", label_selector="app=x", limit=100)
    for event in client.watch(PODS, "default", resource_version=rv, timeout_seconds=300): ...

Errors are typed (``errors``): ``NotFound``, ``AlreadyExists``, ``Conflict``, ``Invalid`` (with ``causes``),
``Gone``/``Expired`` (410), ``TooManyRequests`` (``retry_after``), ``ServerError``... each carrying the Status.
"""

from mxjob_controller.runtime.client import errors
from mxjob_controller.runtime.client.api import Client, user_agent
from mxjob_controller.runtime.client.config import ClientConfig, ConfigError, FileToken, StaticToken
from mxjob_controller.runtime.client.errors import (
    AlreadyExists,
    ApiError,
    BadRequest,
    Cancelled,
    Conflict,
    Expired,
    Forbidden,
    Gone,
    InternalError,
    Invalid,
    KubeError,
    NotFound,
    RateLimitTimeout,
    ReadTimeout,
    ServerError,
    ServiceUnavailable,
    TooManyRequests,
    TransportError,
    Unauthorized,
)
from mxjob_controller.runtime.client.incluster import load_in_cluster
from mxjob_controller.runtime.client.kubeconfig import load_kubeconfig
from mxjob_controller.runtime.client.loading import load_config
from mxjob_controller.runtime.client.resource import (
    CONFIGMAPS,
    CRDS,
    EVENTS,
    LEASES,
    NAMESPACES,
    NODES,
    PODS,
    SECRETS,
    SERVICES,
    Resource,
)
from mxjob_controller.runtime.client.watch import WatchStream
from mxjob_controller.runtime.token_bucket import TokenBucket

__all__ = [
    "CONFIGMAPS", "CRDS", "EVENTS", "LEASES", "NAMESPACES", "NODES", "PODS", "SECRETS", "SERVICES",
    "AlreadyExists", "ApiError", "BadRequest", "Cancelled", "Client", "ClientConfig", "ConfigError", "Conflict",
    "Expired", "FileToken", "Forbidden", "Gone", "InternalError", "Invalid", "KubeError", "NotFound",
    "RateLimitTimeout", "ReadTimeout", "Resource", "ServerError", "ServiceUnavailable", "StaticToken",
    "TokenBucket", "TooManyRequests", "TransportError", "Unauthorized", "WatchStream", "errors", "load_config",
    "load_in_cluster", "load_kubeconfig", "user_agent",
]

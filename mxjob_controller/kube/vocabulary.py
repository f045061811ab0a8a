"""Kubernetes' own wire vocabulary, defined once for the client, the controllers and the local server.

Each string here is fixed by the Kubernetes API (not by this project), and more than one layer speaks it: the
reflector reads the watch event types the local server writes, the controllers read the pod phases the local
kubelet reports. One definition keeps the two sides from drifting apart.
"""

from __future__ import annotations

# --- watch event types (metav1.WatchEvent.type) ---------------------------------------------------------

ADDED, MODIFIED, DELETED, BOOKMARK, ERROR = "ADDED", "MODIFIED", "DELETED", "BOOKMARK", "ERROR"

# --- pod phases (core/v1 PodStatus.phase) ---------------------------------------------------------------

POD_PENDING, POD_RUNNING, POD_SUCCEEDED = "Pending", "Running", "Succeeded"
POD_FAILED, POD_UNKNOWN = "Failed", "Unknown"

# --- admission operations (admission.k8s.io AdmissionRequest.operation) ---------------------------------

CREATE, UPDATE, DELETE = "CREATE", "UPDATE", "DELETE"

# --- condition statuses (every API's Condition.status) --------------------------------------------------

TRUE, FALSE = "True", "False"

# --- media types ----------------------------------------------------------------------------------------

JSON_MEDIA_TYPE = "application/json"
PROTOBUF_MEDIA_TYPE = "application/vnd.kubernetes.protobuf"
TEXT_MEDIA_TYPE = "text/plain; charset=utf-8"  # Go's http.Error and the health checks

# --- API versions -----------------------------------------------------------------------------------------

META_V1 = "meta.k8s.io/v1"  # Table, PartialObjectMetadata, the *Options kinds

"""What kube-controller-manager puts in every namespace: the ``default`` ServiceAccount (the service-account
controller) and the ``kube-root-ca.crt`` ConfigMap with the cluster's CA in ``ca.crt`` (the root-ca-cert
publisher).

Like kube's controllers it works shortly after a namespace appears (including the namespaces made at start), puts
either object back when it is deleted, and resets the ConfigMap's data when it is changed; it leaves terminating
namespaces alone. A server without TLS has no CA, so it publishes no ``kube-root-ca.crt``. The work runs on the
thread ``apiserver-namespace-content``.
"""

from __future__ import annotations

import json
import logging

from mxjob_controller.local.apiserver import builtin
from mxjob_controller.local.apiserver.controllers.workqueue import QueueController
from mxjob_controller.local.apiserver.errors import StatusError
from mxjob_controller.local.apiserver.request import Request
from mxjob_controller.local.apiserver.rest import REST
from mxjob_controller.local.apiserver.storage.store import Store
from mxjob_controller.local.apiserver.storage.watch import DELETED, Event

log = logging.getLogger(__name__)

DEFAULT_SERVICE_ACCOUNT = "default"
ROOT_CA_CONFIGMAP = "kube-root-ca.crt"
_DESCRIPTION = ("Contains a CA bundle that can be used to verify the kube-apiserver when using internal endpoints "
                "such as the internal service IP or kubernetes.default.svc. No other usage is guaranteed across "
                "distributions of Kubernetes clusters.")


class NamespaceContent(QueueController[str]):
    def __init__(self, store: Store, rest: REST, ca_pem: str | None) -> None:
        self._store = store
        self._rest = rest
        self._ca_pem = ca_pem
        super().__init__("apiserver-namespace-content", store, self._sync)

    def _record(self, key: str, ev: Event) -> None:
        meta = ev.entry.obj.get("metadata") or {}
        if key == builtin.NAMESPACES.storage_key:
            if ev.type != DELETED and not meta.get("deletionTimestamp"):
                self._queue.add(meta.get("name") or "")
        elif key == builtin.SERVICEACCOUNTS.storage_key:
            if ev.type == DELETED and meta.get("name") == DEFAULT_SERVICE_ACCOUNT:
                self._queue.add(meta.get("namespace") or "")
        elif (key == builtin.CONFIGMAPS.storage_key and meta.get("name") == ROOT_CA_CONFIGMAP and self._ca_pem
              and (ev.type == DELETED or ev.entry.obj.get("data") != self._ca_data())):
            self._queue.add(meta.get("namespace") or "")

    def _ca_data(self) -> dict[str, str]:
        return {"ca.crt": self._ca_pem or ""}

    def _sync(self, namespace: str) -> None:
        ns = self._store.get(builtin.NAMESPACES.storage_key, ("", namespace))
        if ns is None or (ns.obj.get("metadata") or {}).get("deletionTimestamp"):
            return
        if self._store.get(builtin.SERVICEACCOUNTS.storage_key, (namespace, DEFAULT_SERVICE_ACCOUNT)) is None:
            self._write("create", builtin.SERVICEACCOUNTS, namespace, None, {
                "apiVersion": "v1", "kind": "ServiceAccount",
                "metadata": {"name": DEFAULT_SERVICE_ACCOUNT, "namespace": namespace}})
        if not self._ca_pem:
            return
        current = self._store.get(builtin.CONFIGMAPS.storage_key, (namespace, ROOT_CA_CONFIGMAP))
        if current is None:
            self._write("create", builtin.CONFIGMAPS, namespace, None, {
                "apiVersion": "v1", "kind": "ConfigMap",
                "metadata": {"name": ROOT_CA_CONFIGMAP, "namespace": namespace,
                             "annotations": {"kubernetes.io/description": _DESCRIPTION}},
                "data": self._ca_data()})
        elif current.obj.get("data") != self._ca_data() or current.obj.get("binaryData"):
            obj = {k: v for k, v in current.obj.items() if k != "binaryData"}
            obj["data"] = self._ca_data()
            self._write("update", builtin.CONFIGMAPS, namespace, ROOT_CA_CONFIGMAP, obj)

    def _write(self, verb: str, rt: builtin.ResourceType, namespace: str, name: str | None, obj: dict) -> None:
        try:
            self._rest.handle(Request(verb, rt, namespace=namespace, name=name, body=json.dumps(obj).encode(),
                                      content_type="application/json", user_agent="kube-controller-manager"))
        except StatusError as e:
            if e.code in (403, 404, 409):  # terminating or gone meanwhile, or made by someone else: next event
                log.debug("namespace content: %s %s in %s: %s", verb, rt.plural, namespace, e)
                return
            raise

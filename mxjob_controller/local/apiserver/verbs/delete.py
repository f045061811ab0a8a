"""The delete verbs: delete and deletecollection, answered as kube-apiserver answers them (the semantics of
finalizers, grace and propagation are in ``deletion.py``; ``endpoints/handlers/delete.go``)."""

from __future__ import annotations

from collections.abc import Callable, Sequence

from mxjob_controller.local.apiserver import errors
from mxjob_controller.local.apiserver.deletion import DeleteOptions, DeleteOutcome, parse_delete_options
from mxjob_controller.local.apiserver.errors import StatusError
from mxjob_controller.local.apiserver.request import Request, Response, dumps
from mxjob_controller.local.apiserver.verbs.base import VerbsBase, warning_header, with_warnings
from mxjob_controller.local.apiserver.webhooks.attributes import DELETE, AdmissionAttributes, delete_options


class DeleteVerbs(VerbsBase):
    def _delete_admission(self, req: Request, name: str, opts: DeleteOptions,
                          warnings: list[str]) -> Callable[[dict], None] | None:
        """What the deleter calls with the stored object just before it deletes it (kube's deleteValidation)."""
        hook = self.webhook_admission
        if hook is None or not hook.active():
            return None
        options = delete_options(opts.grace_period_seconds, opts.uid, opts.resource_version, opts.orphan_dependents,
                                 opts.propagation_policy, opts.dry_run)

        def admit(current: dict) -> None:
            attrs = AdmissionAttributes(DELETE, req.rt, "", name, self._admission_namespace(req, name), None,
                                        current, opts.dry_run, options, req.user)
            with_warnings(hook, attrs, warnings)

        return admit

    # --- read verbs -----------------------------------------------------------------------------------

    def _delete(self, req: Request) -> Response:
        if req.subresource:
            raise errors.method_not_allowed(f"delete is not supported on {req.rt.plural}/{req.subresource}")
        return self.delete_object(req, req.name or "", parse_delete_options(req.body, req.query))

    def delete_object(self, req: Request, name: str, opts: DeleteOptions) -> Response:
        """Delete one object of ``req.rt`` in ``req.namespace`` and answer as kube-apiserver does."""
        warnings: list[str] = []
        outcome = self.deleter.delete(req.rt, self._okey(req, name), opts,
                                      admit=self._delete_admission(req, name, opts, warnings))
        return self._delete_response(req, outcome, opts, warnings)

    def _delete_response(self, req: Request, outcome: DeleteOutcome, opts: DeleteOptions,
                         warnings: Sequence[str] = ()) -> Response:
        if outcome.as_object:
            resp = Response(outcome.code(opts), self._encode(req.rt, outcome.entry))
        else:
            meta = outcome.entry.obj.get("metadata") or {}
            status = errors.success_status(req.rt.resource, meta.get("name", ""), meta.get("uid", ""))
            resp = Response(outcome.code(opts), dumps(status))
        if warnings:
            resp.headers["Warning"] = warning_header(warnings)
        return resp

    def _deletecollection(self, req: Request) -> Response:
        """Delete every selected object; answers the list of them as they were before (kube's DeleteCollection)."""
        opts = parse_delete_options(req.body, req.query)
        match = self._matcher(req)
        items, rv = self.store.list(req.rt.storage_key, req.namespace if req.rt.namespaced else None)
        matched = [(okey, entry) for okey, entry in items if match(entry.obj)]
        # Served as listed, before anything is deleted (kube lists, converting, then deletes).
        served = self._served(req.rt, [entry for _, entry in matched], as_list=True)
        warnings: list[str] = []
        for okey, _ in matched:
            try:
                self.deleter.delete(req.rt, okey, opts, admit=self._delete_admission(req, okey[1], opts, warnings))
            except StatusError as e:
                if e.code != 404:
                    if warnings:
                        e.headers["Warning"] = warning_header(warnings)
                    raise
        head = dumps({"kind": req.rt.list_kind, "apiVersion": req.rt.api_version,
                      "metadata": {"resourceVersion": str(rv)}})
        resp = Response(200, head[:-1] + b',"items":[' + b",".join(e.raw for e in served) + b"]}")
        if warnings:
            resp.headers["Warning"] = warning_header(warnings)
        return resp


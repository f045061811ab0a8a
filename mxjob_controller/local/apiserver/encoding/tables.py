"""Server-side tables (``Accept: application/json;as=Table;v=v1;g=meta.k8s.io``): what ``kubectl get`` prints.

Three sources of columns, as in kube-apiserver:

- built-in kinds with a printer (pods, services, ...; ``printers.py``), always in wide form;
- custom resources: their version's ``additionalPrinterColumns`` (``Age`` when there are none), each a
  JSONPath evaluated on the object; ``date`` columns become ages, values of the wrong type empty cells;
- everything else: ``Name`` and ``Created At``.

Each row carries the object as ``includeObject`` asks: ``None`` (null), ``Metadata`` (the default: a
``PartialObjectMetadata``) or ``Object`` (the object as served at the requested version).
"""

from __future__ import annotations

import json
import time
from typing import Any

from mxjob_controller.kube.schema.compiler import OBJECT_META as _META
from mxjob_controller.kube.timefmt import parse_time, rfc3339
from mxjob_controller.kube.vocabulary import META_V1
from mxjob_controller.local.apiserver.encoding import jsonpath, more_printers, printers
from mxjob_controller.local.apiserver.encoding.gofmt import go_float
from mxjob_controller.local.apiserver.resources import ResourceType
from mxjob_controller.local.apiserver.storage.watch import Entry

_EXTRA_PRINTERS: dict[tuple[str, str], printers.Printer] = {}


def register_printer(group: str, kind: str, printer: printers.Printer) -> None:
    """kube's printer for a built-in kind the server defines itself (ValidatingWebhookConfiguration)."""
    _EXTRA_PRINTERS[(group, kind)] = printer


def convert(rt: ResourceType, entries: list[Entry], list_meta: dict | None, include_object: str,
            with_headers: bool) -> dict[str, Any]:
    """A ``meta.k8s.io/v1`` Table of ``entries`` (one object when ``list_meta`` is None)."""
    now = time.time()
    columns, row_fn = _columns_and_rows(rt)
    rows = []
    for entry in entries:
        cells, conditions = row_fn(entry.obj, now)
        row: dict[str, Any] = {"cells": cells}
        if conditions:
            row["conditions"] = conditions
        row["object"] = _row_object(rt, entry.obj, include_object)
        rows.append(row)
    meta = dict(list_meta) if list_meta is not None else \
        {"resourceVersion": str((entries[0].obj.get("metadata") or {}).get("resourceVersion", ""))} if entries else {}
    return {"kind": "Table", "apiVersion": META_V1, "metadata": meta,
            "columnDefinitions": [c.definition() for c in columns] if with_headers else None,
            "rows": rows}


def _columns_and_rows(rt: ResourceType) -> tuple[tuple[printers.Column, ...], printers.PrintFn]:
    if rt.is_custom:
        return _custom_columns(rt)
    printer = (_EXTRA_PRINTERS.get((rt.group, rt.kind)) or printers.printer_for(rt.group, rt.kind)
               or more_printers.printer_for(rt.group, rt.kind))
    if printer is not None:
        return printer.columns, printer.cells
    return _default_columns(), _default_row


def _default_columns() -> tuple[printers.Column, ...]:
    return (printers.name_column(), printers.Column("Created At", "date",
                                                     description=printers.doc(_META, "creationTimestamp")))


def _default_row(obj: dict, now: float) -> tuple[list, None]:
    meta = obj.get("metadata") or {}
    created = parse_time(meta.get("creationTimestamp"))
    stamp = rfc3339(created) if created is not None else "0001-01-01T00:00:00Z"
    return [meta.get("name", ""), stamp], None


# --- custom resources -----------------------------------------------------------------------------------

_DEFAULT_CR_COLUMNS = ({"name": "Age", "type": "date", "jsonPath": ".metadata.creationTimestamp"},)


def _custom_columns(rt: ResourceType) -> tuple[tuple[printers.Column, ...], printers.PrintFn]:
    specs = rt.printer_columns or _DEFAULT_CR_COLUMNS
    columns = [printers.name_column()]
    for spec in specs:
        path = spec.get("jsonPath", "")
        description = spec.get("description") or (
            printers.doc(_META, "creationTimestamp") if specs is _DEFAULT_CR_COLUMNS
            else f"Custom resource definition column (in JSONPath format): {path}")
        columns.append(printers.Column(spec.get("name", ""), spec.get("type", ""), spec.get("format", ""),
                                       description, int(spec.get("priority") or 0)))

    def row(obj: dict, now: float) -> tuple[list, None]:
        cells: list[Any] = [(obj.get("metadata") or {}).get("name", "")]
        for spec in specs:
            cells.append(_custom_cell(obj, spec.get("jsonPath", ""), spec.get("type", ""), now))
        return cells, None

    return tuple(columns), row


def _custom_cell(obj: dict, path: str, column_type: str, now: float) -> Any:
    """One printer-column cell: the first value the path reaches, shaped by the column's type."""
    try:
        found = jsonpath.find(obj, path)
    except jsonpath.JSONPathError:
        return None
    if not found:
        return None
    value = found[0]
    if column_type == "string":
        return _print_value(value)
    if value is None:
        return None
    if column_type == "integer":
        if isinstance(value, bool) or not isinstance(value, (int, float)):
            return None
        return int(value)
    if column_type == "number":
        if isinstance(value, bool) or not isinstance(value, (int, float)):
            return None
        return float(value)
    if column_type == "boolean":
        return value if isinstance(value, bool) else None
    if column_type == "date":
        if not isinstance(value, str):
            return None
        ts = parse_time(value)
        return "<invalid>" if ts is None else printers.human_duration(now - ts)
    return None


def _print_value(value: Any) -> str:
    """client-go jsonpath's text for a value: JSON for objects and arrays, Go's ``%v`` for the rest."""
    if isinstance(value, (dict, list)):
        text = json.dumps(value, separators=(",", ":"), sort_keys=True, ensure_ascii=False)
        return (text.replace("<", "\\u003c").replace(">", "\\u003e").replace("&", "\\u0026")
                .replace("\u2028", "\\u2028").replace("\u2029", "\\u2029"))
    if value is None:
        return "<no value>"
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, float):
        return go_float(value)
    return str(value)


# --- the row's object -----------------------------------------------------------------------------------

def _row_object(rt: ResourceType, obj: dict, include_object: str) -> dict | None:
    if include_object == "None":
        return None
    if include_object == "Object":
        if obj.get("apiVersion") == rt.api_version:
            return obj
        return {**obj, "apiVersion": rt.api_version}
    return {"kind": "PartialObjectMetadata", "apiVersion": META_V1, "metadata": obj.get("metadata") or {}}

"""ConfigMaps and Secrets: key syntax (``IsConfigMapKey``) and total size, as ``ValidateConfigMap``
and ``ValidateSecret`` check them."""

from __future__ import annotations

import base64
import binascii

from mxjob_controller.kube.field_errors import FieldError, child, invalid, key_child, too_long
from mxjob_controller.kube.schema.rules import rule
from mxjob_controller.kube.schema.rules.common import config_key_messages, each_message

CONFIG_MAP = "io.k8s.api.core.v1.ConfigMap"
SECRET = "io.k8s.api.core.v1.Secret"
MAX_SIZE = 1024 * 1024  # core.MaxSecretSize, shared by configmaps


@rule(CONFIG_MAP)
def config_map(cm: dict, path: str) -> list[FieldError]:
    errs: list[FieldError] = []
    data = cm.get("data") if type(cm.get("data")) is dict else {}
    binary = cm.get("binaryData") if type(cm.get("binaryData")) is dict else {}
    size = 0
    for key, value in data.items():
        where = key_child(child(path, "data"), key)
        errs.extend(each_message(where, key, config_key_messages(key)))
        if key in binary:
            errs.append(invalid(where, key, "duplicate of key present in binaryData"))
        size += len(value) if type(value) is str else 0
    for key, value in binary.items():
        errs.extend(each_message(key_child(child(path, "binaryData"), key), key, config_key_messages(key)))
        size += _decoded_len(value)
    if size > MAX_SIZE:
        errs.append(too_long(path, MAX_SIZE))
    return errs


@rule(SECRET)
def secret(s: dict, path: str) -> list[FieldError]:
    """``data`` and ``stringData`` keys (the API merges stringData into data, so both report as ``data``)."""
    errs: list[FieldError] = []
    data_path = child(path, "data")
    size = 0
    for field in ("data", "stringData"):
        values = s.get(field) if type(s.get(field)) is dict else {}
        for key, value in values.items():
            errs.extend(each_message(key_child(data_path, key), key, config_key_messages(key)))
            if field == "data":
                size += _decoded_len(value)
            elif type(value) is str:
                size += len(value)
    if size > MAX_SIZE:
        errs.append(too_long(data_path, MAX_SIZE))
    return errs


def _decoded_len(value: object) -> int:
    if type(value) is not str:
        return 0
    try:
        return len(base64.b64decode(value, validate=True))
    except (binascii.Error, ValueError):
        return 0

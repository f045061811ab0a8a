"""Kubernetes resource quantities (``resource.Quantity``) as the CRD schema and the validator check them."""

from __future__ import annotations

import re

#: What controller-gen puts on Quantity fields of CRDs: a plain number with an optional SI, binary or
#: exponent suffix ("2", "500m", "1.5Gi", "1e3").
QUANTITY_PATTERN = (r"^(\+|-)?(([0-9]+(\.[0-9]*)?)|(\.[0-9]+))(([KMGTPE]i)|[numkMGTPE]|"
                    r"([eE](\+|-)?(([0-9]+(\.[0-9]*)?)|(\.[0-9]+))))?$")
_QUANTITY = re.compile(QUANTITY_PATTERN)
QUANTITY_HINT = 'must be a quantity such as 2, "500m" or "4Gi"'


def is_quantity(value: object) -> bool:
    """True for an integer or a quantity string; what kube-apiserver accepts in a CRD's Quantity field."""
    if isinstance(value, bool):
        return False
    if isinstance(value, int):
        return True
    return isinstance(value, str) and bool(_QUANTITY.match(value))

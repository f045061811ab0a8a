"""Resource quantities print as Go prints them: apimachinery's own tables (``TestQuantityString`` alternates,
``TestQuantityParseEmit``), sums that keep the first term's format, and comparison by value."""

from __future__ import annotations

import pytest

from mxjob_controller.kube.quantity import QuantityError, canonical, normalized, parse, same

# (what a user may write, what Go's Quantity.String() prints): apimachinery's quantity_test.go
CANONICAL = [
    ("1024Mi", "1Gi"), ("307200Ki", "300Mi"), ("1025024Mi", "1001Gi"), ("1024Gi", "1Ti"), ("5000m", "5"),
    ("0.5", "500m"), ("1000M", "1G"), ("0.001T", "1G"), ("1000u", "1m"), ("1.08", "1080m"),
    ("1080000000n", "1080m"), (".001e12", "1e9"), ("0.001e0", "1e-3"), ("1000e-12", "1e-9"), ("00", "0"),
    ("1Ki", "1Ki"), ("1000M", "1G"), (".001Ki", "1024m"), (".000001Ki", "1024u"), (".000000001Ki", "1024n"),
    (".000000000001Ki", "2n"), ("1025", "1025"), ("6Ki", "6Ki"), ("1234567M", "1234567M"), ("-1024Mi", "-1Gi"),
    (3, "3"), ("+2k", "2k"),
]


@pytest.mark.parametrize(("text", "expected"), CANONICAL)
def test_canonical_form_is_gos(text: str | int, expected: str) -> None:
    assert canonical(parse(text)) == expected


@pytest.mark.parametrize(("terms", "expected"), [
    (["1", "500m"], "1500m"),            # decimal: the largest suffix keeping an integer mantissa
    (["1Gi", "512Mi"], "1536Mi"),        # binary stays binary
    (["100Mi", "1G"], "1104857600"),     # binary first, not a multiple of 1024: plain digits
    (["1G", "100Mi"], "1104857600"),
    (["0", "1Gi"], "1Gi"),               # a zero first takes the next term's format
    (["500m", "500m"], "1"),
    (["1e3", "1"], "1001"),
])
def test_sums_keep_the_first_terms_format(terms: list[str], expected: str) -> None:
    total = parse(terms[0])
    for term in terms[1:]:
        total = total + parse(term)
    assert str(total) == expected


def test_comparison_is_by_value() -> None:
    assert same("1000m", "1") and same("1Gi", "1024Mi") and same(2, "2")
    assert not same("1", "1001m")
    assert normalized("2000m") == "2" and normalized("not a quantity") == "not a quantity"


@pytest.mark.parametrize("text", ["", "1Gb", "1.2.3", "abc", "1K", True])
def test_what_is_not_a_quantity(text: object) -> None:
    with pytest.raises(QuantityError):
        parse(text)  # type: ignore[arg-type]

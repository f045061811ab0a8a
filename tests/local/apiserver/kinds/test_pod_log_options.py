"""``pods/log`` options decoded and validated as kube-apiserver does (issue 33): what does not decode is a 400 with
Go's own message, what decodes but is out of range a 422 ``PodLogOptions "<pod>" is invalid`` (checked before the
pod is looked up, so no kubelet is needed here)."""

from __future__ import annotations

import pytest

from tests.support import pod

LOG = "/api/v1/namespaces/default/pods/p/log"


def _cause(field: str, message: str) -> dict:
    return {"reason": "FieldValueInvalid", "message": message, "field": field}


@pytest.mark.parametrize(("query", "field", "message"), [
    ({"tailLines": "-1"}, "tailLines", "Invalid value: -1: must be greater than or equal to 0"),
    ({"limitBytes": "0"}, "limitBytes", "Invalid value: 0: must be greater than 0"),
    ({"sinceSeconds": "-1"}, "sinceSeconds", "Invalid value: -1: must be greater than 0"),
])
def test_out_of_range_options_are_422_naming_the_field(kube, query, field, message):
    reply = kube.get(LOG, **query)
    assert reply.status == 422, reply.body
    assert reply.body["reason"] == "Invalid"
    assert reply.body["message"] == f'PodLogOptions "p" is invalid: {field}: {message}'
    assert reply.body["details"] == {"name": "p", "kind": "PodLogOptions", "causes": [_cause(field, message)]}


def test_every_problem_is_listed_and_since_twice_is_forbidden(kube):
    reply = kube.get(LOG, tailLines="-2", limitBytes="-5", sinceSeconds="10", sinceTime="2026-01-01T00:00:00Z")
    assert reply.status == 422
    assert reply.body["message"] == (
        'PodLogOptions "p" is invalid: [tailLines: Invalid value: -2: must be greater than or equal to 0, '
        "limitBytes: Invalid value: -5: must be greater than 0, "
        "Forbidden: at most one of `sinceTime` or `sinceSeconds` may be specified]")
    assert [c["field"] for c in reply.body["details"]["causes"]] == ["tailLines", "limitBytes", ""]


@pytest.mark.parametrize(("query", "message"), [
    ({"tailLines": "ten"}, 'strconv.ParseInt: parsing "ten": invalid syntax'),
    ({"limitBytes": "1_000"}, 'strconv.ParseInt: parsing "1_000": invalid syntax'),
    ({"sinceSeconds": "99999999999999999999"}, 'strconv.ParseInt: parsing "99999999999999999999": value out of range'),
    ({"sinceTime": "garbage"},
     'parsing time "garbage" as "2006-01-02T15:04:05Z07:00": cannot parse "garbage" as "2006"'),
    ({"sinceTime": "2026-01-01 10:00:00Z"},
     'parsing time "2026-01-01 10:00:00Z" as "2006-01-02T15:04:05Z07:00": cannot parse " 10:00:00Z" as "T"'),
    ({"sinceTime": "2026-13-01T10:00:00Z"}, 'parsing time "2026-13-01T10:00:00Z": month out of range'),
    ({"sinceTime": "2026-02-30T10:00:00Z"}, 'parsing time "2026-02-30T10:00:00Z": day out of range'),
    ({"sinceTime": "2026-01-01T10:00:00"},
     'parsing time "2026-01-01T10:00:00" as "2006-01-02T15:04:05Z07:00": cannot parse "" as "Z07:00"'),
])
def test_options_that_do_not_decode_are_400_with_gos_message(kube, query, message):
    reply = kube.get(LOG, **query)
    assert reply.status == 400, reply.body
    assert (reply.body["reason"], reply.body["message"]) == ("BadRequest", message)


def test_valid_options_reach_the_pod(kube):
    # Checked first, the options are fine: then the pod is looked up (404), and an unbound pod has no log yet.
    assert kube.get(LOG, tailLines="0", sinceTime="2026-01-01T10:00:00.5+02:00").status == 404
    assert kube.post("/api/v1/namespaces/default/pods", pod("p")).status == 201
    for query in ({"previous": "maybe"}, {"timestamps": "true", "sinceSeconds": "5"}, {"sinceTime": ""}):
        reply = kube.request("GET", LOG, query=query)
        assert reply.status == 200, (query, reply.body)

"""Label and field selectors: apimachinery's grammar and matching, table-driven."""

import pytest

from mxjob_controller.kube.selectors import (
    SelectorError,
    format_labels,
    parse_field_selector,
    parse_label_selector,
    selector_from_label_selector,
)

LABELS = {"app": "web", "tier": "front", "env": "prod", "n": "5"}


@pytest.mark.parametrize(("text", "matches"), [
    ("", True),
    ("app=web", True),
    ("app==web", True),
    ("app=db", False),
    ("app!=db", True),
    ("app!=web", False),
    ("missing!=x", True),
    ("app in (web,db)", True),
    ("app in (db)", False),
    ("app notin (db, cache)", True),
    ("app notin (web)", False),
    ("missing notin (web)", True),
    ("app", True),
    ("missing", False),
    ("!missing", True),
    ("!app", False),
    ("app=web,tier=front", True),
    ("app=web,tier=back", False),
    ("app=web, env in (prod,staging), !canary", True),
    ("n>3", True),
    ("n<3", False),
    ("missing>3", False),
    ("app=", False),
    ("empty=", True),
])
def test_label_selector_matching(text, matches):
    labels = dict(LABELS, empty="")
    assert parse_label_selector(text).matches(labels) is matches


@pytest.mark.parametrize("text", [
    "app in web",          # in needs parentheses
    "app in ()",           # empty value set
    "=web",                # no key
    "app=web,",            # trailing comma
    "bad key=x",           # space inside a key
    "app=va lue",          # space inside a value
    "n>x",                 # gt needs an integer
    "-bad=x",              # key must start alphanumeric
    "app=" + "v" * 64,     # value too long
])
def test_label_selector_syntax_errors(text):
    with pytest.raises(SelectorError):
        parse_label_selector(text)


def test_label_selector_round_trips_through_str():
    text = "app=web,tier!=back,env in (prod,staging),!canary,team"
    sel = parse_label_selector(text)
    assert parse_label_selector(str(sel)) == sel


def test_metav1_label_selector():
    sel = selector_from_label_selector({"matchLabels": {"app": "web"},
                                        "matchExpressions": [{"key": "env", "operator": "In", "values": ["prod"]},
                                                             {"key": "canary", "operator": "DoesNotExist"}]})
    assert sel.matches({"app": "web", "env": "prod"})
    assert not sel.matches({"app": "web", "env": "prod", "canary": "1"})
    assert not selector_from_label_selector(None).matches({})
    assert selector_from_label_selector({}).matches({"anything": "x"})


def test_format_labels_is_sorted():
    assert format_labels({"b": "2", "a": "1"}) == "a=1,b=2"


@pytest.mark.parametrize(("text", "fields", "matches"), [
    ("metadata.name=x", {"metadata.name": "x"}, True),
    ("metadata.name==x", {"metadata.name": "x"}, True),
    ("metadata.name!=x", {"metadata.name": "x"}, False),
    ("status.phase=Running,spec.nodeName=n1", {"status.phase": "Running", "spec.nodeName": "n1"}, True),
    ("spec.nodeName=", {"spec.nodeName": ""}, True),
    (r"metadata.name=a\,b", {"metadata.name": "a,b"}, True),
])
def test_field_selector(text, fields, matches):
    assert parse_field_selector(text).matches(fields) is matches


def test_field_selector_syntax_error():
    with pytest.raises(SelectorError):
        parse_field_selector("metadata.name")

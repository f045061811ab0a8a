"""The flags' types (cli/flag_types.py): durations parsed as Go's ``time.ParseDuration`` does, with Go's message
for a bad one, and bind addresses read by the endpoints' own parser."""

from __future__ import annotations

import pytest

from mxjob_controller.cli import flag_types
from mxjob_controller.cli.flag_types import parse_go_duration


@pytest.mark.parametrize(("text", "seconds"), [
    ("0", 0.0), ("12h", 43200.0), ("1h30m", 5400.0), ("90s", 90.0), ("1.5h", 5400.0), ("500ms", 0.5),
    ("2h45m10.5s", 9910.5), ("+5m", 300.0), ("1us", 1e-6), ("1µs", 1e-6), (".5s", 0.5),
])
def test_durations_parse_as_go_does(text, seconds):
    assert parse_go_duration(text) == pytest.approx(seconds)


@pytest.mark.parametrize(("text", "message"), [
    ("30", 'time: missing unit in duration "30"'), ("", 'time: invalid duration ""'),
    ("5d", 'time: unknown unit "d" in duration "5d"'), ("h", 'time: invalid duration "h"'),
    ("1h-5m", 'time: unknown unit "h-" in duration "1h-5m"'),
])
def test_bad_durations_get_go_s_message(text, message):
    with pytest.raises(ValueError, match=message.replace("(", r"\(")):
        parse_go_duration(text)


def test_bind_address_type_reuses_the_endpoints_parser():
    assert flag_types.BindAddress().convert("[::1]:8080", None, None) == "[::1]:8080"


def test_go_s_one_dash_spelling_of_a_long_flag_becomes_two():
    known = {"--zap-log-level", "--leader-elect", "--kube-api-qps", "--help"}
    args = ["-zap-log-level=debug", "-leader-elect", "--kube-api-qps", "-1", "-h", "-help", "-nope", "--",
            "-leader-elect"]
    assert flag_types.go_flag_spellings(args, known) == [
        "--zap-log-level=debug", "--leader-elect", "--kube-api-qps", "-1", "-h", "--help", "-nope", "--",
        "-leader-elect"]

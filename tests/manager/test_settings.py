"""The run settings (manager/settings.py): the Lease namespace's fallback chain, in order (the flag, then
``$POD_NAMESPACE``, then the service account's namespace file, then ``default``), each source named."""

from __future__ import annotations

from pathlib import Path

from mxjob_controller.manager.settings import lease_namespace


def test_lease_namespace_falls_back_in_order(tmp_path: Path):
    sa = tmp_path / "sa"
    sa.mkdir()
    assert lease_namespace("flagged", {"POD_NAMESPACE": "pod-ns"}, str(sa)) == \
        ("flagged", "--leader-election-namespace")
    assert lease_namespace(None, {"POD_NAMESPACE": "pod-ns"}, str(sa)) == ("pod-ns", "$POD_NAMESPACE")
    assert lease_namespace(None, {}, str(sa)) == ("default", "the default")
    (sa / "namespace").write_text("from-sa\n")
    assert lease_namespace(None, {}, str(sa)) == ("from-sa", str(sa / "namespace"))
    assert lease_namespace(None, {"POD_NAMESPACE": " "}, str(sa))[0] == "from-sa"
    assert lease_namespace("", {"POD_NAMESPACE": "pod-ns"}, str(sa))[0] == "pod-ns"

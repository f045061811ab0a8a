"""A pod's own places on this machine (local/kubelet/pod_places.py): its /tmp and /var/tmp follow its name and
controller and go when released; what a killed cluster left behind is swept at the next start, and nothing else."""

from __future__ import annotations

import os
import stat

from mxjob_controller.local.kubelet.pod_places import PodPlaces, remove_tree, sweep_leftovers


def test_leftovers_of_gone_clusters_are_swept_and_nothing_else(tmp_path):
    names = ["mxjob-sandbox-111-a", "mxjob-local-logs-222-b", "mxjob-apiserver-tls-222-c", "mxjob-webhook-tls-333-d",
             "mxjob-sandbox-notapid-e", "mxjob-attack-222-f", "other-222-g"]
    for name in names:
        (tmp_path / name / "inner").mkdir(parents=True)
        (tmp_path / name / "inner").chmod(0)   # as a pod may leave it
    removed = sweep_leftovers(str(tmp_path), alive=lambda pid: pid == 111)
    assert sorted(removed) == ["mxjob-apiserver-tls-222-c", "mxjob-local-logs-222-b", "mxjob-webhook-tls-333-d"]
    assert sorted(p.name for p in tmp_path.iterdir()) == ["mxjob-attack-222-f", "mxjob-sandbox-111-a",
                                                          "mxjob-sandbox-notapid-e", "other-222-g"]


def test_a_pods_places_follow_its_name_and_controller_and_go_when_released(tmp_path):
    places = PodPlaces(tmp_path, root_user=True)
    bare = {"metadata": {"namespace": "ns", "name": "a", "uid": "1"}}
    replica = {"metadata": {"namespace": "ns", "name": "job-worker-0", "uid": "2",
                            "ownerReferences": [{"controller": True, "uid": "job", "kind": "MXJob", "name": "job"}]}}
    again = {"metadata": {**replica["metadata"], "uid": "3"}}   # recreated by its controller under its name
    stranger = {"metadata": {"namespace": "ns", "name": "job-worker-0", "uid": "4"}}   # same name, no controller
    (folder_a, block_a), (folder_r, block_r) = places.of(bare), places.of(replica)
    assert places.of(again) == (folder_r, block_r), "the recreated replica finds its predecessor's places"
    assert places.of(stranger)[0] not in (folder_a, folder_r)
    assert len({block_a, block_r, places.of(stranger)[1]}) == 3 and min(block_a, block_r) >= 1
    # What the sandbox's relay makes at the pod's first start: its folder, then /tmp's and /var/tmp's, as /tmp is.
    assert places.folders(folder_r) == [(str(folder_r), 0o700), (str(folder_r / "tmp"), 0o1777),
                                        (str(folder_r / "var-tmp"), 0o1777)]
    for folder in (folder_a, folder_r):
        for path, _mode in places.folders(folder):
            os.mkdir(path)
    assert places.host_path(again, "/tmp/mark") == folder_r / "tmp" / "mark"
    assert places.host_path(again, "/etc/passwd") is None
    places.release(lambda key: key[2] == "job")   # only the controller's pods may come back
    assert folder_r.exists() and not folder_a.exists() and places.host_path(bare, "/tmp/x") is None


def test_removing_a_tree_never_changes_the_folder_it_lies_in(tmp_path):
    """A tree already gone, or one a pod locked up inside, is removed without touching its parent's mode (CI's
    /tmp was made 0700 by the removal of a folder that was gone: every other user was locked out of it)."""
    parent = tmp_path / "shared"
    parent.mkdir()
    parent.chmod(0o1777)
    remove_tree(parent / "gone")
    assert stat.S_IMODE(parent.stat().st_mode) == 0o1777
    tree = parent / "places"
    (tree / "tmp" / "locked").mkdir(parents=True)
    (tree / "tmp" / "locked" / "file").write_text("x")
    (tree / "tmp" / "locked").chmod(0)
    (tree / "tmp").chmod(0)
    remove_tree(tree)
    assert not tree.exists()
    assert stat.S_IMODE(parent.stat().st_mode) == 0o1777

"""The pods' loopback addresses (local/kubelet/addresses.py): one per name for good, and the premise that this
machine routes all of 127.0.0.0/8 to the loopback."""

from __future__ import annotations

import socket

from mxjob_controller.local.kubelet.addresses import PodAddresses, loopback_range_usable


def test_each_name_gets_its_own_address_for_good():
    addresses = PodAddresses(enabled=True, first_block=254)
    first = [addresses.address("team", f"job-worker-{i}") for i in range(300)]
    assert len(set(first)) == 300, "no two names share an address"
    assert first[:2] == ["127.254.0.1", "127.254.0.2"] and first[254] == "127.254.1.1", "no .0 or .255 host"
    assert addresses.address("team", "job-worker-7") == first[7], "a name keeps its address"
    assert addresses.address("other", "job-worker-7") not in first, "the namespace is part of the name"
    wrapped = PodAddresses(enabled=True, first_block=254)._nth(254 * 256)
    assert wrapped == "127.1.0.1", "past a block, the next one (round to 1, never 127.0.x.x or 127.255.x.x)"
    assert PodAddresses(enabled=False).address("team", "job-worker-1") == "127.0.0.1"


def test_this_machine_routes_all_of_127_0_0_0_8_to_the_loopback():
    """The premise of the addresses above (Linux): a listener on one of them is reached there, and another
    listener on the same port but another address does not collide with it."""
    assert loopback_range_usable()
    with socket.create_server(("127.3.0.1", 0)) as first:
        port = first.getsockname()[1]
        with socket.create_server(("127.3.0.2", port)), socket.create_connection(("127.3.0.1", port), timeout=5):
            conn, _ = first.accept()
            conn.close()

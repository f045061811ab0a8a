"""Fixtures of the client's tests: ``peer_client``, a client of a scripted loopback peer (``peer``)."""

from tests.runtime.client.peer import peer_client

__all__ = ["peer_client"]

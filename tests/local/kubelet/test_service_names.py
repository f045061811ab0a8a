"""Service names resolved across container starts (``service_names.py``): an answer is kept until its Service's
next watch event, and one made while that Service changed is not kept."""

from __future__ import annotations

from mxjob_controller.local.kubelet.addresses import LOCAL_IP, PodAddresses
from mxjob_controller.local.kubelet.service_names import ServiceNames
from mxjob_controller.runtime.cache_keys import DeletedFinalStateUnknown
from mxjob_controller.runtime.cache_store import Indexer


def _service(name: str, selector: dict | None = None) -> dict:
    return {"metadata": {"namespace": "team", "name": name}, "spec": {"selector": selector} if selector else {}}


def test_an_answer_is_kept_until_its_service_changes():
    store, addresses = Indexer(), PodAddresses(enabled=True, first_block=254)
    names = ServiceNames(store, addresses)
    assert names.address("team", "job-worker-0", False) is None        # no Service yet: a bare word
    store.upsert(_service("job-worker-0", {"app": "x"}))
    assert names.address("team", "job-worker-0", False) is None        # kept: no event said it changed
    names.changed(_service("job-worker-0", {"app": "x"}))
    assert names.address("team", "job-worker-0", False) == addresses.address("team", "job-worker-0")
    store.upsert(_service("job-worker-0"))                              # its selector gone
    names.changed(_service("job-worker-0"))
    assert names.address("team", "job-worker-0", False) == LOCAL_IP
    store.delete("team/job-worker-0")
    names.changed(DeletedFinalStateUnknown("team/job-worker-0", _service("job-worker-0")))
    assert names.address("team", "job-worker-0", False) is None
    # The Services' own DNS form names a Service before it exists: its name's address.
    assert names.address("team", "job-worker-1", True) == addresses.address("team", "job-worker-1")
    assert len(names) == 2


def test_other_services_events_keep_an_answer():
    store = Indexer()
    store.upsert(_service("db"))
    names = ServiceNames(store, PodAddresses(enabled=False))
    assert names.address("team", "db", False) == LOCAL_IP
    names.changed(_service("other"))
    assert len(names) == 1


class _ChangingStore(Indexer):
    """A cache whose Service changes (and whose event is handled) while a lookup reads it."""

    def __init__(self, names_of: list[ServiceNames]) -> None:
        super().__init__()
        self._names_of = names_of

    def get(self, key: str) -> dict | None:
        found = super().get(key)
        self.upsert(_service("db", {"app": "db"}))
        self._names_of[0].changed(_service("db", {"app": "db"}))
        return found


def test_a_lookup_that_raced_with_its_services_event_keeps_nothing():
    holder: list[ServiceNames] = []
    store = _ChangingStore(holder)
    names = ServiceNames(store, PodAddresses(enabled=False))
    holder.append(names)
    assert names.address("team", "db", False) is None   # what the cache said when read
    assert len(names) == 0                               # ...but not kept: the next lookup reads the cache again

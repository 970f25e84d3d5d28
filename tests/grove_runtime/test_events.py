"""EventRecorder: Event shape, count aggregation for repeats, best-effort failure handling."""

from __future__ import annotations

from grove_runtime.client import KubeClient
from grove_runtime.clock import FakeClock
from grove_runtime.events import EventRecorder, involved_object

from .conftest import Fault, MiniApi

EVENTS = "api/v1/events"
PCS = {
    "apiVersion": "grove.io/v1alpha1",
    "kind": "PodCliqueSet",
    "metadata": {"name": "demo", "namespace": "ns", "uid": "u-1", "resourceVersion": "7"},
}


def events(api: MiniApi) -> list[dict[str, object]]:
    return [o for (c, _, _), o in api.objects.items() if c == EVENTS]


async def test_event_shape(mini_api: MiniApi, mini_client: KubeClient) -> None:
    """An Event carries involvedObject, type, reason, message, count and reporting component."""
    recorder = EventRecorder(mini_client, "grove-operator", instance="pod-0", clock=FakeClock())
    await recorder.normal(PCS, "Synced", "all components synced")
    [event] = events(mini_api)
    assert event["involvedObject"] == involved_object(PCS)
    assert event["involvedObject"]["uid"] == "u-1"  # type: ignore[index]
    assert (event["type"], event["reason"], event["message"], event["count"]) == (
        "Normal",
        "Synced",
        "all components synced",
        1,
    )
    assert event["reportingComponent"] == "grove-operator"
    assert event["source"] == {"component": "grove-operator", "host": "pod-0"}


async def test_repeats_aggregate_into_one_event(mini_api: MiniApi, mini_client: KubeClient) -> None:
    """The same reason and message again bumps count and lastTimestamp instead of creating an Event."""
    clock = FakeClock()
    recorder = EventRecorder(mini_client, "grove-operator", clock=clock)
    await recorder.warning(PCS, "Failed", "boom")
    clock.advance(60)
    await recorder.warning(PCS, "Failed", "boom")
    await recorder.warning(PCS, "Failed", "boom")
    await recorder.warning(PCS, "Failed", "different")
    evs = sorted(events(mini_api), key=lambda e: str(e["message"]))
    assert [(e["message"], e["count"]) for e in evs] == [("boom", 3), ("different", 1)]
    assert evs[0]["lastTimestamp"] != evs[0]["firstTimestamp"]


async def test_failures_are_swallowed_and_deleted_events_recreated(mini_api: MiniApi, mini_client: KubeClient) -> None:
    """A rejected Event does not raise; a repeat of an Event deleted meanwhile starts a fresh one."""
    recorder = EventRecorder(mini_client, "c", clock=FakeClock())
    mini_api.faults.append(Fault(403, "POST"))
    await recorder.normal(PCS, "R", "m")
    assert events(mini_api) == []
    await recorder.normal(PCS, "R", "m")
    [event] = events(mini_api)
    mini_api.remove(EVENTS, "ns", str(event["metadata"]["name"]))  # type: ignore[index]
    await recorder.normal(PCS, "R", "m")
    await recorder.normal(PCS, "R", "m")
    assert [e["count"] for e in events(mini_api)] == [2]


async def test_recorders_in_separate_processes_never_collide(mini_api: MiniApi, mini_client: KubeClient) -> None:
    """Two recorders at the same instant (e.g. operator and scheduler, both starting their sequence at 0) write
    distinct Events about the same object instead of failing with AlreadyExists."""
    clock = FakeClock()
    first = EventRecorder(mini_client, "grove-operator", clock=clock)
    second = EventRecorder(mini_client, "grove-scheduler", clock=clock)
    await first.normal(PCS, "Synced", "operator saw it")
    await second.normal(PCS, "Scheduled", "scheduler saw it")
    assert sorted(str(e["reason"]) for e in events(mini_api)) == ["Scheduled", "Synced"]
    assert len({str(e["metadata"]["name"]) for e in events(mini_api)}) == 2  # type: ignore[index]


async def test_a_name_taken_by_another_recorder_is_retried(mini_api: MiniApi, mini_client: KubeClient) -> None:
    """If another writer took the generated name, the recorder draws a new token and still records the Event."""
    clock = FakeClock()
    recorder = EventRecorder(mini_client, "grove-operator", clock=clock)
    twin = EventRecorder(mini_client, "grove-scheduler", clock=clock)
    twin._token = recorder._token  # the unlikely case: both drew the same random token
    await twin.normal(PCS, "Scheduled", "first")
    await recorder.normal(PCS, "Synced", "second")
    assert sorted(str(e["message"]) for e in events(mini_api)) == ["first", "second"]


async def test_spam_filter_drops_events_beyond_the_burst_per_object(mini_api: MiniApi, mini_client: KubeClient) -> None:
    """Like client-go: 25 Events about one object, then one per five minutes; other objects are not affected."""
    clock = FakeClock()
    recorder = EventRecorder(mini_client, "grove-operator", clock=clock)
    for i in range(30):
        await recorder.normal(PCS, "PodCliqueCreated", f"Created PodClique demo-{i}")
    assert len(events(mini_api)) == 25
    other = {**PCS, "metadata": {**PCS["metadata"], "name": "other", "uid": "u-2"}}  # type: ignore[dict-item]
    await recorder.normal(other, "PodCliqueCreated", "Created PodClique other-0")
    assert len(events(mini_api)) == 26
    clock.advance(300)
    await recorder.normal(PCS, "PodCliqueCreated", "Created PodClique demo-30")
    await recorder.normal(PCS, "PodCliqueCreated", "Created PodClique demo-31")
    messages = {str(e["message"]) for e in events(mini_api)}
    assert "Created PodClique demo-30" in messages
    assert "Created PodClique demo-31" not in messages


async def test_spam_filter_can_be_turned_off(mini_api: MiniApi, mini_client: KubeClient) -> None:
    """With spam_burst=None every Event is written."""
    recorder = EventRecorder(mini_client, "grove-operator", clock=FakeClock(), spam_burst=None)
    for i in range(30):
        await recorder.normal(PCS, "PodCliqueCreated", f"Created PodClique demo-{i}")
    assert len(events(mini_api)) == 30

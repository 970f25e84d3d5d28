"""The scheduler's Events: one Scheduled Event per gang, naming every pod's node, within an Event's size."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from hypothesis import given
from hypothesis import strategies as st

from grove_sched.events import GangEvents, assigned_message


class Sink:
    """Records what would be written."""

    def __init__(self) -> None:
        self.written: list[tuple[str, str, str, str]] = []

    async def normal(self, obj: Mapping[str, Any], reason: str, message: str) -> None:
        self.written.append((str(obj.get("kind")), str(obj["metadata"]["name"]), reason, message))

    async def warning(self, obj: Mapping[str, Any], reason: str, message: str) -> None:
        self.written.append((str(obj.get("kind")), str(obj["metadata"]["name"]), reason, message))


def _pod(name: str) -> dict[str, Any]:
    return {"metadata": {"name": name, "namespace": "ns"}}


async def test_a_gang_gets_one_event_on_its_podgang() -> None:
    """Four bound pods of a PodGang: one Event on the PodGang that says where each pod went, none on the pods."""
    sink = Sink()
    podgang = {"metadata": {"name": "g", "namespace": "ns"}}
    pods = {f"g-{i}": _pod(f"g-{i}") for i in range(4)}
    await GangEvents(sink).scheduled(podgang, pods, {"g-0": "n1", "g-1": "n1", "g-2": "n2", "g-3": "n2"})
    assert sink.written == [
        (
            "PodGang",
            "g",
            "Scheduled",
            "Successfully assigned ns/g's 4 pod(s) to 2 node(s): n1 (g-0, g-1), n2 (g-2, g-3)",
        )
    ]


async def test_a_pod_without_a_podgang_gets_kube_scheduler_s_event() -> None:
    """A gang of one pod has no PodGang: the Event goes on the pod, worded as kube-scheduler words it."""
    sink = Sink()
    await GangEvents(sink).scheduled(None, {"p": _pod("p")}, {"p": "n1"})
    assert sink.written == [("Pod", "p", "Scheduled", "Successfully assigned ns/p to n1")]


@given(
    st.dictionaries(
        st.text("abcdefgh-", min_size=1, max_size=30),
        st.sampled_from([f"node-{i}" for i in range(60)]),
        max_size=400,
    ),
    st.sampled_from([1, 3, 60]),
)
def test_the_message_fits_an_event_and_says_what_it_left_out(assignments: dict[str, str], nodes_used: int) -> None:
    """However large the gang, the message stays within 1,024 characters and either names every node or says
    how many nodes (or, for one long node, pods) it left out."""
    assignments = {pod: f"node-{int(node[5:]) % nodes_used}" for pod, node in assignments.items()}
    message = assigned_message("ns/g", assignments)
    assert len(message) <= 1024
    nodes = set(assignments.values())
    named = {node for node in nodes if f"{node} (" in message}
    if named != nodes:
        assert message.endswith(f"and {len(nodes) - len(named)} more node(s)") or " more)" in message
    for pod in assignments:
        assert pod in message or "more" in message


async def test_events_are_reported_as_the_scheduler_name_the_object_addressed() -> None:
    """Serving several names: a kai-scheduler pod and PodGang get their Events from `kai-scheduler`, the rest
    from the first name."""
    grove, kai = Sink(), Sink()
    events = GangEvents(grove, {"grove-scheduler": grove, "kai-scheduler": kai})
    podgang = {"metadata": {"name": "g", "namespace": "ns", "labels": {"grove.io/scheduler-name": "kai-scheduler"}}}
    kai_pod = {"metadata": {"name": "k", "namespace": "ns"}, "spec": {"schedulerName": "kai-scheduler"}}
    await events.failed(podgang, [kai_pod, _pod("other")], ["no room"])
    assert sorted(name for _, name, _, _ in kai.written) == ["g", "k"]
    assert [name for _, name, _, _ in grove.written] == ["other"]

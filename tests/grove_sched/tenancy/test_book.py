"""The queue book and the scheduling queue's rank: which queue a gang is in, what bound pods count for, admission
reasons, and gangs of the queue furthest below its fair share popped first (priority and age within a rank)."""

from __future__ import annotations

import asyncio

from hypothesis import given, settings
from hypothesis import strategies as st

from grove_runtime.clock import FakeClock
from grove_sched.gangs import GangKey, ReadyGang
from grove_sched.model import CPU, GPU, BoundPod, GangRequest, NodeInfo, PodGroup, PodRef
from grove_sched.placement import Snapshot
from grove_sched.queue import SchedulingQueue
from grove_sched.tenancy import QueueBook, QueueGate, queue_of

QUEUE = "kai.scheduler/queue"


def queue_obj(name: str, quota: float, limit: float = -1, parent: str | None = None) -> dict[str, object]:
    spec: dict[str, object] = {"resources": {"gpu": {"quota": quota, "limit": limit, "overQuotaWeight": 1}}}
    if parent:
        spec["parentQueue"] = parent
    return {"metadata": {"name": name}, "spec": spec}


def gang(name: str, team: str | None, gpus: int) -> ReadyGang:
    labels = {QUEUE: team} if team else {}
    group = PodGroup("w", (PodRef(f"{name}-0"),), 1, {GPU: gpus, CPU: 1000})
    pods = {f"{name}-0": {"metadata": {"name": f"{name}-0", "labels": labels}}}
    return ReadyGang(GangKey("default", name), GangRequest(name, "default", (group,)), pods, {}, 1)


def snapshot(held: dict[str, int]) -> Snapshot:
    nodes = [NodeInfo(f"n{i}", {}, {GPU: 8, CPU: 64000}) for i in range(4)]
    pods = [
        BoundPod(f"{team}-{i}", "default", f"n{i}", {QUEUE: team, "grove.io/podgang": f"{team}-g{i}"}, {GPU: gpus})
        for i, (team, gpus) in enumerate(held.items())
    ]
    return Snapshot.build(nodes, pods)


def test_queue_label_of_the_podgang_then_of_a_pod_then_the_default() -> None:
    pod = {"metadata": {"labels": {QUEUE: "from-pod"}}}
    assert queue_of({"metadata": {"labels": {QUEUE: "from-gang"}}}, [pod], "d") == "from-gang"
    assert queue_of({"metadata": {}}, [{"metadata": {}}, pod], "d") == "from-pod"
    assert queue_of(None, [{"metadata": {}}], "d") == "d"


def test_without_queues_every_gang_is_admitted_and_ranked_alike() -> None:
    gate = QueueGate(QueueBook())
    assert gate.admit(gang("g", "nowhere", 8), None, snapshot({})) is None
    assert gate.rank(GangKey("default", "g")) == 0.0


def test_unknown_queue_default_queue_and_parent_limit() -> None:
    book = QueueBook("default-queue")
    gate = QueueGate(book)
    book.set_queue(queue_obj("org", 0, limit=12))
    book.set_queue(queue_obj("team", 0, parent="org"))
    book.set_queue(queue_obj("default-queue", 0))
    refused = gate.admit(gang("g", "ghost", 8), None, snapshot({}))
    assert refused is not None
    assert "queue 'ghost' does not exist" in refused.message
    assert gate.admit(gang("h", None, 8), None, snapshot({})) is None  # default-queue
    refused = gate.admit(gang("t", "team", 8), None, snapshot({"team": 8}))
    assert refused is not None
    assert "queue 'org' would exceed its gpu limit 12" in refused.message
    figures = book.figures()
    assert figures.allocated["org"][0] == 8  # the child's pods count for its parent
    assert figures.pending_gangs == {"ghost": 1, "default-queue": 1, "team": 1}


async def test_the_queue_furthest_below_its_fair_share_pops_first() -> None:
    book = QueueBook()
    gate = QueueGate(book)
    book.set_queue(queue_obj("a", 16))
    book.set_queue(queue_obj("b", 16))
    snap = snapshot({"a": 8})  # a holds 8 of its 16, b nothing
    queue: SchedulingQueue[GangKey] = SchedulingQueue(clock=FakeClock(), rank=gate.rank, ranked=lambda: book.active)
    for name, team, priority in (("a-old", "a", 5), ("b-new", "b", 0), ("b-newer", "b", 1)):
        gate.admit(gang(name, team, 8), None, snap)
        queue.add(GangKey("default", name), priority)
        await asyncio.sleep(0)
    popped = [(await queue.pop()).name for _ in range(3)]
    assert popped == ["b-newer", "b-new", "a-old"]  # b's distance 0 < a's 0.5; priority within b


@settings(max_examples=60, deadline=None)
@given(st.lists(st.tuples(st.booleans(), st.integers(0, 3), st.integers(0, 8)), max_size=25))
def test_incremental_counts_equal_a_recount_along_a_snapshot_lineage(steps) -> None:
    """Pods added (`with_assumed`) and removed (`without`) in any order: the book's counts equal a fresh count."""
    book = QueueBook()
    for team in ("a", "b"):
        book.set_queue(queue_obj(team, 8))
    snap = snapshot({"a": 4, "b": 2})
    serial = 0
    for add_pod, node, gpus in steps:
        live = snap.live_pods
        if add_pod or not live:
            team = "a" if gpus % 2 else "b"
            labels = {QUEUE: team, "grove.io/podgang": f"x{serial}"}
            snap = snap.with_assumed([BoundPod(f"x{serial}", "default", f"n{node}", labels, {GPU: gpus})])
            serial += 1
        else:
            gone = live[node % len(live)]
            snap = snap.without([f"{gone.namespace}/{gone.name}"])
        book.observe(snap)
        fresh = QueueBook()
        for team in ("a", "b"):
            fresh.set_queue(queue_obj(team, 8))
        fresh.observe(snap)
        assert book.figures().allocated == fresh.figures().allocated

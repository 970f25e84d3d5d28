"""PodGang status: phase, the Scheduled condition and placementScore, merged without fighting `Initialized`."""

from __future__ import annotations

import datetime as dt
from typing import Any

from hypothesis import given
from hypothesis import strategies as st

from grove_runtime import errors
from grove_runtime.clock import FakeClock
from grove_runtime.keys import ObjectKey
from grove_sched.podgang_status import (
    PodGangStatusReconciler,
    ScheduledState,
    StatusBook,
    compute_phase,
    status_patch,
)

from .kit import pod, podgang

NOW = dt.datetime(2026, 5, 1, 12, 0, tzinfo=dt.UTC)
INIT = {
    "type": "Initialized",
    "status": "True",
    "reason": "PodGangPodsCreated",
    "message": "",
    "lastTransitionTime": "2026-05-01T11:00:00Z",
}
OK = ScheduledState(True, "Scheduled", "placed 2 pods", 0.9)


def apply(obj: dict[str, Any], patch: dict[str, Any] | None) -> dict[str, Any]:
    """Apply a status merge patch the way the API server would (lists replaced wholesale)."""
    if patch is None:
        return obj
    status = dict(obj.get("status") or {})
    status.update(patch["status"])
    return {**obj, "status": status}


def test_scheduled_condition_keeps_initialized() -> None:
    """Writing Scheduled keeps the operator's Initialized condition, unchanged and in place."""
    pg = podgang("g", {"x": (["a"], 1)}, status={"phase": "Pending", "conditions": [INIT]})
    patch = status_patch(pg, "Starting", OK, NOW)
    assert patch is not None
    conds = patch["status"]["conditions"]
    assert conds[0] == INIT
    assert conds[1]["type"] == "Scheduled"
    assert conds[1]["status"] == "True"
    assert patch["status"]["placementScore"] == 0.9
    assert patch["status"]["phase"] == "Starting"
    assert "resourceVersion" not in str(patch)


def test_no_patch_when_status_already_matches() -> None:
    """A second reconcile after our write is a no-op."""
    pg = podgang("g", {"x": (["a"], 1)}, status={"phase": "Pending", "conditions": [INIT]})
    written = apply(pg, status_patch(pg, "Starting", OK, NOW))
    assert status_patch(written, "Starting", OK, NOW + dt.timedelta(minutes=1)) is None


def test_reapplied_after_operator_wipes_conditions() -> None:
    """The operator's one-element merge patch drops our condition; the next patch restores it beside Initialized."""
    pg = podgang("g", {"x": (["a"], 1)}, status={"phase": "Pending", "conditions": [INIT]})
    ours = apply(pg, status_patch(pg, "Starting", OK, NOW))
    operator = {**ours, "status": {**ours["status"], "phase": "Pending", "conditions": [INIT]}}
    patch = status_patch(operator, "Starting", OK, NOW)
    assert patch is not None
    assert [c["type"] for c in patch["status"]["conditions"]] == ["Initialized", "Scheduled"]
    assert patch["status"]["phase"] == "Starting"


def test_transition_time_changes_only_with_status() -> None:
    """lastTransitionTime stays when only the message changes and moves when the status flips."""
    pg = podgang("g", {"x": (["a"], 1)}, status={"phase": "Pending", "conditions": [INIT]})
    bad = apply(pg, status_patch(pg, "Pending", ScheduledState(False, "Unschedulable", "no room"), NOW))
    later = NOW + dt.timedelta(minutes=5)
    worse = apply(bad, status_patch(bad, "Pending", ScheduledState(False, "Unschedulable", "still none"), later))
    cond = worse["status"]["conditions"][1]
    assert cond["message"] == "still none"
    assert cond["lastTransitionTime"] == "2026-05-01T12:00:00Z"
    good = apply(worse, status_patch(worse, "Starting", OK, later))
    assert good["status"]["conditions"][1]["lastTransitionTime"] == "2026-05-01T12:05:00Z"


def test_without_verdict_only_phase_is_written() -> None:
    """With no verdict recorded (e.g. after a restart) the found conditions are left exactly as they are."""
    pg = podgang("g", {"x": (["a"], 1)}, status={"phase": "Pending", "conditions": [INIT]})
    assert status_patch(pg, "Running", None, NOW) == {"status": {"phase": "Running"}}


def test_phase_follows_pods() -> None:
    """Pending until every group's minimum is bound, Starting until those run, then Running."""
    pg = podgang("g", {"x": (["a", "b"], 2), "y": (["c"], 1)})
    pods = {"a": pod("a", node_name="n"), "b": pod("b"), "c": pod("c", node_name="n")}
    assert compute_phase(pg, pods) == "Pending"
    pods["b"] = pod("b", node_name="n")
    assert compute_phase(pg, pods) == "Starting"
    pods = {n: pod(n, node_name="n", phase="Running") for n in "abc"}
    assert compute_phase(pg, pods) == "Running"


def test_book_keeps_score_on_rescheduled_verdict() -> None:
    """A later scheduled verdict without a score keeps the last score."""
    book = StatusBook()
    key = ObjectKey("default", "g")
    book.record(key, OK)
    book.record(key, ScheduledState(True, "Scheduled", "again"))
    state = book.get(key)
    assert state is not None
    assert state.score == 0.9


conditions = st.lists(
    st.sampled_from(["Initialized", "Ready", "Unhealthy", "DisruptionTarget", "Scheduled"]), unique=True
).map(lambda types: [{**INIT, "type": t} for t in types])


@given(conditions, st.booleans())
def test_foreign_conditions_survive_any_merge(found: list[dict[str, Any]], scheduled: bool) -> None:
    """Every condition that is not Scheduled comes out of the merge unchanged and in its order."""
    pg = podgang("g", {"x": (["a"], 1)}, status={"phase": "Pending", "conditions": found})
    state = OK if scheduled else ScheduledState(False, "Unschedulable", "no")
    result = apply(pg, status_patch(pg, "Pending", state, NOW))
    merged = result["status"]["conditions"]
    assert [c for c in merged if c["type"] != "Scheduled"] == [c for c in found if c["type"] != "Scheduled"]
    assert sum(1 for c in merged if c["type"] == "Scheduled") == 1


class StatusServer:
    """The one client call the status reconciler makes: applies the merge patch to `obj`, bumping its version."""

    def __init__(self, obj: dict[str, Any]) -> None:
        self.obj = obj
        self.patches: list[dict[str, Any]] = []

    async def patch(self, rt: Any, name: str, body: dict[str, Any], namespace: str = "", **kw: Any) -> dict[str, Any]:
        self.patches.append(body)
        pinned = (body.get("metadata") or {}).get("resourceVersion")
        if pinned is not None and pinned != self.obj["metadata"]["resourceVersion"]:
            raise errors.Conflict("stale resourceVersion")
        self.obj = apply(self.obj, body)
        self.obj["metadata"] = {
            **self.obj["metadata"],
            "resourceVersion": str(int(self.obj["metadata"]["resourceVersion"]) + 1),
        }
        return self.obj


async def test_stale_cache_neither_resends_nor_conflicts() -> None:
    """Until the informer shows our write, reconciles build on the server's answer: no repeat, no 409."""
    cached = podgang("g", {"x": (["a"], 1)}, status={"phase": "Pending", "conditions": [INIT]})
    cached["metadata"]["resourceVersion"] = "5"
    key = ObjectKey("default", "g")
    book = StatusBook()
    server = StatusServer(cached)
    pods = {"a": pod("a")}
    reconciler = PodGangStatusReconciler(
        server,  # type: ignore[arg-type]
        book,
        lambda _key: cached,  # the informer never catches up in this test
        lambda _pg: pods,
        "grove-scheduler",
        FakeClock(),
    )
    await reconciler.reconcile(key)  # nothing to write yet
    assert server.patches == []
    pods["a"] = pod("a", node_name="n1")
    await reconciler.reconcile(key)  # phase Starting: still moving, waits
    book.record(key, OK)
    await reconciler.reconcile(key)  # scheduled, not yet Running: waits
    pods["a"] = pod("a", node_name="n1", phase="Running")
    await reconciler.reconcile(key)  # settled: phase, condition and score in one write
    await reconciler.reconcile(key)  # nothing new
    book.record(key, ScheduledState(True, "Scheduled", "again", 0.5))
    await reconciler.reconcile(key)  # a settled change is written at once, pinned to our write's version
    assert [sorted(p["status"]) for p in server.patches] == [
        ["conditions", "phase", "placementScore"],
        ["conditions", "phase", "placementScore"],
    ]
    assert server.obj["status"]["phase"] == "Running"
    assert [c["type"] for c in server.obj["status"]["conditions"]] == ["Initialized", "Scheduled"]


def _settling(
    pods: dict[str, dict[str, Any]], clock: FakeClock
) -> tuple[ObjectKey, StatusBook, StatusServer, PodGangStatusReconciler]:
    """A Pending one-pod PodGang (with the operator's condition) and a reconciler that lets statuses settle 2 s."""
    cached = podgang("g", {"x": (["a"], 1)}, status={"phase": "Pending", "conditions": [INIT]})
    cached["metadata"]["resourceVersion"] = "5"
    book = StatusBook()
    server = StatusServer(cached)
    reconciler = PodGangStatusReconciler(
        server,  # type: ignore[arg-type]
        book,
        lambda _key: server.obj,
        lambda _pg: pods,
        "grove-scheduler",
        clock,
        settle=2.0,
    )
    return ObjectKey("default", "g"), book, server, reconciler


async def test_a_moving_status_is_written_once_it_settles_or_the_wait_ends() -> None:
    """A scheduled gang whose pods are not Running yet waits `settle` seconds (fake clock) for them, then its
    status is written as it stands; a failed verdict is written at once."""
    clock = FakeClock()
    key, book, server, reconciler = _settling({"a": pod("a", node_name="n1")}, clock)
    book.record(key, OK)
    first = await reconciler.reconcile(key)
    assert server.patches == []
    assert first.requeue_after == 2.0
    clock.advance(1.5)
    assert (await reconciler.reconcile(key)).requeue_after == 0.5
    clock.advance(0.5)
    await reconciler.reconcile(key)
    assert server.obj["status"]["phase"] == "Starting"
    assert len(server.patches) == 1
    book.record(key, ScheduledState(False, "Unschedulable", "no room"))
    await reconciler.reconcile(key)
    assert len(server.patches) == 2


async def test_pods_running_before_their_verdict_wait_for_it() -> None:
    """The binds' pod events can arrive before the verdict that follows them: a gang already Running without a
    verdict waits for it (fake clock, no time passes), so its status is written once, with phase, condition and
    score together. The old rule took Running as settled and wrote the phase alone, then the verdict."""
    key, book, server, reconciler = _settling({"a": pod("a", node_name="n1", phase="Running")}, FakeClock())
    assert (await reconciler.reconcile(key)).requeue_after == 2.0
    assert server.patches == []
    book.record(key, OK)
    await reconciler.reconcile(key)
    assert [sorted(p["status"]) for p in server.patches] == [["conditions", "phase", "placementScore"]]
    assert server.obj["status"]["phase"] == "Running"

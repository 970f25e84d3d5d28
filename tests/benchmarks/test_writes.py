"""The e2e benchmark's write counter: each observed change is attributed to the right verb and writer."""

from __future__ import annotations

from typing import Any

from benchmarks.e2e.writes import WriteCounter, classify, per_bound_pod


def _pod(node: str | None = None, gates: int = 0, phase: str = "Pending") -> dict[str, Any]:
    spec: dict[str, Any] = {"schedulingGates": [{"name": f"g{i}"} for i in range(gates)]}
    if node:
        spec["nodeName"] = node
    return {"metadata": {"name": "p"}, "spec": spec, "status": {"phase": phase}}


def _gang(phase: str | None, conditions: list[str], score: float | None = None) -> dict[str, Any]:
    status: dict[str, Any] = {"conditions": [{"type": c, "status": "True"} for c in conditions]}
    if phase:
        status["phase"] = phase
    if score is not None:
        status["placementScore"] = score
    return {"metadata": {"name": "g"}, "spec": {}, "status": status}


def test_pod_writes_are_told_apart() -> None:
    """Bind, gate removal and status are the scheduler's, the operator's and the kubelet's."""
    assert classify("pods", "update", _pod(), _pod("n1")) == ("pods/binding", "scheduler")
    assert classify("pods", "update", _pod(gates=1), _pod()) == ("pods update (scheduling gate removed)", "operator")
    assert classify("pods", "update", _pod("n1"), _pod("n1", phase="Running")) == ("pods/status", "kubelet")
    assert classify("pods", "create", None, _pod()) == ("pods create", "operator")


def test_podgang_status_writes_go_to_their_owner() -> None:
    """Initialized and phase Pending are the operator's; Scheduled, the score and later phases the scheduler's."""
    assert classify("podgangs", "update", _gang(None, []), _gang("Pending", ["Initialized"]))[1] == "operator"
    before = _gang("Pending", ["Initialized"])
    after = _gang("Running", ["Initialized", "Scheduled"], 1.0)
    assert classify("podgangs", "update", before, after) == ("podgangs/status", "scheduler")


def test_events_name_their_writer_and_per_pod_figures_add_up() -> None:
    """An Event's source names its writer; the scheduler's part is binds, kubelet status and its own writes."""
    counter = WriteCounter(client=None, namespace="x")  # type: ignore[arg-type]
    counter.observe("events", "ADDED", {"metadata": {"name": "e"}, "source": {"component": "grove-scheduler"}})
    counter.observe("pods", "ADDED", _pod())
    counter.observe("pods", "MODIFIED", _pod("n1"))
    counter.observe("pods", "MODIFIED", _pod("n1", phase="Running"))
    counter.observe(
        "pods", "MODIFIED", {**_pod("n1", phase="Running"), "metadata": {"name": "p", "resourceVersion": "9"}}
    )
    counts = counter.snapshot()
    assert counts["events create by scheduler"] == 1
    assert counts["pods update (no change) by operator"] == 1
    assert per_bound_pod(counts, 1) == {"all": 5.0, "floor": 2.0, "scheduler_part": 3.0, "operator": 2.0}

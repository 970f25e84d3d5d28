"""The chaos suite, short and seeded: a few hundred gangs under every fault kind grove-sim injects, each program's
leader killed and frozen, fuzzing through the webhooks; the observer must see no violation and everything converge."""

from __future__ import annotations

import pytest
from benchmarks.chaos.report import passed
from benchmarks.chaos.runner import ChaosConfig, run_chaos

FAULT_KINDS = {"error_500", "error_503", "error_429", "error_409", "latency", "watch_drop", "watch_expired", "paused"}


@pytest.mark.slow
def test_short_seeded_chaos_run_keeps_every_invariant() -> None:
    """300 gangs on 60 nodes, two replicas of each program, every fault kind and disruption at least once, rolling
    updates driven (the fault-free comparison then includes each pod's template hash)."""
    config = ChaosConfig(
        seed=7, gangs=300, nodes=60, replicas=2, live=60, budget_s=900.0, disrupt_every=(2.0, 4.0),
        pause_every=(6.0, 12.0), min_disruptions=4, converge_timeout=300.0, fuzz_examples=100,
    )  # fmt: skip
    result = run_chaos(config, progress=False)
    observer = result["observer"]
    assert observer["violations"] == 0, (observer["violation_examples"], result["diverged"])
    assert observer["gangs_bound"] >= 300
    assert result["actions"].get("update-template", 0) > 0, result["actions"]
    assert result["actions"].get("delete-pod", 0) > 0, result["actions"]
    assert set(result["faults_injected"]) >= FAULT_KINDS, result["faults_injected"]
    disruptions = {(entry["program"], entry["action"]) for entry in result["disruptions"]}
    assert disruptions == {(p, a) for p in ("grove-operator", "grove-scheduler") for a in ("kill", "freeze")}
    assert all(entry.get("survived") for entry in result["disruptions"] if "survived" in entry)
    assert result["converge_after_last_fault_s"] is not None, result["unsettled_at_timeout"]
    assert result["diverged"] == []
    fuzz = result["fuzz"]
    assert fuzz["examples"] == 100
    assert fuzz["findings"] == 0, fuzz["finding_examples"]
    assert fuzz["operator_alive_at_end"]
    assert passed(result)

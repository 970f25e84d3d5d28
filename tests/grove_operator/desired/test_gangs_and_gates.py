"""PodGang initialisation and pod references, scheduling-gate lifting incl. scaled gangs (§3.3)."""

from __future__ import annotations

import copy
from collections.abc import Callable
from datetime import UTC, datetime
from typing import Any

from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from grove_api import PodClique, PodCliqueSet, PodGang
from grove_api import labels as gl
from grove_operator.desired import gates, podgang

BuildHierarchy = Callable[[PodCliqueSet], Any]
LoadSample = Callable[[str], PodCliqueSet]
"""The `hierarchy` fixture: builds every object the controllers would create for a PodCliqueSet."""

MULTI = "user-guide/01_core-concepts/multi-node-aggregated.yaml"
NOW = datetime(2026, 11, 22, 8, 0, tzinfo=UTC)


def _gangs(pcs: PodCliqueSet, built: Any) -> dict[str, PodGang]:
    live = {n: g.spec.replicas for n, g in built.pcsgs.items()}
    result = {}
    for plan in podgang.expected_podgangs(pcs, live):
        result[plan.name] = PodGang.model_validate(podgang.build_podgang(pcs, plan, built.pods, "default-scheduler"))
    return result


def _with_scheduled(pclq: PodClique, scheduled: int) -> PodClique:
    return PodClique.model_validate(
        {**pclq.model_dump(by_alias=True, exclude_none=True), "status": {"scheduledReplicas": scheduled}}
    )


def test_initialized_condition_lifecycle() -> None:
    """First write: Initialized=False + phase Pending; then True once pods exist; never back to False."""
    fresh = PodGang.model_validate({"metadata": {"name": "g"}, "spec": {"podgroups": []}})
    pending = podgang.initialized_status(fresh, False, NOW)
    assert pending is not None
    assert pending["phase"] == "Pending"
    assert [(c["type"], c["status"], c["reason"]) for c in pending["conditions"]] == [
        ("Initialized", "False", "PodGangPodsCreationPending")
    ]
    waiting = PodGang.model_validate({**fresh.model_dump(by_alias=True, exclude_none=True), "status": pending})
    assert podgang.initialized_status(waiting, False, NOW) is None
    created = podgang.initialized_status(waiting, True, NOW)
    assert created is not None
    assert [(c["status"], c["reason"]) for c in created["conditions"]] == [("True", "PodGangPodsCreated")]
    done = PodGang.model_validate(
        {**fresh.model_dump(by_alias=True, exclude_none=True), "status": {**created, "phase": "Running"}}
    )
    assert podgang.initialized_status(done, False, NOW) is None


def test_all_pods_created_requires_every_pod(sample: LoadSample, hierarchy: BuildHierarchy) -> None:
    """Missing pods, a terminating pod or a missing PodClique keep the gang uninitialised."""
    pcs = sample(MULTI)
    built = hierarchy(pcs)
    plan = podgang.expected_podgangs(pcs, {})[0]
    assert podgang.all_pods_created(plan, built.pclqs, built.pods)
    terminating = copy.deepcopy(built.pods)
    terminating[0]["metadata"]["deletionTimestamp"] = "2026-11-22T08:00:00Z"
    assert not podgang.all_pods_created(plan, built.pclqs, terminating)
    partial = {k: v for k, v in built.pclqs.items() if not k.endswith("0-leader")}
    assert not podgang.all_pods_created(plan, partial, built.pods)


def test_pod_references_skip_terminating_and_foreign(sample: LoadSample, hierarchy: BuildHierarchy) -> None:
    """Terminating pods and pods of other gangs are not referenced; references are sorted by name."""
    built = hierarchy(sample(MULTI))
    pods = copy.deepcopy(built.pods)
    worker = [p for p in pods if p["metadata"]["generateName"] == "multinode-aggregated-0-model-instance-0-worker-"]
    worker[0]["metadata"]["deletionTimestamp"] = "2026-11-22T08:00:00Z"
    refs = podgang.pod_references("multinode-aggregated-0", reversed(pods))
    names = [r["name"] for r in refs["multinode-aggregated-0-model-instance-0-worker"]]
    assert names == sorted(p["metadata"]["name"] for p in worker[1:])
    assert "multinode-aggregated-0-model-instance-1-worker" not in refs


def test_base_gang_pods_ungated_when_referenced(sample: LoadSample, hierarchy: BuildHierarchy) -> None:
    """A base-gang pod loses the gate once its PodGroup references it; unreferenced pods stay gated."""
    pcs = sample(MULTI)
    built = hierarchy(pcs)
    gangs = _gangs(pcs, built)
    name = "multinode-aggregated-0-model-instance-0-worker"
    pods = [p for p in built.pods if p["metadata"]["labels"][gl.LABEL_PODCLIQUE] == name]
    decision = gates.pods_to_ungate(built.pclqs[name], pods, gangs["multinode-aggregated-0"])
    assert decision.ungate == sorted(p["metadata"]["name"] for p in pods)
    assert decision.still_gated == 0
    extra = copy.deepcopy(pods[0])
    extra["metadata"]["name"] = f"{name}-zzzzz"
    decision = gates.pods_to_ungate(built.pclqs[name], [*pods, extra], gangs["multinode-aggregated-0"])
    assert extra["metadata"]["name"] not in decision.ungate
    assert decision.still_gated == 1


def test_scaled_gang_waits_for_base_gang(sample: LoadSample, hierarchy: BuildHierarchy) -> None:
    """Scaled-gang pods stay gated until every base PodGroup has scheduledReplicas >= minReplicas."""
    pcs = sample(MULTI)
    built = hierarchy(pcs)
    gangs = _gangs(pcs, built)
    base, scaled = gangs["multinode-aggregated-0"], gangs["multinode-aggregated-0-model-instance-0"]
    name = "multinode-aggregated-0-model-instance-1-worker"
    pods = [p for p in built.pods if p["metadata"]["labels"][gl.LABEL_PODCLIQUE] == name]
    leader, worker = "multinode-aggregated-0-model-instance-0-leader", "multinode-aggregated-0-model-instance-0-worker"
    not_yet = {leader: _with_scheduled(built.pclqs[leader], 1), worker: _with_scheduled(built.pclqs[worker], 2)}
    decision = gates.pods_to_ungate(built.pclqs[name], pods, scaled, base, not_yet)
    assert decision.ungate == []
    assert decision.still_gated == 3
    assert decision.error is None
    ready = {leader: _with_scheduled(built.pclqs[leader], 1), worker: _with_scheduled(built.pclqs[worker], 3)}
    decision = gates.pods_to_ungate(built.pclqs[name], pods, scaled, base, ready)
    assert len(decision.ungate) == 3
    missing = gates.pods_to_ungate(built.pclqs[name], pods, scaled, base, {leader: ready[leader]})
    assert missing.ungate == []
    assert missing.error is not None


def test_remove_gate_patch_keeps_foreign_gates() -> None:
    """Only Grove's gate is removed; other gates survive the merge patch."""
    pod = {"spec": {"schedulingGates": [{"name": gl.SCHEDULING_GATE_PODGANG_PENDING}, {"name": "example.com/other"}]}}
    assert gates.has_grove_gate(pod)
    assert gates.remove_gate_patch(pod) == {"spec": {"schedulingGates": [{"name": "example.com/other"}]}}
    assert not gates.has_grove_gate({"spec": gates.remove_gate_patch(pod)["spec"]})


def test_scale_out_of_pcsg_adds_scaled_gangs(sample: LoadSample) -> None:
    """Live PCSG replicas (not the template) decide how many scaled gangs exist."""
    pcs = sample(MULTI)
    names = [p.name for p in podgang.expected_podgangs(pcs, {"multinode-aggregated-0-model-instance": 4})]
    assert names == ["multinode-aggregated-0"] + [f"multinode-aggregated-0-model-instance-{k}" for k in range(3)]
    assert [p.name for p in podgang.expected_podgangs(pcs, {"multinode-aggregated-0-model-instance": 1})] == [
        "multinode-aggregated-0"
    ]


@settings(max_examples=60, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(
    replicas=st.integers(0, 6),
    live=st.dictionaries(st.integers(0, 8), st.integers(0, 7), max_size=6),
)
def test_gang_planner_counts_names_and_parses_back_what_it_enumerates(
    sample: LoadSample, replicas: int, live: dict[int, int]
) -> None:
    """`count` equals the number of `gang_keys` (so a full set skips the walk), every key's name parses back to
    it and is wanted, and a replica index past `spec.replicas` is not."""
    pcs = sample(MULTI).model_copy(deep=True)
    pcs.spec.replicas = replicas
    group = pcs.spec.template.pod_clique_scaling_groups[0].name  # type: ignore[index]
    live_replicas = {f"{pcs.metadata.name}-{i}-{group}": n for i, n in live.items()}
    planner = podgang.GangPlanner(pcs, live_replicas)
    keys = list(planner.gang_keys())
    assert planner.count() == len(keys)
    for key in keys:
        assert planner.key_of(planner.name(key)) == key
        assert planner.wanted(key)
    assert not planner.wanted(podgang.GangKey(replicas))

"""Invariants of env injection, victim selection and pod grouping, checked with hypothesis."""

from __future__ import annotations

from typing import Any

from hypothesis import given
from hypothesis import strategies as st

from grove_api import labels as gl
from grove_operator.desired import podgang, scalein
from grove_operator.desired._env import prepend_env, value_env

env_names = st.sampled_from(["GROVE_PCS_NAME", "GROVE_PCLQ_NAME", "A", "B", "C", "PATH"])
containers = st.lists(
    st.lists(st.tuples(env_names, st.text("xyz", max_size=2)), max_size=5, unique_by=lambda t: t[0]),
    min_size=1,
    max_size=3,
)


@given(containers=containers, init=st.booleans())
def test_prepend_env_properties(containers: list[list[tuple[str, str]]], init: bool) -> None:
    """Grove vars come first in every container, once each; user vars keep their order; input is not mutated."""
    spec: dict[str, Any] = {
        "containers": [
            {"name": f"c{i}", "env": [{"name": n, "value": v} for n, v in env]} for i, env in enumerate(containers)
        ]
    }
    if init:
        spec["initContainers"] = [{"name": "i0"}]
    injected = [value_env("GROVE_PCS_NAME", "pcs"), value_env("GROVE_PCLQ_NAME", "pclq")]
    before = repr(spec)
    result = prepend_env(spec, injected)
    assert repr(spec) == before
    for original, container in zip(spec["containers"], result["containers"], strict=True):
        names = [e["name"] for e in container["env"]]
        assert container["env"][:2] == injected
        assert len(names) == len(set(names))
        user = [e["name"] for e in original["env"] if e["name"] not in ("GROVE_PCS_NAME", "GROVE_PCLQ_NAME")]
        assert names[2:] == user
    if init:
        assert result["initContainers"][0]["env"] == injected


pod_states = st.fixed_dictionaries(
    {
        "node": st.booleans(),
        "phase": st.sampled_from(["Pending", "Unknown", "Running"]),
        "ready": st.booleans(),
        "hash": st.sampled_from(["old", "new"]),
        "minute": st.integers(0, 59),
        "terminating": st.booleans(),
    }
)


def _pod(i: int, s: dict[str, Any]) -> dict[str, Any]:
    pod: dict[str, Any] = {
        "metadata": {
            "name": f"p{i:02d}",
            "creationTimestamp": f"2026-11-22T08:{s['minute']:02d}:00Z",
            "labels": {gl.LABEL_POD_TEMPLATE_HASH: s["hash"], gl.LABEL_PODGANG: f"g{i % 3}"},
        },
        "spec": {"nodeName": "n"} if s["node"] else {},
        "status": {"phase": s["phase"], "conditions": [{"type": "Ready", "status": str(s["ready"])}]},
    }
    if s["terminating"]:
        pod["metadata"]["deletionTimestamp"] = "2026-11-22T09:00:00Z"
    return pod


@given(states=st.lists(pod_states, max_size=12), count=st.integers(0, 14))
def test_victims_properties(states: list[dict[str, Any]], count: int) -> None:
    """Victims never include terminating pods, have the right size, and shorter requests are prefixes of longer ones."""
    pods = [_pod(i, s) for i, s in enumerate(states)]
    live = [p["metadata"]["name"] for p in pods if "deletionTimestamp" not in p["metadata"]]
    victims = scalein.scale_in_victims(pods, count, current_hash="new")
    assert len(victims) == min(count, len(live))
    assert set(victims) <= set(live)
    assert victims == scalein.scale_in_victims(pods, len(live), current_hash="new")[: len(victims)]
    full = scalein.scale_in_victims(pods, len(live), current_hash="new")
    assigned = [bool(next(p for p in pods if p["metadata"]["name"] == n)["spec"]) for n in full]
    assert assigned == sorted(assigned)


@given(states=st.lists(pod_states, max_size=12))
def test_group_pods_by_gang_partitions(states: list[dict[str, Any]]) -> None:
    """Grouping by gang is a partition of the labelled pods, and references built per group equal the global ones."""
    pods = [_pod(i, s) for i, s in enumerate(states)]
    grouped = podgang.group_pods_by_gang(pods)
    assert sum(len(v) for v in grouped.values()) == len(pods)
    for gang, members in grouped.items():
        assert podgang.pod_references(gang, members) == podgang.pod_references(gang, pods)


holders = st.lists(
    st.tuples(st.integers(0, 4), st.integers(0, 3), st.booleans(), st.booleans()), max_size=12
)  # (index, creation second, bound, ready)


@given(holders=holders)
def test_duplicate_index_pods_leave_every_index_held_once_by_its_best_holder(
    holders: list[tuple[int, int, bool, bool]],
) -> None:
    """Dropping the duplicates keeps every index exactly once, loses none, and keeps the holder scale-in would
    delete last: a bound, ready pod over a pending one, the oldest among equals."""
    pods = [
        {
            "metadata": {
                "name": f"p{n}",
                "creationTimestamp": f"2026-01-01T00:00:0{second}Z",
                "labels": {gl.LABEL_PODCLIQUE_POD_INDEX: str(index)},
            },
            "spec": {"hostname": f"w-{index}", **({"nodeName": "n"} if bound else {})},
            "status": {
                "phase": "Running" if bound else "Pending",
                "conditions": [{"type": "Ready", "status": "True" if ready and bound else "False"}],
            },
        }
        for n, (index, second, bound, ready) in enumerate(holders)
    ]
    duplicates = scalein.duplicate_index_pods(pods)
    kept = [p for p in pods if p not in duplicates]
    kept_indices = [scalein.pod_index(p) for p in kept]
    assert sorted(kept_indices, key=str) == sorted({scalein.pod_index(p) for p in pods}, key=str)
    assert len(kept_indices) == len(set(kept_indices))
    for pod in duplicates:
        survivor = next(p for p in kept if scalein.pod_index(p) == scalein.pod_index(pod))
        assert scalein.scale_in_victims([pod, survivor], 1) == [pod["metadata"]["name"]]

"""Odd quantities through the whole read path (node and pod dicts → scheduler cache → snapshot → assembly →
placement): nothing raises, and no placement over-commits a node by the exact amounts the objects state."""

from __future__ import annotations

import re
from fractions import Fraction
from typing import Any

from hypothesis import HealthCheck, event, given, settings
from hypothesis import strategies as st

from grove_sched.cache import SchedulerCache
from grove_sched.gangs import AssemblyContext, GangKey, ReadyGang, assemble
from grove_sched.model import Placement, PlacementOptions
from grove_sched.placement import place

from .kit import SCHED, podgang

RESOURCES = ("cpu", "memory", "nvidia.com/gpu")
SUFFIX = {"": 1, "n": Fraction(1, 10**9), "u": Fraction(1, 10**6), "m": Fraction(1, 1000), "k": 10**3, "M": 10**6}
SUFFIX |= {"G": 10**9, "T": 10**12, "P": 10**15, "E": 10**18, "Ki": 2**10, "Mi": 2**20, "Gi": 2**30}
SUFFIX |= {"Ti": 2**40, "Pi": 2**50, "Ei": 2**60}
GRAMMAR = re.compile(r"^([+-]?[0-9.]+)(?:[eE]([+-]?[0-9]+))?(Ki|Mi|Gi|Ti|Pi|Ei|n|u|m|k|M|G|T|P|E|)$")
OPTIONS = PlacementOptions(max_deterministic_time=0.01)

ODD = st.one_of(
    st.sampled_from(["1", "2", "4", "8", "16", "500m", "1Gi", "64Gi", "0", "110"]),  # ordinary, so pods do land
    st.sampled_from(["1e30", "16Ei", "-1", "-1e30", "1e-30", "0.5", "1.5", "7.999", "2Pi", "1e15", "1E"]),
    st.from_regex(r"\A[+-]?[0-9]{1,20}(\.[0-9]{0,8})?([eE][+-]?[0-9]{1,2})?(Ki|Mi|Gi|Ti|Pi|Ei|m|k|M|G|E)?\Z"),
    st.sampled_from(["lots", "", "1.2.3", "nan", "1Mii", "0x10"]),
)


def exact(value: str, resource: str) -> Fraction | None:
    """The exact amount a quantity states (millicores for cpu), or None when it is no quantity."""
    match = GRAMMAR.match(value.strip())
    if match is None:
        return None
    try:
        number = Fraction(match.group(1))
    except ValueError:
        return None
    number *= Fraction(10) ** int(match.group(2) or 0) * SUFFIX[match.group(3)]
    return number * 1000 if resource == "cpu" else number


def pod_dict(name: str, requests: dict[str, str], node: str | None = None, gang: str | None = None) -> dict[str, Any]:
    spec: dict[str, Any] = {"schedulerName": SCHED, "containers": [{"name": "c", "resources": {"requests": requests}}]}
    if node:
        spec["nodeName"] = node
    labels = {"grove.io/podgang": gang} if gang else {}
    return {"metadata": {"name": name, "namespace": "default", "uid": name, "labels": labels}, "spec": spec}


@st.composite
def clusters(draw: st.DrawFn) -> tuple[list[dict[str, Any]], list[dict[str, Any]], list[dict[str, Any]]]:
    """Up to 4 nodes and 4 bound pods with odd amounts, and a gang of up to 3 pods asking odd amounts."""
    nodes = []
    for i in range(draw(st.integers(1, 4))):
        allocatable = {r: draw(ODD) for r in RESOURCES if draw(st.booleans()) or r == "cpu"}
        allocatable["pods"] = draw(st.sampled_from(["110", "2", "1e30", "-3"]))
        nodes.append({"metadata": {"name": f"n{i}"}, "status": {"allocatable": allocatable}})
    bound = [
        pod_dict(f"b{j}", {r: draw(ODD) for r in RESOURCES if draw(st.booleans())}, f"n{draw(st.integers(0, 3))}")
        for j in range(draw(st.integers(0, 4)))
    ]
    requests = {r: draw(ODD) for r in RESOURCES if draw(st.booleans())}
    varied = draw(st.booleans())
    pending = [
        pod_dict(f"p{k}", {r: draw(ODD) for r in RESOURCES if draw(st.booleans())} if varied else requests, gang="g")
        for k in range(draw(st.integers(1, 3)))
    ]
    return nodes, bound, pending


def overcommitted(
    nodes: list[dict[str, Any]], bound: list[dict[str, Any]], placed: dict[str, dict[str, Any]]
) -> list[str]:
    """Node/resource pairs where the pods placed, with what was bound already, exceed the exact allocatable."""
    problems = []
    for node in nodes:
        name = node["metadata"]["name"]
        mine = [p for p in placed.values() if p["spec"]["nodeName"] == name]
        if not mine:
            continue
        others = [p for p in bound if p["spec"]["nodeName"] == name]
        if len(mine) + len(others) > exact(node["status"]["allocatable"]["pods"], "pods"):  # type: ignore[operator]
            problems.append(f"{name}: pods")
        for resource in RESOURCES:
            wanted = [
                exact(p["spec"]["containers"][0]["resources"]["requests"].get(resource, "0"), resource) for p in mine
            ]
            if not any(w is not None and w > 0 for w in wanted):
                continue  # asks for none of it (a negative request, which kube-apiserver refuses, counts as none)
            used = [
                exact(p["spec"]["containers"][0]["resources"]["requests"].get(resource, "0"), resource) for p in others
            ]
            if any(u is None for u in used):
                problems.append(f"{name}: {resource} placed next to an unreadable request")
                continue
            have = exact(node["status"]["allocatable"].get(resource, "0"), resource)
            total = sum((max(u, Fraction(0)) for u in used if u is not None), Fraction(0))
            if have is None or total + sum(max(w, Fraction(0)) for w in wanted if w is not None) > have:
                problems.append(f"{name}: {resource}")
    return problems


@settings(max_examples=300, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(clusters())
def test_odd_quantities_never_raise_and_never_overcommit(
    case: tuple[list[dict[str, Any]], list[dict[str, Any]], list[dict[str, Any]]],
) -> None:
    """However odd the amounts, the cache, the snapshot, assembly and placement return an answer; a node the cache
    set aside gets no pod, and no node gets more than its exact allocatable."""
    nodes, bound, pending = case
    cache = SchedulerCache()
    for node in nodes:
        cache.node_upserted(node)
    for pod in bound:
        cache.pod_upserted(pod)
    snapshot = cache.snapshot()
    pg = podgang("g", {"w": ([p["metadata"]["name"] for p in pending], len(pending))})
    ctx = AssemblyContext(SCHED, cache.node_label_keys, cache.node_labels)
    assembly = assemble(GangKey("default", "g"), pg, {p["metadata"]["name"]: p for p in pending}, ctx)
    if not isinstance(assembly, ReadyGang):
        event(f"assembly: {type(assembly).__name__}")
        return
    result = place(snapshot, assembly.request, OPTIONS)
    event(f"placement: {type(result).__name__} {getattr(getattr(result, 'status', None), 'code', '')}")
    if not isinstance(result, Placement):
        return
    assert not set(result.assignments.values()) & set(cache.set_aside)
    placed = {
        name: {**pod, "spec": {**pod["spec"], "nodeName": result.assignments[name]}}
        for name, pod in assembly.pods.items()
        if name in result.assignments
    }
    assert overcommitted(nodes, bound, placed) == []

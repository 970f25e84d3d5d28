"""Metrics on hand-made cases: stranded GPUs, the LP bound, gaps, spread and preferred hits."""

from __future__ import annotations

import pytest
from benchmarks.harness.clusters import BLOCK, HOST, RACK
from benchmarks.harness.metrics import (
    allocated_gpus,
    domains_spanned,
    lp_bound,
    optimality_gap,
    percentile,
    preferred_hits,
    stranded_gpus,
)
from benchmarks.harness.workloads import group
from hypothesis import given
from hypothesis import strategies as st

from grove_sched.model import CPU, GPU, MEMORY, PODS, BoundPod, GangRequest, NodeInfo, TopologyConstraint
from grove_sched.placement import Snapshot

GIB = 2**30


def _cluster(free: list[int], per_rack: int = 1, gpus: int = 8) -> Snapshot:
    """One node per entry with `free` GPUs left out of `gpus`; `per_rack` nodes per rack, two racks per block."""
    nodes, pods = [], []
    for i, f in enumerate(free):
        name = f"n{i}"
        labels = {HOST: name, RACK: f"r{i // per_rack}", BLOCK: f"b{i // (2 * per_rack)}"}
        nodes.append(NodeInfo(name, labels, {CPU: 192_000, MEMORY: 2048 * GIB, PODS: 110, GPU: gpus}))
        if f < gpus:
            pods.append(BoundPod(f"bg{i}", "bg", name, {}, {GPU: gpus - f}))
    return Snapshot.build(nodes, pods)


def _gang(name: str, count: int, gpus: int, required: str | None = None) -> GangRequest:
    return GangRequest(name, "bench", (group(name, count, gpus),), topology=TopologyConstraint(required_key=required))


def test_stranded_counts_free_gpus_no_pending_gang_can_use() -> None:
    """A node with 3 free GPUs is stranded for a pending 4-GPU pod; the 8-free node is not."""
    snapshot = _cluster([3, 8])
    assert stranded_gpus(snapshot, [_gang("p", 1, 4)]) == 3


def test_stranded_respects_required_domains() -> None:
    """Free GPUs in racks too small for a pending rack-bound gang are stranded even if a pod would fit."""
    snapshot = _cluster([4, 4, 8, 8], per_rack=2)
    assert stranded_gpus(snapshot, [_gang("p", 3, 4, RACK)]) == 8
    assert stranded_gpus(snapshot, [_gang("p", 3, 4)]) == 0


def test_nothing_pending_means_nothing_stranded() -> None:
    """With no pending gang no free GPU is being denied."""
    assert stranded_gpus(_cluster([3, 5]), []) == 0


def test_lp_bound_accounts_for_pod_granularity() -> None:
    """Two racks of one 8-GPU node hold one gang of 2x3-GPU pods each: bound 12, not the 16 free GPUs."""
    snapshot = _cluster([8, 8])
    gangs = [_gang(f"g{i}", 2, 3, RACK) for i in range(3)]
    assert lp_bound(snapshot, gangs) == pytest.approx(12.0)


def test_lp_bound_never_exceeds_free_or_demand() -> None:
    """The bound is at most the free GPUs and at most what the gangs ask for."""
    snapshot = _cluster([8, 2, 5, 1], per_rack=2)
    gangs = [_gang("a", 2, 1, RACK), _gang("b", 1, 4)]
    assert lp_bound(snapshot, gangs) == pytest.approx(6.0)
    many = [_gang(f"c{i}", 1, 1) for i in range(40)]
    assert lp_bound(snapshot, many) == pytest.approx(16.0)


def test_optimality_gap_and_percentile() -> None:
    """The gap is relative to the bound, and percentiles use the nearest rank."""
    assert optimality_gap(10, 8) == pytest.approx(0.2)
    assert optimality_gap(0, 0) == 0.0
    assert percentile([5.0, 1.0, 3.0, 2.0, 4.0], 0.5) == 3.0
    assert percentile([float(i) for i in range(1, 101)], 0.99) == 99.0
    assert percentile([], 0.5) == 0.0


@given(values=st.lists(st.floats(0, 1e6), min_size=1, max_size=50), q=st.floats(0, 1))
def test_percentile_is_one_of_the_values_and_monotone(values: list[float], q: float) -> None:
    """A percentile is always an observed value, between the minimum and the maximum."""
    result = percentile(values, q)
    assert result in values
    assert min(values) <= result <= max(values)


def test_spread_preferred_hits_and_allocation() -> None:
    """Spread counts distinct racks and blocks; a preferred scope in one block is a hit."""
    snapshot = _cluster([8, 8, 8, 8, 8])
    gang = GangRequest("g", "bench", (group("w", 3, 1),), topology=TopologyConstraint(preferred_key=BLOCK))
    together = {"w-0": "n0", "w-1": "n1", "w-2": "n1"}
    apart = {"w-0": "n0", "w-1": "n2", "w-2": "n4"}
    assert domains_spanned(snapshot, together.values(), RACK) == 2
    assert domains_spanned(snapshot, apart.values(), BLOCK) == 3
    assert preferred_hits(snapshot, gang, together) == (1, 1)
    assert preferred_hits(snapshot, gang, apart) == (0, 1)
    assert allocated_gpus(_cluster([8, 5])) == (3, 16)

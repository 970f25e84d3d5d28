"""GPU fragmentation (objective tier 5): the bound-pod profile and placements that keep free GPUs usable."""

from __future__ import annotations

import numpy as np
import pytest
from hypothesis import given
from hypothesis import strategies as st
from placement_kit import gang, group, node

from grove_sched.model import CPU, GPU, MEMORY, BoundPod, Placement, PlacementOptions
from grove_sched.placement import Profile, Snapshot, may_fragment, place, profile, shape_counts, unusable_gpus

GIB = 2**30


def gpu_pod(name: str, node_name: str, gpu: int, cpu: int, memory: int = 0) -> BoundPod:
    return BoundPod(name, "default", node_name, {"app": "bg"}, {GPU: gpu, CPU: cpu, MEMORY: memory})


def test_profile_is_the_low_quantile_read_as_its_bin_lower_edge() -> None:
    # 9 pods at 2 cores per GPU, 1 at 16: the 10th percentile is 2 cores; 2000 m sits in bin floor(4*log2 2000)=43
    requests = [{GPU: 1, CPU: 2000, MEMORY: 8 * GIB}] * 9 + [{GPU: 2, CPU: 32_000, MEMORY: 64 * GIB}]
    prof = profile(shape_counts(requests))
    assert prof is not None
    assert prof.cpu_per_gpu == int(2 ** (43 / 4))
    assert 0.81 * 2000 < prof.cpu_per_gpu <= 2000
    assert 0.81 * 8 * GIB < prof.memory_per_gpu <= 8 * GIB


def test_no_gpu_pods_means_no_profile_and_pods_asking_nothing_never_limit() -> None:
    assert profile(shape_counts([{CPU: 4000}])) is None
    prof = profile(shape_counts([{GPU: 1, CPU: 0, MEMORY: 4 * GIB}]))
    assert prof is not None
    assert prof.cpu_per_gpu == 0
    free = np.asarray([[4, 0, 100 * GIB]], dtype=np.int64)  # GPU, CPU, memory columns
    assert unusable_gpus(free, 0, 1, 2, prof).tolist() == [0]


def test_unusable_gpus_are_those_the_cpu_or_memory_left_cannot_serve() -> None:
    prof = Profile(cpu_per_gpu=4000, memory_per_gpu=16 * GIB)
    free = np.asarray(
        [
            [4, 2000, 512 * GIB],  # 2 cores: no profile pod fits, all 4 GPUs lost
            [4, 10_000, 512 * GIB],  # 10 cores serve 2 GPUs
            [4, 64_000, 40 * GIB],  # 40 GiB serve 2 GPUs
            [4, 64_000, 512 * GIB],  # all usable
            [-1, 0, 0],  # over-committed node: nothing to lose
        ],
        dtype=np.int64,
    )
    assert unusable_gpus(free, 0, 1, 2, prof).tolist() == [4, 2, 2, 0, 0]
    assert unusable_gpus(free, 0, 1, 2, None).tolist() == [0, 0, 0, 0, 0]


requests_st = st.lists(
    st.fixed_dictionaries(
        {GPU: st.integers(0, 8), CPU: st.integers(0, 200_000), MEMORY: st.integers(0, 2**40)},
    ),
    max_size=12,
)


@given(requests_st, requests_st)
def test_snapshot_profile_histogram_follows_assumed_and_removed_pods(
    first: list[dict[str, int]], second: list[dict[str, int]]
) -> None:
    nodes = [node("n0", cpu=10**9), node("n1", cpu=10**9)]
    a = [BoundPod(f"a{i}", "default", "n0", {}, r) for i, r in enumerate(first)]
    b = [BoundPod(f"b{i}", "default", "n1", {}, r) for i, r in enumerate(second)]
    whole = Snapshot.build(nodes, a + b)
    assert np.array_equal(Snapshot.build(nodes, a).with_assumed(b).gpu_pod_shapes, whole.gpu_pod_shapes)
    assert np.array_equal(whole.without(p.name for p in b).gpu_pod_shapes, Snapshot.build(nodes, a).gpu_pod_shapes)
    assert int(whole.gpu_pod_shapes[0].sum()) == sum(1 for r in first + second if r[GPU] > 0)


@pytest.mark.parametrize(
    "options",
    [
        PlacementOptions(use_cpsat=False),  # greedy ranking
        PlacementOptions(refine="all"),  # CP-SAT over node classes
        PlacementOptions(refine="all", max_patterns=1),  # CP-SAT's per-node count model
    ],
    ids=["greedy", "cpsat-classes", "cpsat-per-node"],
)
def test_placement_leaves_free_gpus_where_cpu_can_still_serve_them(options: PlacementOptions) -> None:
    """Two nodes with 4 free GPUs each; n0 has 16 free cores, n1 has 40. Bound pods ask 4 cores per GPU. A 1-GPU,
    12-core pod on n0 would leave 3 GPUs with 4 cores (2 of them unusable); on n1 every GPU stays usable. Plain
    best fit ties and takes n0 (first by name)."""
    nodes = [node("n0", rack=None, cpu=48_000), node("n1", rack=None, cpu=72_000)]
    pods = [gpu_pod("bg0", "n0", 4, 32_000), gpu_pod("bg1", "n1", 4, 32_000)]
    result = place(Snapshot.build(nodes, pods), gang(group("p", 1, gpu=1, cpu=12_000)), options)
    assert isinstance(result, Placement)
    assert result.assignments == {"p-0": "n1"}
    assert result.objective.fragmented_gpus == 0


def test_without_bound_gpu_pods_placement_is_plain_best_fit() -> None:
    nodes = [node("n0", rack=None, cpu=16_000), node("n1", rack=None, cpu=72_000)]
    pods = [BoundPod("bg0", "default", "n0", {}, {GPU: 0, CPU: 0}), BoundPod("bg1", "default", "n1", {}, {CPU: 0})]
    result = place(Snapshot.build(nodes, pods), gang(group("p", 1, gpu=1, cpu=12_000)), PlacementOptions())
    assert isinstance(result, Placement)
    assert result.assignments == {"p-0": "n0"}
    assert result.objective.fragmented_gpus == 0


@given(
    st.lists(st.tuples(st.integers(-2, 8), st.integers(-4000, 64_000), st.integers(0, 64)), min_size=1, max_size=4),
    st.lists(st.tuples(st.integers(0, 4), st.integers(0, 16_000), st.integers(0, 16)), min_size=1, max_size=3),
    st.integers(1, 8000),
    st.integers(0, 8),
    st.data(),
)
def test_nodes_outside_may_fragment_never_end_with_unusable_gpus(
    nodes: list[tuple[int, int, int]],
    groups: list[tuple[int, int, int]],
    cpu_per_gpu: int,
    memory_per_gpu: int,
    data: st.DataObject,
) -> None:
    """`may_fragment` over-approximates: on a node it rules out, no pod counts up to maxpods leave unusable GPUs
    (this is what lets the objective drop the tier where it is 0 everywhere)."""
    free = np.asarray(nodes, dtype=np.int64)
    req = np.asarray(groups, dtype=np.int64)
    maxpods = np.asarray(
        [[data.draw(st.integers(0, 3)) for _ in nodes] for _ in groups],
        dtype=np.int64,
    )
    prof = Profile(cpu_per_gpu, memory_per_gpu)
    fragile = may_fragment(free, req, maxpods, 0, 1, 2, prof)
    counts = np.asarray([[data.draw(st.integers(0, int(m))) for m in row] for row in maxpods], dtype=np.int64)
    after = free - counts.T @ req
    lost = unusable_gpus(after, 0, 1, 2, prof)
    assert not (lost[~fragile] > 0).any()

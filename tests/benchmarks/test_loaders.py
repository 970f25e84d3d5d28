"""The openb loaders, cluster shapes and workload builders produce the documented counts."""

from __future__ import annotations

from collections import Counter

from benchmarks.harness import clusters, workloads
from benchmarks.harness.clusters import BLOCK, RACK

from grove_sched.model import GPU


def test_openb_cluster_has_the_trace_node_mix() -> None:
    """The openb cluster has 1,213 GPU nodes with the published 1/2/4/8-GPU mix and 6,212 GPUs."""
    cluster = clusters.openb()
    assert len(cluster.nodes) == 1213
    assert clusters.gpus_per_node(cluster.nodes) == {1: 24, 2: 518, 4: 54, 8: 617}
    assert cluster.total_gpus == 6212


def test_openb_topology_is_racks_of_sixteen() -> None:
    """The synthetic openb topology cuts nodes into racks of 16 and every node carries rack and block labels."""
    cluster = clusters.openb()
    racks = Counter(node.labels[RACK] for node in cluster.nodes)
    assert len(racks) == 76
    assert max(racks.values()) == 16
    assert all(BLOCK in node.labels for node in cluster.nodes)


def test_openb_tasks_and_run_lengths() -> None:
    """The default pod list has 7,064 GPU tasks in arrival order, and run lengths partition them."""
    tasks = workloads.read_openb_tasks()
    assert len(tasks) == 7064
    assert [t.creation_time for t in tasks] == sorted(t.creation_time for t in tasks)
    runs = workloads.run_lengths(tasks)
    assert sum(runs) == 7064
    assert Counter(runs)[1] == 4188
    assert max(runs) == 30


def test_openb_workload_reaches_demand_and_marks_checkpoint() -> None:
    """The synthesised openb workload stops at 130% demand and marks where demand crossed 100%."""
    cluster = clusters.openb()
    load = workloads.openb(cluster, 1.3, seed=0)
    demand = [workloads.gang_gpus(g) for g in load.gangs]
    at_100 = load.checkpoints["100% demand"]
    assert sum(demand[: at_100 - 1]) < cluster.total_gpus <= sum(demand[:at_100])
    assert sum(demand[:-1]) < 1.3 * cluster.total_gpus <= sum(demand)
    assert load.checkpoints["130% demand"] == len(load.gangs)
    assert workloads.openb(cluster, 1.3, seed=0).gangs == load.gangs


def test_uniform_shapes_match_upstream_tas_template() -> None:
    """The 5,000-node shape is 50 racks of 100 eight-GPU nodes."""
    cluster = clusters.uniform(5000)
    racks = Counter(node.labels[RACK] for node in cluster.nodes)
    assert len(racks) == 50
    assert set(racks.values()) == {100}
    assert cluster.total_gpus == 40_000


def test_background_is_seeded_and_near_the_share() -> None:
    """Background load is reproducible for a seed and close to the requested share of GPUs."""
    base = clusters.uniform(1000)
    one = clusters.with_background(base, 0.5, seed=3)
    assert one == clusters.with_background(base, 0.5, seed=3)
    assert 0.4 < one.used_gpus / base.total_gpus < 0.6
    assert all(0 < pod.requests[GPU] <= 8 for pod in one.background)


def test_tas_and_knavigator_workloads() -> None:
    """TAS gangs have the upstream shapes and knavigator's burst is 53 gangs of 288 whole-node pods."""
    shapes = workloads.tas(clusters.uniform(1000), 750, 4)
    assert len(shapes.gangs) == 750
    assert all(g.topology.required_key == RACK and len(g.groups[0].pods) == 4 for g in shapes.gangs)
    burst = workloads.knavigator(clusters.knavigator())
    assert len(burst.gangs) == 53
    assert sum(len(g.groups[0].pods) for g in burst.gangs) == 288
    assert all(g.groups[0].requests[GPU] == 8 for g in burst.gangs)


def test_disagg_workload_reaches_its_demand() -> None:
    """Disaggregated gangs are generated until their GPU demand reaches the share of free GPUs."""
    cluster = clusters.with_background(clusters.uniform(1000), 0.5, seed=0)
    load = workloads.disagg(cluster, 1.1, seed=0)
    free = cluster.total_gpus - cluster.used_gpus
    assert sum(workloads.gang_gpus(g) for g in load.gangs) >= 1.1 * free
    assert {len(g.groups) for g in load.gangs} == {2, 4}

"""Scheduler cache: assume / forget / confirm and capacity accounting."""

from __future__ import annotations

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from grove_sched.cache import PodKey, SchedulerCache
from grove_sched.model import GPU
from grove_sched.placement import Snapshot
from grove_sched.podspec import bound_pod, node_info

from .kit import node, pod


def free_gpus(cache: SchedulerCache, name: str) -> int:
    snap = cache.snapshot()
    idx = snap.resource_index(GPU)
    assert idx is not None
    return int(snap.free[snap.node_index[name], idx])


def test_assumed_pods_count_against_capacity() -> None:
    """An assumed pod takes its GPUs from the node before any informer event."""
    cache = SchedulerCache()
    cache.node_upserted(node("n1", gpus=8))
    cache.assume([(bound_pod(pod("p", gpus=4), "n1"), "uid-p")])
    assert free_gpus(cache, "n1") == 4
    assert cache.is_assumed(PodKey("default", "p"))


def test_forget_returns_capacity() -> None:
    """Forgetting an assumption frees the capacity again."""
    cache = SchedulerCache()
    cache.node_upserted(node("n1", gpus=8))
    cache.assume([(bound_pod(pod("p", gpus=4), "n1"), "uid-p")])
    cache.forget([PodKey("default", "p")])
    assert free_gpus(cache, "n1") == 8
    assert cache.num_assumed == 0


def test_confirm_does_not_double_count() -> None:
    """The informer's bound pod replaces the assumption; the GPUs are counted once."""
    cache = SchedulerCache()
    cache.node_upserted(node("n1", gpus=8))
    cache.assume([(bound_pod(pod("p", gpus=4), "n1"), "uid-p")])
    cache.pod_upserted(pod("p", gpus=4, node_name="n1"))
    assert not cache.is_assumed(PodKey("default", "p"))
    assert cache.bound_node(PodKey("default", "p")) == "n1"
    assert free_gpus(cache, "n1") == 4
    cache.forget([PodKey("default", "p")])
    assert free_gpus(cache, "n1") == 4


def test_finished_or_deleted_pods_free_capacity() -> None:
    """A Succeeded pod and a deleted pod no longer consume their node."""
    cache = SchedulerCache()
    cache.node_upserted(node("n1", gpus=8))
    cache.pod_upserted(pod("a", gpus=2, node_name="n1", phase="Running"))
    cache.pod_upserted(pod("b", gpus=2, node_name="n1", phase="Running"))
    assert free_gpus(cache, "n1") == 4
    cache.pod_upserted(pod("a", gpus=2, node_name="n1", phase="Succeeded"))
    cache.pod_deleted(pod("b", gpus=2, node_name="n1"))
    assert free_gpus(cache, "n1") == 8


def test_assumption_expires_after_ttl_once_bound() -> None:
    """A bound but never confirmed assumption is dropped after the ttl, an unfinished one is kept."""
    cache = SchedulerCache(assumed_ttl=10.0)
    cache.node_upserted(node("n1"))
    cache.assume([(bound_pod(pod("a"), "n1"), ""), (bound_pod(pod("b"), "n1"), "")])
    cache.finish_binding([PodKey("default", "a")], now=100.0)
    assert cache.cleanup_expired(105.0) == []
    assert cache.cleanup_expired(110.0) == [PodKey("default", "a")]
    assert cache.is_assumed(PodKey("default", "b"))


def test_assume_of_bound_pod_is_rejected() -> None:
    """Assuming a pod the informer already saw bound is a bug and raises."""
    cache = SchedulerCache()
    cache.node_upserted(node("n1"))
    cache.pod_upserted(pod("a", node_name="n1"))
    with pytest.raises(ValueError, match="already bound"):
        cache.assume([(bound_pod(pod("a"), "n1"), "")])


def test_node_label_keys_and_cordon() -> None:
    """Label keys follow node adds and deletes; cordoned nodes show as unschedulable in the snapshot."""
    cache = SchedulerCache()
    cache.node_upserted(node("n1", labels={"rack": "r1"}, cordoned=True))
    cache.node_upserted(node("n2"))
    assert "rack" in cache.node_label_keys
    assert bool(cache.snapshot().unschedulable[0])
    cache.node_deleted("n1")
    assert "rack" not in cache.node_label_keys
    assert cache.snapshot().node_names == ("n2",)


ops = st.lists(
    st.tuples(
        st.sampled_from(["assume", "forget", "confirm", "delete", "finish"]), st.integers(0, 5), st.integers(0, 2)
    ),
    max_size=40,
)


@settings(max_examples=60, deadline=None)
@given(ops)
def test_capacity_equals_allocatable_minus_bound_and_assumed(steps: list[tuple[str, int, int]]) -> None:
    """After any sequence of cache operations, free = allocatable - (bound + assumed), each pod counted once."""
    cache = SchedulerCache(max_departed=2)
    nodes = ["n0", "n1", "n2"]
    for n in nodes:
        cache.node_upserted(node(n, gpus=100))
    where: dict[str, str] = {}
    for op, p, n in steps:
        name = f"p{p}"
        key = PodKey("default", name)
        if op == "assume" and name not in where:
            cache.assume([(bound_pod(pod(name, gpus=p + 1), nodes[n]), "")])
            where[name] = nodes[n]
        elif op == "forget" and cache.is_assumed(key):
            cache.forget([key])
            del where[name]
        elif op == "confirm" and name in where:
            cache.pod_upserted(pod(name, gpus=p + 1, node_name=where[name]))
        elif op == "delete":
            cache.pod_deleted(pod(name))
            where.pop(name, None)
        elif op == "finish":
            cache.finish_binding([key], now=0.0)
    snap = cache.snapshot()
    gpu = snap.resource_index(GPU)
    expected = np.full(3, 100)
    for name, n in where.items():
        expected[nodes.index(n)] -= int(name[1:]) + 1
    assert snap.free[:, gpu].tolist() == expected.tolist()


@settings(max_examples=60, deadline=None)
@given(ops, st.integers(1, 8))
def test_incremental_snapshots_match_a_fresh_build(steps: list[tuple[str, int, int]], overlay: int) -> None:
    """A snapshot taken after every step (so each one extends the last) equals one built from scratch."""
    cache = SchedulerCache(max_departed=overlay)
    nodes = ["n0", "n1", "n2"]
    infos = [node(n, gpus=100) for n in nodes]
    for info in infos:
        cache.node_upserted(info)
    where: dict[str, str] = {}
    for op, p, n in steps:
        name = f"p{p}"
        key = PodKey("default", name)
        if op == "assume" and name not in where:
            cache.assume([(bound_pod(pod(name, gpus=p + 1), nodes[n]), "")])
            where[name] = nodes[n]
        elif op == "forget" and cache.is_assumed(key):
            cache.forget([key])
            del where[name]
        elif op == "confirm" and name in where:
            cache.pod_upserted(pod(name, gpus=p + 1, node_name=where[name]))
        elif op == "delete":
            cache.pod_deleted(pod(name))
            where.pop(name, None)
        elif op == "finish":
            cache.finish_binding([key], now=0.0)
        snap = cache.snapshot()
        fresh = Snapshot.build(
            [node_info(info) for info in infos],
            [bound_pod(pod(name, gpus=int(name[1:]) + 1), at) for name, at in where.items()],
        )
        assert snap.free.tolist() == fresh.free.tolist()
        assert snap.pod_count.tolist() == fresh.pod_count.tolist()
        assert sorted((p.name, p.node) for p in snap.live_pods) == sorted((p.name, p.node) for p in fresh.live_pods)
        assert sorted(snap.pod_node[snap.pod_alive].tolist()) == sorted(fresh.pod_node.tolist())


def test_snapshot_extends_the_last_one_when_a_gang_is_assumed() -> None:
    """Assuming pods after a snapshot layers only the new pods onto it (the earlier ones stay in place)."""
    cache = SchedulerCache()
    cache.node_upserted(node("n1", gpus=8))
    cache.assume([(bound_pod(pod("a", gpus=2), "n1"), "")])
    first = cache.snapshot()
    cache.pod_upserted(pod("a", gpus=2, node_name="n1"))  # confirmation with the same pod keeps the snapshot
    assert cache.snapshot() is first
    cache.assume([(bound_pod(pod("b", gpus=2), "n1"), "")])
    second = cache.snapshot()
    assert second.pods[: len(first.pods)] == tuple(first.pods)
    assert free_gpus(cache, "n1") == 4

"""Lease-based leader election between candidates over real HTTP (a mini API, and grove-sim for the namespace
and fencing cases), with a fake clock for expiry."""

from __future__ import annotations

import asyncio

import pytest
import structlog

from grove_runtime.client import KubeClient
from grove_runtime.clock import FakeClock
from grove_runtime.leaderelection import LeaderElector
from grove_runtime.resources import LEASES as LEASES_RT
from grove_runtime.resources import NAMESPACES
from grove_sim.testing import SimCluster

from .conftest import MiniApi
from .helpers import eventually

LEASES = "apis/coordination.k8s.io/v1/leases"


def elector(client: KubeClient, identity: str, clock: FakeClock, namespace: str = "ns") -> LeaderElector:
    return LeaderElector(
        client,
        namespace=namespace,
        name="lock",
        identity=identity,
        lease_duration=15,
        renew_deadline=10,
        retry_period=2,
        clock=clock,
    )


def lease(api: MiniApi) -> dict[str, object]:
    spec = api.objects[(LEASES, "ns", "lock")]["spec"]
    assert isinstance(spec, dict)
    return spec


async def test_one_wins_and_the_other_takes_over_after_release(mini_api: MiniApi, mini_client: KubeClient) -> None:
    """The first candidate creates the Lease; the second waits, then acquires once it is released."""
    clock = FakeClock()
    a, b = elector(mini_client, "a", clock), elector(mini_client, "b", clock)
    assert await a.try_acquire_or_renew()
    assert not await b.try_acquire_or_renew()
    assert lease(mini_api)["holderIdentity"] == "a"
    assert await a.release()
    assert lease(mini_api)["holderIdentity"] == ""
    assert await b.try_acquire_or_renew()
    assert lease(mini_api)["holderIdentity"] == "b"
    assert not a.is_leader


async def test_takeover_after_expiry_counts_a_transition(mini_api: MiniApi, mini_client: KubeClient) -> None:
    """A lease not renewed for its duration (on the observer's clock) is taken over and leaseTransitions bumps."""
    clock = FakeClock()
    a, b = elector(mini_client, "a", clock), elector(mini_client, "b", clock)
    assert await a.try_acquire_or_renew()
    assert not await b.try_acquire_or_renew()
    clock.advance(14)
    assert not await b.try_acquire_or_renew()
    clock.advance(1)
    assert await b.try_acquire_or_renew()
    assert lease(mini_api)["holderIdentity"] == "b"
    assert lease(mini_api)["leaseTransitions"] == 1


async def test_renewal_keeps_lease_alive(mini_api: MiniApi, mini_client: KubeClient) -> None:
    """A renewing holder changes renewTime, so an observer never sees it expire."""
    clock = FakeClock()
    a, b = elector(mini_client, "a", clock), elector(mini_client, "b", clock)
    assert await a.try_acquire_or_renew()
    for _ in range(10):
        assert not await b.try_acquire_or_renew()
        clock.advance(5)
        assert await a.try_acquire_or_renew()
    assert lease(mini_api)["holderIdentity"] == "a"


async def test_concurrent_candidates_produce_exactly_one_leader(mini_api: MiniApi, mini_client: KubeClient) -> None:
    """Racing candidates on a free lease: optimistic concurrency (409) leaves exactly one leader."""
    clock = FakeClock()
    a = elector(mini_client, "a", clock)
    assert await a.try_acquire_or_renew()
    assert await a.release()
    candidates = [elector(mini_client, f"c{i}", clock) for i in range(5)]
    results = await asyncio.gather(*(c.try_acquire_or_renew() for c in candidates))
    assert sum(results) == 1
    assert lease(mini_api)["holderIdentity"] == next(
        c.identity for c, ok in zip(candidates, results, strict=True) if ok
    )


async def test_hold_returns_when_renewals_fail_past_deadline(mini_api: MiniApi, mini_client: KubeClient) -> None:
    """hold() ends (leadership lost) once no renewal succeeded for renew_deadline."""
    clock = FakeClock()
    a = elector(mini_client, "a", clock)
    assert await a.try_acquire_or_renew()
    stolen = dict(mini_api.objects[(LEASES, "ns", "lock")])
    stolen["spec"] = {**lease(mini_api), "holderIdentity": "intruder", "renewTime": "later"}
    mini_api.put(LEASES, stolen)
    task = asyncio.ensure_future(a.hold())
    while not task.done():
        await eventually(lambda: clock.sleepers >= 1 or task.done())
        clock.advance(2)
        await asyncio.sleep(0.01)
    await task
    assert not a.is_leader
    assert not await a.release()


def test_rejects_inconsistent_durations(mini_client: KubeClient) -> None:
    """lease_duration > renew_deadline > retry_period is enforced."""
    with pytest.raises(ValueError, match="lease_duration"):
        LeaderElector(mini_client, namespace="n", name="l", identity="i", lease_duration=5, renew_deadline=10)


async def test_a_missing_lease_namespace_is_waited_for_with_backoff_and_said_once(sim: SimCluster) -> None:
    """Through grove-sim: while the Lease's namespace does not exist the candidate retries with a doubling delay
    (capped at the lease duration) and logs that it waits once, not per attempt; it leads once the namespace
    exists."""
    clock = FakeClock()
    async with await KubeClient.from_kubeconfig(sim.kubeconfig) as kube:
        candidate = elector(kube, "a", clock, namespace="lease-later")
        with structlog.testing.capture_logs() as logs:
            task = asyncio.ensure_future(candidate.acquire())
            delays = []
            for _ in range(5):
                await eventually(lambda: clock.sleepers >= 1 or task.done())
                assert not task.done()
                delays.append(clock.pending_delays()[0])
                clock.advance(delays[-1])
            assert delays == [4, 8, 15, 15, 15]
            assert [e["event"] for e in logs] == ["waiting for the lease namespace to exist"]
            namespace = {"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": "lease-later"}}
            await kube.create(NAMESPACES, namespace)
            while not task.done():
                await eventually(lambda: clock.sleepers >= 1 or task.done())
                clock.advance(15)
            await task
    assert candidate.is_leader
    assert [e["event"] for e in logs] == ["waiting for the lease namespace to exist", "became leader"]


async def test_leading_ends_at_the_renew_deadline_and_a_late_holder_does_not_renew(sim: SimCluster) -> None:
    """Through grove-sim: `leading()` holds until renew_deadline after the last renewal; a holder that wakes after
    that (it was frozen) reports the loss without writing the Lease again."""
    clock = FakeClock()
    async with await KubeClient.from_kubeconfig(sim.kubeconfig) as kube:
        candidate = elector(kube, "a", clock, namespace="default")
        assert not candidate.leading()
        assert await candidate.try_acquire_or_renew()
        assert candidate.leading()
        written = (await kube.get(LEASES_RT, "lock", "default"))["metadata"]["resourceVersion"]
        clock.advance(9.9)
        assert candidate.leading()
        clock.advance(0.2)
        assert not candidate.leading()
        task = asyncio.ensure_future(candidate.hold())
        await eventually(lambda: clock.sleepers >= 1)
        clock.advance(2)
        await task
        assert not candidate.is_leader
        assert (await kube.get(LEASES_RT, "lock", "default"))["metadata"]["resourceVersion"] == written

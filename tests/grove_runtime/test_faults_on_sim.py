"""grove_runtime's failure handling against grove-sim's fault injection (the server every other test uses), where
the hand-written ``MiniApi`` used to script the failures.

Kept on ``MiniApi`` (a fake is really needed there): an exact scripted sequence of answers (two 429s then a 503
then success, ``test_client.py``), codes grove-sim never injects (a 422 from a fault, a 403 on an Event, a 410 on a
list), deletes the informer must not see (``remove(..., silently=True)``), malformed watch events, and request
recording (paths, content types, headers).
"""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator
from typing import Any

import aiohttp
import pytest

from grove_runtime import errors
from grove_runtime.client import KubeClient, RetryPolicy
from grove_runtime.informer import Informer, running
from grove_runtime.keys import ObjectKey
from grove_runtime.leaderelection import LeaderElector
from grove_runtime.manager import Manager
from grove_runtime.resources import CONFIGMAPS, LEASES, NODES, PODS
from grove_sim.http.fault_config import FaultConfig
from grove_sim.server import SIM_TOKEN, SimServer
from grove_sim.testing import SimCluster

ADMIN = {"Authorization": f"Bearer {SIM_TOKEN}"}


@pytest.fixture
async def faulty(sim: SimCluster) -> AsyncIterator[SimCluster]:
    """The module's sim; every fault is switched off again after the test."""
    yield sim

    def off(server: SimServer) -> None:
        assert server.context.faults is not None
        server.context.faults.configure(FaultConfig())

    sim.call(off)


async def set_faults(sim: SimCluster, doc: dict[str, Any] | None) -> None:
    async with aiohttp.ClientSession(headers=ADMIN) as session:
        method = (
            session.delete(sim.url + "/sim/faults") if doc is None else session.put(sim.url + "/sim/faults", json=doc)
        )
        async with method as response:
            assert response.status == 200


async def injected(sim: SimCluster, kind: str) -> int:
    """How many faults of a kind grove-sim has injected so far."""
    async with aiohttp.ClientSession(headers=ADMIN) as session, session.get(sim.url + "/metrics") as response:
        text = await response.text()
    return sum(
        int(float(line.rsplit(" ", 1)[1]))
        for line in text.splitlines()
        if line.startswith(f'grove_sim_injected_faults_total{{kind="{kind}"')
    )


@pytest.fixture
async def fast_client(sim: SimCluster) -> AsyncIterator[KubeClient]:
    """A client for the sim with four quick attempts per request."""
    client = await KubeClient.from_kubeconfig(
        sim.kubeconfig, retry=RetryPolicy(attempts=4, initial=0.001, maximum=0.01)
    )
    try:
        yield client
    finally:
        await client.close()


async def test_a_persistent_500_surfaces_after_the_attempts(faulty: SimCluster, fast_client: KubeClient) -> None:
    """Every GET answered 500: the client tries exactly its four attempts, then raises ServerError."""
    await set_faults(faulty, {"errors": [{"code": 500, "rate": 1.0, "verbs": ["get"]}]})
    before = await injected(faulty, "error_500")
    with pytest.raises(errors.ServerError):
        await fast_client.get(CONFIGMAPS, "absent", "default")
    assert await injected(faulty, "error_500") - before == 4


async def test_informer_lists_through_server_errors_and_recovers(
    faulty: SimCluster, fast_client: KubeClient, namespace: str
) -> None:
    """While every list fails with 500 the informer backs off and retries; once the errors stop it syncs."""
    await fast_client.create(CONFIGMAPS, {"metadata": {"name": "a", "namespace": namespace}})
    await set_faults(faulty, {"errors": [{"code": 500, "rate": 1.0, "verbs": ["list"]}]})
    before = await injected(faulty, "error_500")
    informer = Informer(fast_client, CONFIGMAPS, namespace=namespace, backoff=(0.001, 0.01))

    async def off_when_failed() -> None:
        async with asyncio.timeout(60):  # only guards against a hang
            while await injected(faulty, "error_500") - before < 8:  # noqa: ASYNC110 - two rounds of attempts
                await asyncio.sleep(0.05)
        await set_faults(faulty, None)

    stopper = asyncio.ensure_future(off_when_failed())
    async with running(informer):
        assert ObjectKey(namespace, "a") in informer.store
    await stopper


async def test_stop_does_not_wait_for_an_unreachable_api_server(
    faulty: SimCluster, fast_client: KubeClient, namespace: str
) -> None:
    """A stopping leader whose lease release meets 429 with a Retry-After of an hour gives up after the release
    timeout and returns, leaving the lease to expire, instead of retrying for minutes."""
    elector = LeaderElector(
        fast_client, namespace=namespace, name="mgr", identity="m1", lease_duration=3.0, renew_deadline=1.0,
        retry_period=0.05,
    )  # fmt: skip
    manager = Manager(fast_client, elector=elector, health_port=None, release_timeout=0.05)
    task = asyncio.ensure_future(manager.run(handle_signals=False))
    await manager.started.wait()
    await set_faults(faulty, {"errors": [{"code": 429, "rate": 1.0, "retryAfterSeconds": 3600}]})
    manager.stop()
    await asyncio.wait_for(task, 30)
    await set_faults(faulty, None)
    lease = await fast_client.get(LEASES, "mgr", namespace)
    assert lease["spec"]["holderIdentity"] == "m1"


async def test_a_fenced_bind_is_not_retried_once_the_fence_falls(faulty: SimCluster, fast_client: KubeClient) -> None:
    """A bind answered 503 is retried after a backoff; a leader that lost its lease meanwhile (its fence now says
    no) must not send the retry: it raises Fenced and the pod stays unbound. Without the per-attempt fence a
    deposed scheduler's retry could bind onto capacity its successor already gave away."""
    pod = {"apiVersion": "v1", "kind": "Pod", "metadata": {"name": "fenced", "namespace": "default"},
           "spec": {"containers": [{"name": "c", "image": "busybox"}]}}  # fmt: skip
    await fast_client.create(PODS, pod)
    node = (await fast_client.list(NODES))["items"][0]["metadata"]["name"]
    await set_faults(
        faulty, {"errors": [{"code": 503, "rate": 1.0, "verbs": ["create"], "resources": ["pods/binding"]}]}
    )
    asked: list[bool] = []

    def fence() -> bool:  # leading for the first attempt only
        asked.append(True)
        return len(asked) == 1

    with pytest.raises(errors.Fenced):
        await fast_client.bind("default", "fenced", node, fence=fence)
    assert await injected(faulty, "error_503") >= 1
    assert len(asked) == 2  # asked before the first attempt and before the retry, which it stopped
    await set_faults(faulty, None)
    assert not (await fast_client.get(PODS, "fenced", "default"))["spec"].get("nodeName")


async def test_fenced_writes_stop_when_the_fence_falls_and_reads_go_on(
    faulty: SimCluster, fast_client: KubeClient
) -> None:
    """The operator's controllers write through `fenced_writes(elector.leading)`: while leading a write goes
    through; once the fence says no (a leader resumed after its lease ran out) every write raises Fenced and
    changes nothing, while reads still work."""
    leading = [True]
    writer = fast_client.fenced_writes(lambda: leading[0])
    cm = {"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": "fenced-cm", "namespace": "default"}}
    await writer.create(CONFIGMAPS, cm, "default")
    leading[0] = False
    with pytest.raises(errors.Fenced):
        await writer.patch(CONFIGMAPS, "fenced-cm", {"data": {"late": "write"}}, "default")
    with pytest.raises(errors.Fenced):
        await writer.delete(CONFIGMAPS, "fenced-cm", "default")
    stored = await writer.get(CONFIGMAPS, "fenced-cm", "default")
    assert "data" not in stored
    await fast_client.delete(CONFIGMAPS, "fenced-cm", "default")

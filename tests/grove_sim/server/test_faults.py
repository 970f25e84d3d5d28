"""Fault injection: off by default; seeded errors that real clients see and the counters match; a paused server
resumes; dropped and expired watches that our informer re-establishes; only the administrator configures it."""

from __future__ import annotations

import asyncio
import base64
import datetime as dt
import os
import random
import re
import subprocess
from collections.abc import Iterator
from typing import Any

import aiohttp
import pytest
from kubernetes_asyncio import client, config
from kubernetes_asyncio.client.rest import ApiException

from grove_runtime.client import KubeClient, RetryPolicy
from grove_runtime.informer import Informer
from grove_runtime.resources import CONFIGMAPS
from grove_sim.cli import build_parser
from grove_sim.http.fault_config import FaultConfig
from grove_sim.server import SIM_TOKEN, SimOptions, SimServer
from grove_sim.testing import SimCluster

from .conftest import eventually

ADMIN = {"Authorization": f"Bearer {SIM_TOKEN}"}
KUBECTL = "/usr/bin/kubectl"
_SAMPLE = re.compile(r'^grove_sim_injected_faults_total\{kind="([^"]+)",resource="([^"]*)",verb="([^"]*)"\} (\S+)$')


@pytest.fixture
def faulty(sim: SimCluster) -> Iterator[SimCluster]:
    """The module's sim; every fault is switched off again after the test."""
    yield sim

    def off(server: SimServer) -> None:
        assert server.context.faults is not None
        server.context.faults.configure(FaultConfig())

    sim.call(off)


async def put_faults(sim: SimCluster, doc: dict[str, Any], headers: dict[str, str] | None = None) -> Any:
    async with (
        aiohttp.ClientSession() as session,
        session.put(sim.url + "/sim/faults", json=doc, headers=ADMIN if headers is None else headers) as response,
    ):
        return response.status, await response.json()


async def counters(sim: SimCluster) -> dict[tuple[str, str, str], float]:
    """``grove_sim_injected_faults_total`` samples by (kind, verb, resource), read from the sim's /metrics."""
    async with aiohttp.ClientSession() as session, session.get(sim.url + "/metrics", headers=ADMIN) as response:
        text = await response.text()
    found = {}
    for line in text.splitlines():
        if match := _SAMPLE.match(line):
            kind, resource, verb, value = match.groups()
            found[(kind, verb, resource)] = float(value)
    return found


def delta(before: dict[tuple[str, str, str], float], after: dict[tuple[str, str, str], float]) -> dict[Any, int]:
    return {key: int(value - before.get(key, 0)) for key, value in after.items() if value != before.get(key, 0)}


async def test_nothing_is_injected_by_default_and_only_the_administrator_configures(faulty: SimCluster) -> None:
    """A fresh sim has no fault in force and no counter moved; an anonymous caller is refused (403); a bad document
    is a 400 naming the field; the configuration reads back normalised."""
    async with aiohttp.ClientSession() as session, session.get(faulty.url + "/sim/faults", headers=ADMIN) as got:
        assert await got.json() == {"seed": 0, "paused": False, "errors": []}
    assert await counters(faulty) == {}
    status, body = await put_faults(faulty, {"errors": []}, headers={})
    assert (status, body["reason"]) == (403, "Forbidden")
    status, body = await put_faults(faulty, {"errors": [{"code": 404, "rate": 0.5}]})
    assert status == 400
    assert body["message"] == "invalid fault configuration: errors[0].code: must be one of 409, 429, 500, 503"
    status, body = await put_faults(faulty, {"seed": 4, "errors": [{"code": 429, "rate": 1, "verbs": ["get"]}]})
    assert (status, body["errors"]) == (200, [{"code": 429, "rate": 1.0, "retryAfterSeconds": 1, "verbs": ["get"]}])


async def _statuses(sim: SimCluster, count: int) -> list[int]:
    seen = []
    async with aiohttp.ClientSession() as session:
        for _ in range(count):
            async with session.get(sim.url + "/api/v1/namespaces/default/configmaps", headers=ADMIN) as response:
                seen.append(response.status)
    return seen


async def test_the_same_seed_gives_the_same_faults(faulty: SimCluster) -> None:
    """Faults are drawn from the seed: the same requests meet the same faults; another seed, others."""
    doc = {"seed": 11, "errors": [{"code": 503, "rate": 0.3}, {"code": 500, "rate": 0.2}]}
    await put_faults(faulty, doc)
    first = await _statuses(faulty, 60)
    await put_faults(faulty, doc)
    assert await _statuses(faulty, 60) == first
    assert {503, 500, 200} <= set(first)
    await put_faults(faulty, {**doc, "seed": 12})
    assert await _statuses(faulty, 60) != first


async def test_latency_applies_to_the_requests_in_its_scope(faulty: SimCluster) -> None:
    """Half the lists of configmaps are delayed (the seeded draw decides which, as documented); nothing else is."""
    await put_faults(faulty, {"seed": 21, "latency": {"seconds": 0.001, "rate": 0.5, "verbs": ["list"]}})
    before = await counters(faulty)
    assert await _statuses(faulty, 40) == [200] * 40
    async with (
        aiohttp.ClientSession() as session,
        session.get(faulty.url + "/api/v1/namespaces/default", headers=ADMIN) as response,
    ):
        assert response.status == 200
    draws = random.Random("21:latency")
    expected = sum(draws.random() < 0.5 for _ in range(40))
    assert delta(before, await counters(faulty)) == {("latency", "list", "configmaps"): expected}
    assert 0 < expected < 40


class CountingClock:
    """A clock whose sleeps return at once and are counted: each one is a retry the client decided to make."""

    def __init__(self) -> None:
        self.sleeps = 0

    def monotonic(self) -> float:
        return asyncio.get_running_loop().time()

    def now(self) -> dt.datetime:
        return dt.datetime.now(dt.UTC)

    async def sleep(self, seconds: float) -> None:
        self.sleeps += 1


async def test_five_percent_errors_are_retried_by_our_client_and_counted(faulty: SimCluster, namespace: str) -> None:
    """With 5% of creates failing (500, 503, 429 with Retry-After), grove_runtime's client retries each one and
    every create succeeds; the retries it made equal the faults the sim counted."""
    await put_faults(
        faulty,
        {
            "seed": 5,
            "errors": [
                {"code": 500, "rate": 0.02, "verbs": ["create"], "resources": ["configmaps"]},
                {"code": 503, "rate": 0.02, "verbs": ["create"], "resources": ["configmaps"]},
                {"code": 429, "rate": 0.01, "verbs": ["create"], "resources": ["configmaps"], "retryAfterSeconds": 0},
            ],
        },
    )
    before = await counters(faulty)
    clock = CountingClock()
    kube = await KubeClient.from_kubeconfig(faulty.kubeconfig, clock=clock, retry=RetryPolicy(attempts=10))
    try:
        for i in range(300):
            await kube.create(CONFIGMAPS, {"metadata": {"name": f"cm-{i}"}, "data": {"i": str(i)}}, namespace)
    finally:
        await kube.close()
    injected = delta(before, await counters(faulty))
    assert set(injected) <= {(f"error_{code}", "create", "configmaps") for code in (500, 503, 429)}
    assert sum(injected.values()) == clock.sleeps > 0


async def test_kubernetes_asyncio_sees_each_fault_the_sim_counts(faulty: SimCluster, namespace: str) -> None:
    """A kubernetes-asyncio client that retries on its own sees every injected error as an ApiException with the
    injected status (409s included), and the per-kind counts equal the sim's counters."""
    await put_faults(
        faulty,
        {
            "seed": 9,
            "errors": [
                {"code": 409, "rate": 0.02, "verbs": ["list"], "resources": ["configmaps"]},
                {"code": 503, "rate": 0.03, "verbs": ["list"], "resources": ["configmaps"]},
            ],
        },
    )
    before = await counters(faulty)
    configuration = client.Configuration()
    await config.load_kube_config(config_file=faulty.kubeconfig, client_configuration=configuration)
    seen: dict[int, int] = {}
    async with client.ApiClient(configuration=configuration) as api:
        core = client.CoreV1Api(api)
        done = 0
        while done < 200:
            try:
                await core.list_namespaced_config_map(namespace)
                done += 1
            except ApiException as exc:
                seen[exc.status] = seen.get(exc.status, 0) + 1
    injected = delta(before, await counters(faulty))
    assert {int(kind.split("_")[1]): n for (kind, _, _), n in injected.items()} == seen
    assert set(seen) == {409, 503}


@pytest.mark.kubectl
async def test_kubectl_sees_the_faults_and_retries_429(faulty: SimCluster, kubectl_env: dict[str, str]) -> None:
    """kubectl fails a ``get`` that meets a 503 (it does not retry those) and silently retries a 429 with
    ``Retry-After`` (client-go does); both counts equal the sim's counters."""
    await put_faults(
        faulty,
        {
            "seed": 3,
            "errors": [
                {"code": 503, "rate": 0.05, "verbs": ["list"], "resources": ["configmaps"]},
                {"code": 429, "rate": 0.05, "verbs": ["list"], "resources": ["configmaps"], "retryAfterSeconds": 0},
            ],
        },
    )
    before = await counters(faulty)
    failed = retried = 0
    for _ in range(40):
        result = await asyncio.to_thread(
            subprocess.run,
            [KUBECTL, "get", "configmaps", "-n", "default", "-v=6"],
            capture_output=True,
            text=True,
            env=kubectl_env,
            timeout=60,
            check=False,
        )
        retried += result.stderr.count(" 429 Too Many Requests")
        if result.returncode != 0:
            assert "the server is currently unable to handle the request" in result.stderr
            failed += 1
    injected = delta(before, await counters(faulty))
    assert injected.get(("error_503", "list", "configmaps"), 0) == failed > 0
    assert injected.get(("error_429", "list", "configmaps"), 0) == retried > 0


async def test_a_paused_server_holds_requests_until_resumed(faulty: SimCluster) -> None:
    """While paused every API request waits (the pause is counted as it is met); resuming answers them."""
    await put_faults(faulty, {"paused": True})
    held = asyncio.ensure_future(_statuses(faulty, 1))

    async def held_once() -> bool:
        return any(kind == "paused" for kind, _, _ in await counters(faulty))

    await eventually(held_once)
    assert not held.done()
    status, body = await put_faults(faulty, {"paused": False})
    assert (status, body["paused"]) == (200, False)
    assert await held == [200]


async def _account_token(sim: SimCluster, namespace: str, account: str) -> str:
    """The bearer token of a new service account's token Secret, once the token controller has filled it."""
    secret = {
        "metadata": {"name": f"{account}-token", "annotations": {"kubernetes.io/service-account.name": account}},
        "type": "kubernetes.io/service-account-token",
    }
    base = f"{sim.url}/api/v1/namespaces/{namespace}"
    async with aiohttp.ClientSession(headers=ADMIN) as session:
        async with session.post(f"{base}/serviceaccounts", json={"metadata": {"name": account}}) as created:
            assert created.status == 201
        async with session.post(f"{base}/secrets", json=secret) as created:
            assert created.status == 201

        async def filled() -> str | None:
            async with session.get(f"{base}/secrets/{account}-token") as got:
                token = ((await got.json()).get("data") or {}).get("token")
            return base64.b64decode(token).decode() if token else None

        return str(await eventually(filled))


async def test_exempt_users_meet_no_fault(faulty: SimCluster, namespace: str) -> None:
    """An observer's service account named in ``exemptUsers`` is served through every fault, a pause included,
    while the administrator's requests still fail; the exemption reads back and is validated."""
    token = await _account_token(faulty, namespace, "observer")
    observer = f"system:serviceaccount:{namespace}:observer"
    status, body = await put_faults(faulty, {"errors": [{"code": 503, "rate": 1.0}], "exemptUsers": [observer]})
    assert (status, body["exemptUsers"]) == (200, [observer])
    url = f"{faulty.url}/api/v1/namespaces/{namespace}/configmaps"
    async with aiohttp.ClientSession() as session:
        async with session.get(url, headers=ADMIN) as response:
            assert response.status == 503
        async with session.get(url, headers={"Authorization": f"Bearer {token}"}) as response:
            assert response.status == 200
        await put_faults(faulty, {"paused": True, "exemptUsers": [observer]})
        async with session.get(url, headers={"Authorization": f"Bearer {token}"}) as response:
            assert response.status == 200
        await put_faults(faulty, {"paused": False})
    status, body = await put_faults(faulty, {"exemptUsers": [""]})
    assert status == 400
    assert "exemptUsers" in body["message"]


async def test_our_informer_survives_dropped_and_expired_watches(faulty: SimCluster, namespace: str) -> None:
    """Every watch is cut within 0.2 s and every re-watch answered 410 Expired: grove_runtime's informer re-lists
    and re-watches and still ends with every object; the sim counted the drops and expiries it caused."""
    await put_faults(
        faulty, {"seed": 2, "dropWatches": {"rate": 1.0, "afterSeconds": 0.2}, "expireRewatches": {"rate": 0.5}}
    )
    before = await counters(faulty)
    kube = await KubeClient.from_kubeconfig(faulty.kubeconfig)
    informer = Informer(kube, CONFIGMAPS, namespace=namespace, backoff=(0.01, 0.05))
    task = asyncio.ensure_future(informer.run())
    try:
        await informer.wait_synced()
        for i in range(30):
            await kube.create(CONFIGMAPS, {"metadata": {"name": f"w-{i}"}}, namespace)
            await asyncio.sleep(0.02)

        async def caught_up() -> bool:
            return len(informer.store.list()) == 30 and informer.watches >= 3

        await eventually(caught_up, attempts=3000)
    finally:
        task.cancel()
        await asyncio.gather(task, return_exceptions=True)
        await kube.close()
    injected = delta(before, await counters(faulty))
    assert injected.get(("watch_drop", "watch", "configmaps"), 0) >= 2
    assert informer.lists >= 1 + injected.get(("watch_expired", "watch", "configmaps"), 0)


def test_faults_can_be_set_at_start() -> None:
    """``SimOptions.faults`` (``grove-sim up --faults``) puts a configuration in force before the first request."""
    args = build_parser().parse_args(
        ["up", "--kubeconfig", os.devnull, "--faults", '{"seed": 1, "errors": [{"code": 500, "rate": 1.0}]}']
    )
    with SimCluster(SimOptions(faults=args.faults)) as started:
        assert asyncio.run(_statuses(started, 3)) == [500, 500, 500]

"""The webhook certificate in a shared Secret, its renewal, and the registration of webhook configurations, against
grove-sim; time moves on a fake clock."""

from __future__ import annotations

import asyncio
import base64
import datetime as dt
import uuid
from collections.abc import AsyncIterator

import pytest
from prometheus_client import CollectorRegistry

from grove_runtime.client import KubeClient
from grove_runtime.clock import FakeClock
from grove_runtime.resources import NAMESPACES, SECRETS
from grove_runtime.webhook import certs
from grove_runtime.webhook.certsource import CertificateKeeper, FileCertificates, SecretCertificates
from grove_runtime.webhook.registration import (
    VALIDATING_CONFIGURATIONS,
    ClientTarget,
    ConfigurationSpec,
    WebhookSpec,
    ensure_configurations,
    remove_configurations,
    rule,
)
from grove_runtime.webhook.server import WebhookServer
from grove_sim.testing import SimCluster

NAMES = ["hooks", "hooks.ns.svc", "127.0.0.1"]


@pytest.fixture
async def kube(sim: SimCluster) -> AsyncIterator[KubeClient]:
    """A client of the module's cluster."""
    async with await KubeClient.from_kubeconfig(sim.kubeconfig) as client:
        yield client


@pytest.fixture
async def namespace(kube: KubeClient) -> str:
    """A fresh namespace for the Secret."""
    name = f"certs-{uuid.uuid4().hex[:6]}"
    await kube.create(NAMESPACES, {"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": name}})
    return name


def _source(kube: KubeClient, namespace: str, clock: FakeClock, names: list[str] = NAMES) -> SecretCertificates:
    return SecretCertificates(kube, namespace, "webhook-cert", names, clock)


async def test_replicas_starting_together_share_one_certificate(kube: KubeClient, namespace: str) -> None:
    """Three replicas racing to create the Secret end up with the same CA and serving certificate."""
    clock = FakeClock(wall=dt.datetime.now(dt.UTC))
    bundles = await asyncio.gather(*(_source(kube, namespace, clock).load() for _ in range(3)))
    assert len({b.ca_cert for b in bundles}) == 1
    assert len({b.cert for b in bundles}) == 1
    secret = await kube.get(SECRETS, "webhook-cert", namespace)
    assert secret["type"] == "kubernetes.io/tls"
    assert base64.b64decode(secret["data"]["ca.crt"]) == bundles[0].ca_cert


async def test_serving_certificate_is_renewed_before_expiry_by_the_same_ca(kube: KubeClient, namespace: str) -> None:
    """Past two thirds of its lifetime the serving certificate is re-issued by the same CA, so the CA bundle in
    the webhook configurations stays valid; every replica then loads the renewed one."""
    clock = FakeClock(wall=dt.datetime.now(dt.UTC))
    first = await _source(kube, namespace, clock).load()
    clock.advance(dt.timedelta(days=200).total_seconds())
    assert await _source(kube, namespace, clock).load() == first
    clock.advance(dt.timedelta(days=50).total_seconds())
    renewed = await _source(kube, namespace, clock).load()
    assert renewed.cert != first.cert
    assert renewed.ca_cert == first.ca_cert
    assert not certs.renewal_due(renewed.cert, clock.now())
    assert await _source(kube, namespace, clock).load() == renewed


async def test_a_renewed_ca_keeps_the_old_one_trusted(kube: KubeClient, namespace: str) -> None:
    """When the CA itself is due, the bundle carries the new CA first and the old one after it."""
    clock = FakeClock(wall=dt.datetime.now(dt.UTC))
    first = await _source(kube, namespace, clock).load()
    clock.advance(dt.timedelta(days=2500).total_seconds())
    renewed = await _source(kube, namespace, clock).load()
    assert renewed.ca_cert.endswith(first.ca_cert)
    assert renewed.ca_cert != first.ca_cert


async def test_a_replica_needing_another_name_widens_the_certificate(kube: KubeClient, namespace: str) -> None:
    """A replica listening on another address re-issues the certificate for both names' union."""
    clock = FakeClock(wall=dt.datetime.now(dt.UTC))
    await _source(kube, namespace, clock).load()
    widened = await _source(kube, namespace, clock, [*NAMES, "10.0.0.7"]).load()
    assert certs.covers(widened.cert, [*NAMES, "10.0.0.7"])


async def test_keeper_serves_renewals_and_reports_changes(kube: KubeClient, namespace: str) -> None:
    """The keeper's periodic check loads a renewed certificate into the server and reports it once."""
    clock = FakeClock(wall=dt.datetime.now(dt.UTC))
    server = WebhookServer(port=0, prefix="keeper", registry=CollectorRegistry())
    seen: list[bytes] = []

    async def changed(bundle: certs.CertBundle) -> None:
        seen.append(bundle.cert)

    keeper = CertificateKeeper(_source(kube, namespace, clock), server, clock, on_change=changed, interval=3600)
    await keeper.refresh()
    task = asyncio.ensure_future(keeper.run())
    try:
        async with asyncio.timeout(10):
            while not clock.sleepers:  # noqa: ASYNC110 - the keeper parks on the fake clock
                await asyncio.sleep(0.01)
        clock.advance(dt.timedelta(days=250).total_seconds())
        async with asyncio.timeout(10):
            while len(seen) < 2:  # noqa: ASYNC110 - waiting for the keeper's own task, no event to await
                await asyncio.sleep(0.01)
    finally:
        task.cancel()
        await asyncio.gather(task, return_exceptions=True)
    assert seen[1] != seen[0]
    assert keeper.current is not None
    assert keeper.current.cert == seen[1]


async def test_file_certificates_use_ca_crt_or_the_chain(tmp_path: object) -> None:
    """Files mode reads tls.crt/tls.key, with ca.crt as the bundle when present."""
    from pathlib import Path

    folder = Path(str(tmp_path))
    bundle = certs.issue(["127.0.0.1"], dt.datetime.now(dt.UTC))
    (folder / "tls.crt").write_bytes(bundle.cert)
    (folder / "tls.key").write_bytes(bundle.key)
    assert (await FileCertificates(folder).load()).ca_cert == bundle.cert
    (folder / "ca.crt").write_bytes(bundle.ca_cert)
    assert (await FileCertificates(folder).load()).ca_cert == bundle.ca_cert


def _spec(name: str) -> ConfigurationSpec:
    hook = WebhookSpec("cm.example.io", "/validate", (rule(("",), ("v1",), ("configmaps",), ("CREATE",), "*"),))
    return ConfigurationSpec(name, mutating=False, webhooks=(hook,), labels={"owner": "test"})


async def test_url_mode_owns_the_configuration_and_service_mode_only_injects_the_ca(kube: KubeClient) -> None:
    """url mode writes the whole configuration (again on a new port); service mode leaves a deployed
    configuration's webhooks alone but for their caBundle, and creates one that is missing."""
    name = f"reg-{uuid.uuid4().hex[:6]}"
    await ensure_configurations(kube, [_spec(name)], ClientTarget(url="https://127.0.0.1:1234"), b"CA1")
    await ensure_configurations(kube, [_spec(name)], ClientTarget(url="https://127.0.0.1:5678"), b"CA2")
    found = await kube.get(VALIDATING_CONFIGURATIONS, name)
    assert found["webhooks"][0]["clientConfig"] == {
        "url": "https://127.0.0.1:5678/validate",
        "caBundle": base64.b64encode(b"CA2").decode(),
    }
    found["webhooks"][0]["timeoutSeconds"] = 3
    await kube.update(VALIDATING_CONFIGURATIONS, found)
    service = ClientTarget(service_namespace="ns", service_name="hooks")
    await ensure_configurations(kube, [_spec(name)], service, b"CA3")
    injected = (await kube.get(VALIDATING_CONFIGURATIONS, name))["webhooks"][0]
    assert injected["timeoutSeconds"] == 3
    assert injected["clientConfig"]["url"] == "https://127.0.0.1:5678/validate"
    assert injected["clientConfig"]["caBundle"] == base64.b64encode(b"CA3").decode()
    fresh = f"reg-{uuid.uuid4().hex[:6]}"
    await ensure_configurations(kube, [_spec(fresh)], service, b"CA3")
    created = (await kube.get(VALIDATING_CONFIGURATIONS, fresh))["webhooks"][0]["clientConfig"]
    assert created["service"] == {"namespace": "ns", "name": "hooks", "port": 443, "path": "/validate"}
    await remove_configurations(kube, [_spec(name), _spec(fresh), _spec(fresh)])
    names = [c["metadata"]["name"] for c in (await kube.list(VALIDATING_CONFIGURATIONS))["items"]]
    assert name not in names
    assert fresh not in names

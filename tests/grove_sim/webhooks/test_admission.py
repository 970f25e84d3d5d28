"""grove-sim calls admission webhooks as kube-apiserver does: order, patches, reinvocation, policies, TLS, selectors,
dry run, service references, warnings and users.

Each test serves its webhooks from a real HTTPS server (grove_runtime's) and registers configurations scoped to a
namespace of its own (``namespaceSelector``), so tests sharing the module's cluster never see each other's hooks.
"""

from __future__ import annotations

import asyncio
import base64
import contextlib
import datetime as dt
import uuid
from collections.abc import AsyncIterator, Awaitable, Callable
from typing import Any

import aiohttp
import pytest
from prometheus_client import CollectorRegistry

from grove_runtime import errors
from grove_runtime.client import KubeClient, PatchType, RetryPolicy
from grove_runtime.resources import CONFIGMAPS, NAMESPACES, SERVICES, ResourceType
from grove_runtime.webhook import certs
from grove_runtime.webhook.jsonpatch import create_patch
from grove_runtime.webhook.registration import MUTATING_CONFIGURATIONS, VALIDATING_CONFIGURATIONS
from grove_runtime.webhook.review import AdmissionRequest, AdmissionResponse, allowed, denied
from grove_runtime.webhook.server import WebhookServer
from grove_sim.testing import SimCluster

Obj = dict[str, Any]
ENDPOINTS = ResourceType("", "v1", "endpoints", "Endpoints")
Answer = Callable[[AdmissionRequest], Awaitable[AdmissionResponse]]


class Hooks:
    """A webhook server whose paths answer with test-chosen functions, recording every request."""

    def __init__(self) -> None:
        self.server = WebhookServer(port=0, prefix="hooks", registry=CollectorRegistry())
        self.calls: list[tuple[str, AdmissionRequest]] = []
        self.bundle = certs.issue(["127.0.0.1", "hooks.hooks-ns.svc"], dt.datetime.now(dt.UTC))
        self.server.load_certificate(self.bundle.cert, self.bundle.key)

    def on(self, path: str, answer: Answer) -> None:
        """Serve ``answer`` at ``path``."""
        hooks = self

        class _Recorded:
            async def handle(self, request: AdmissionRequest) -> AdmissionResponse:
                hooks.calls.append((path, request))
                return await answer(request)

        self.server.register(path, path, _Recorded())

    def paths(self) -> list[str]:
        """The paths called, in order."""
        return [path for path, _ in self.calls]

    def url(self, path: str) -> Obj:
        """A url client config for ``path`` trusting this server's CA."""
        return {"url": f"https://127.0.0.1:{self.server.port}{path}", "caBundle": _b64(self.bundle.ca_cert)}


def _b64(data: bytes) -> str:
    return base64.b64encode(data).decode()


def hook(name: str, client: Obj, namespace: str, **extra: Any) -> Obj:
    """A webhook on configmaps of ``namespace`` (CREATE, UPDATE, DELETE), failing closed, no side effects."""
    return {
        "name": name,
        "admissionReviewVersions": ["v1"],
        "clientConfig": client,
        "rules": [
            {
                "apiGroups": [""],
                "apiVersions": ["v1"],
                "resources": ["configmaps"],
                "operations": ["CREATE", "UPDATE", "DELETE"],
            }
        ],
        "namespaceSelector": {"matchLabels": {"kubernetes.io/metadata.name": namespace}},
        "sideEffects": "None",
        "failurePolicy": "Fail",
        "timeoutSeconds": 5,
        **extra,
    }


@pytest.fixture
async def kube(sim: SimCluster) -> AsyncIterator[KubeClient]:
    """The cluster admin's client, which does not retry (a webhook's 500 is the answer under test)."""
    async with await KubeClient.from_kubeconfig(sim.kubeconfig, retry=RetryPolicy(attempts=1)) as client:
        yield client


@pytest.fixture
async def hooks() -> AsyncIterator[Hooks]:
    """A running webhook server."""
    served = Hooks()
    await served.server.start()
    try:
        yield served
    finally:
        await served.server.stop()


@pytest.fixture
async def ns(kube: KubeClient) -> AsyncIterator[str]:
    """A fresh namespace; configurations the test registers (named after it) are removed afterwards."""
    name = f"wh-{uuid.uuid4().hex[:8]}"
    await kube.create(NAMESPACES, {"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": name}})
    yield name
    for rt in (MUTATING_CONFIGURATIONS, VALIDATING_CONFIGURATIONS):
        for config in (await kube.list(rt))["items"]:
            if config["metadata"]["name"].startswith(name):
                await kube.delete(rt, config["metadata"]["name"])


async def register(
    kube: KubeClient, ns: str, *, mutating: list[Obj] | None = None, validating: list[Obj] | None = None
) -> None:
    """Store one configuration of each kind (named after the namespace)."""
    for rt, webhooks in ((MUTATING_CONFIGURATIONS, mutating or []), (VALIDATING_CONFIGURATIONS, validating or [])):
        if webhooks:
            body = {"apiVersion": rt.api_version, "kind": rt.kind, "metadata": {"name": ns}, "webhooks": list(webhooks)}
            await kube.create(rt, body)


def configmap(name: str, **labels: str) -> Obj:
    """A ConfigMap manifest."""
    return {"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": name, "labels": labels}, "data": {"k": "v"}}


def label_patch(request: AdmissionRequest, key: str, value: str) -> AdmissionResponse:
    """Allow with a patch adding one label."""
    assert request.object is not None
    changed = {**request.object, "metadata": {**request.object["metadata"]}}
    changed["metadata"]["labels"] = {**(changed["metadata"].get("labels") or {}), key: value}
    return allowed(patch=create_patch(request.object, changed))


async def test_mutating_in_order_with_reinvocation_then_validating(hooks: Hooks, kube: KubeClient, ns: str) -> None:
    """Mutating webhooks run in order and each sees the previous one's patch; one marked IfNeeded runs again
    after a later webhook changed the object; validating webhooks see the final object; the patch is stored."""

    async def first(request: AdmissionRequest) -> AdmissionResponse:
        return label_patch(request, "first", str(len(hooks.calls)))

    async def second(request: AdmissionRequest) -> AdmissionResponse:
        assert request.object is not None
        assert "first" in request.object["metadata"]["labels"]
        return label_patch(request, "second", "yes")

    async def check(request: AdmissionRequest) -> AdmissionResponse:
        return allowed()

    hooks.on("/first", first)
    hooks.on("/second", second)
    hooks.on("/check", check)
    await register(
        kube,
        ns,
        mutating=[
            hook("first.example.io", hooks.url("/first"), ns, reinvocationPolicy="IfNeeded"),
            hook("second.example.io", hooks.url("/second"), ns),
        ],
        validating=[hook("check.example.io", hooks.url("/check"), ns)],
    )
    created = await kube.create(CONFIGMAPS, configmap("a"), ns)
    assert hooks.paths() == ["/first", "/second", "/first", "/check"]
    assert created["metadata"]["labels"] == {"first": "3", "second": "yes"}
    final = hooks.calls[-1][1].object
    assert final is not None
    assert final["metadata"]["labels"] == created["metadata"]["labels"]
    request = hooks.calls[0][1]
    assert (request.operation, request.kind["kind"], request.namespace) == ("CREATE", "ConfigMap", ns)
    assert request.user_info["username"] == "kubernetes-admin"
    assert "system:masters" in request.user_info["groups"]


async def test_denial_is_the_webhooks_status_with_the_api_servers_prefix(
    hooks: Hooks, kube: KubeClient, ns: str
) -> None:
    """A refusal keeps the webhook's code and reason, prefixed with the webhook's name; the object is not stored."""

    async def no(request: AdmissionRequest) -> AdmissionResponse:
        return denied("configmaps are closed today", code=403, reason="Forbidden")

    hooks.on("/no", no)
    await register(kube, ns, validating=[hook("no.example.io", hooks.url("/no"), ns)])
    with pytest.raises(errors.Forbidden) as refused:
        await kube.create(CONFIGMAPS, configmap("a"), ns)
    assert refused.value.body["message"] == (
        'admission webhook "no.example.io" denied the request: configmaps are closed today'
    )
    with pytest.raises(errors.NotFound):
        await kube.get(CONFIGMAPS, "a", ns)


async def test_update_and_delete_are_admitted_with_the_old_object(hooks: Hooks, kube: KubeClient, ns: str) -> None:
    """UPDATE carries object and oldObject; DELETE carries the stored object as oldObject and no object."""

    async def record(request: AdmissionRequest) -> AdmissionResponse:
        return allowed()

    await kube.create(CONFIGMAPS, configmap("a"), ns)
    hooks.on("/record", record)
    await register(kube, ns, validating=[hook("record.example.io", hooks.url("/record"), ns)])
    await kube.patch(CONFIGMAPS, "a", {"data": {"k": "w"}}, ns)
    await kube.delete(CONFIGMAPS, "a", ns)
    (_, update), (_, delete) = hooks.calls
    assert update.operation == "UPDATE"
    assert update.object is not None
    assert update.old_object is not None
    assert (update.object["data"], update.old_object["data"]) == ({"k": "w"}, {"k": "v"})
    assert delete.operation == "DELETE"
    assert delete.object is None
    assert delete.old_object is not None
    assert delete.old_object["data"] == {"k": "w"}


async def test_failure_policy_decides_when_nothing_answers(kube: KubeClient, ns: str) -> None:
    """Nothing listening: Fail refuses with kube-apiserver's InternalError naming the webhook and the dial error;
    Ignore lets the write through."""
    with socket_port() as port:
        dead = {"url": f"https://127.0.0.1:{port}/x"}
    await register(kube, ns, validating=[hook("dead.example.io", dead, ns)])
    with pytest.raises(errors.ServerError) as refused:
        await kube.create(CONFIGMAPS, configmap("a"), ns)
    assert refused.value.body["message"] == (
        'Internal error occurred: failed calling webhook "dead.example.io": failed to call webhook: '
        f'Post "https://127.0.0.1:{port}/x?timeout=5s": dial tcp 127.0.0.1:{port}: connect: connection refused'
    )
    config = await kube.get(VALIDATING_CONFIGURATIONS, ns)
    config["webhooks"][0]["failurePolicy"] = "Ignore"
    await kube.update(VALIDATING_CONFIGURATIONS, config)
    await kube.create(CONFIGMAPS, configmap("a"), ns)


class socket_port:
    """A loopback port nobody listens on (bound, then released)."""

    def __enter__(self) -> int:
        import socket

        with socket.socket() as sock:
            sock.bind(("127.0.0.1", 0))
            return int(sock.getsockname()[1])

    def __exit__(self, *exc: object) -> None:
        return None


async def test_timeout_and_untrusted_certificates_are_call_failures(hooks: Hooks, kube: KubeClient, ns: str) -> None:
    """A webhook slower than timeoutSeconds fails with a deadline; a certificate not signed by the caBundle
    fails verification; both refuse the write under Fail."""

    release = asyncio.Event()

    async def slow(request: AdmissionRequest) -> AdmissionResponse:
        await release.wait()
        return allowed()

    hooks.on("/slow", slow)
    other_ca = certs.issue(["127.0.0.1"], dt.datetime.now(dt.UTC)).ca_cert
    untrusted = {**hooks.url("/slow"), "caBundle": _b64(other_ca)}
    await register(
        kube,
        ns,
        validating=[
            hook(
                "slow.example.io",
                hooks.url("/slow"),
                ns,
                timeoutSeconds=1,
                objectSelector={"matchLabels": {"t": "slow"}},
            ),
            hook("tls.example.io", untrusted, ns, objectSelector={"matchLabels": {"t": "tls"}}),
        ],
    )
    with pytest.raises(errors.ServerError) as slow_refusal:
        await kube.create(CONFIGMAPS, configmap("a", t="slow"), ns)
    release.set()
    assert slow_refusal.value.body["message"].endswith("context deadline exceeded")
    with pytest.raises(errors.ServerError) as tls_refusal:
        await kube.create(CONFIGMAPS, configmap("b", t="tls"), ns)
    assert "tls: failed to verify certificate: x509:" in tls_refusal.value.body["message"]


async def test_selectors_and_match_conditions_choose_the_writes(hooks: Hooks, kube: KubeClient, ns: str) -> None:
    """objectSelector on labels, matchConditions in CEL over the object and request; writes they exclude are not
    sent; another namespace is outside the namespaceSelector."""

    async def no(request: AdmissionRequest) -> AdmissionResponse:
        return denied("no")

    hooks.on("/no", no)
    await register(
        kube,
        ns,
        validating=[
            hook(
                "picky.example.io",
                hooks.url("/no"),
                ns,
                objectSelector={"matchLabels": {"guarded": "yes"}},
                matchConditions=[{"name": "not-k-x", "expression": "object.data.k != 'x'"}],
            )
        ],
    )
    await kube.create(CONFIGMAPS, configmap("plain"), ns)
    with pytest.raises(errors.Forbidden):
        await kube.create(CONFIGMAPS, configmap("guarded", guarded="yes"), ns)
    excluded = configmap("by-condition", guarded="yes")
    excluded["data"] = {"k": "x"}
    await kube.create(CONFIGMAPS, excluded, ns)
    await kube.create(CONFIGMAPS, configmap("elsewhere", guarded="yes"), "default")
    await kube.delete(CONFIGMAPS, "elsewhere", "default")
    assert len(hooks.calls) == 1


async def test_dry_run_reaches_only_webhooks_without_side_effects(hooks: Hooks, kube: KubeClient, ns: str) -> None:
    """A dry-run write is refused (400) by a webhook with unknown side effects and reaches one with
    NoneOnDryRun marked dryRun; nothing is stored."""

    async def ok(request: AdmissionRequest) -> AdmissionResponse:
        return allowed()

    hooks.on("/ok", ok)
    await register(kube, ns, validating=[hook("dry.example.io", hooks.url("/ok"), ns, sideEffects="NoneOnDryRun")])
    await kube.request("POST", f"/api/v1/namespaces/{ns}/configmaps", query=[("dryRun", "All")], body=configmap("a"))
    assert hooks.calls[-1][1].dry_run
    with pytest.raises(errors.NotFound):
        await kube.get(CONFIGMAPS, "a", ns)
    config = await kube.get(VALIDATING_CONFIGURATIONS, ns)
    config["webhooks"][0]["sideEffects"] = "Unknown"
    await kube.update(VALIDATING_CONFIGURATIONS, config)
    with pytest.raises(errors.BadRequest) as refused:
        await kube.request(
            "POST", f"/api/v1/namespaces/{ns}/configmaps", query=[("dryRun", "All")], body=configmap("a")
        )
    assert refused.value.body["message"] == 'admission webhook "dry.example.io" does not support dry run'


async def test_service_reference_resolves_through_the_local_address_annotation(
    hooks: Hooks, kube: KubeClient, ns: str
) -> None:
    """A service reference is called at the Service's sim.grove.io/local-address, verified as NAME.NAMESPACE.svc;
    a missing Service or annotation fails like an unreachable service."""

    async def ok(request: AdmissionRequest) -> AdmissionResponse:
        return allowed()

    hooks.on("/svc", ok)
    client = {
        "service": {"namespace": "hooks-ns", "name": "hooks", "port": 443, "path": "/svc"},
        "caBundle": _b64(hooks.bundle.ca_cert),
    }
    await register(kube, ns, validating=[hook("svc.example.io", client, ns)])
    with pytest.raises(errors.ServerError) as missing:
        await kube.create(CONFIGMAPS, configmap("a"), ns)
    assert missing.value.body["message"].endswith(
        'Post "https://hooks.hooks-ns.svc:443/svc?timeout=5s": service "hooks" not found'
    )
    with_ns = {"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": "hooks-ns"}}
    with contextlib.suppress(errors.AlreadyExists):
        await kube.create(NAMESPACES, with_ns)
    service = {
        "apiVersion": "v1",
        "kind": "Service",
        "metadata": {"name": "hooks", "namespace": "hooks-ns"},
        "spec": {"ports": [{"port": 443}]},
    }
    await kube.create(SERVICES, service, "hooks-ns")
    try:
        with pytest.raises(errors.ServerError) as no_endpoints:
            await kube.create(CONFIGMAPS, configmap("a"), ns)
        assert no_endpoints.value.body["message"].endswith('no endpoints available for service "hooks"')
        annotation = {"metadata": {"annotations": {"sim.grove.io/local-address": f"127.0.0.1:{hooks.server.port}"}}}
        await kube.patch(SERVICES, "hooks", annotation, "hooks-ns")
        await kube.create(CONFIGMAPS, configmap("a"), ns)
        assert hooks.paths() == ["/svc"]
    finally:
        await kube.delete(SERVICES, "hooks", "hooks-ns")


async def test_service_reference_resolves_through_the_services_endpoints(
    hooks: Hooks, kube: KubeClient, ns: str
) -> None:
    """Without the annotation a service reference goes where kube-apiserver sends it: a ready address of the
    Service's Endpoints on the target port of the named service port (here Endpoints written by hand, as for a
    Service without a selector); not-ready addresses are not called."""

    async def ok(request: AdmissionRequest) -> AdmissionResponse:
        return allowed()

    hooks.on("/eps", ok)
    client = {
        "service": {"namespace": "hooks-ns", "name": "hooks", "port": 8443, "path": "/eps"},
        "caBundle": _b64(hooks.bundle.ca_cert),
    }
    with contextlib.suppress(errors.AlreadyExists):
        await kube.create(NAMESPACES, {"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": "hooks-ns"}})
    ports = [{"name": "metrics", "port": 8080}, {"name": "webhook", "port": 8443, "targetPort": 9443}]
    service = {"apiVersion": "v1", "kind": "Service", "metadata": {"name": "hooks"}, "spec": {"ports": ports}}
    await kube.create(SERVICES, service, "hooks-ns")
    subset = {
        "notReadyAddresses": [{"ip": "127.0.0.1"}],
        "ports": [{"name": "metrics", "port": 1}, {"name": "webhook", "port": hooks.server.port}],
    }
    endpoints = {"apiVersion": "v1", "kind": "Endpoints", "metadata": {"name": "hooks"}, "subsets": [subset]}
    await kube.create(ENDPOINTS, endpoints, "hooks-ns")
    try:
        await register(kube, ns, validating=[hook("eps.example.io", client, ns)])
        with pytest.raises(errors.ServerError) as not_ready:
            await kube.create(CONFIGMAPS, configmap("a"), ns)
        assert not_ready.value.body["message"].endswith('no endpoints available for service "hooks"')
        ready = {"subsets": [{"addresses": [{"ip": "127.0.0.1"}], "ports": subset["ports"]}]}
        await kube.patch(ENDPOINTS, "hooks", ready, "hooks-ns")
        await kube.create(CONFIGMAPS, configmap("a"), ns)
        assert hooks.paths() == ["/eps"]
    finally:
        await kube.delete(SERVICES, "hooks", "hooks-ns")  # its Endpoints go with it, as the controller does


async def test_warnings_reach_the_client_as_warning_headers(
    hooks: Hooks, sim: SimCluster, kube: KubeClient, ns: str
) -> None:
    """Webhook warnings come back as ``Warning: 299 - "..."`` headers, on success and on refusal."""

    async def warn(request: AdmissionRequest) -> AdmissionResponse:
        assert request.object is not None
        if request.object["metadata"]["name"] == "bad":
            return AdmissionResponse(False, {"code": 422, "message": "bad"}, (), ('careful with "bad"',))
        return allowed(warnings=["first", "second"])

    hooks.on("/warn", warn)
    await register(kube, ns, validating=[hook("warn.example.io", hooks.url("/warn"), ns)])
    async with aiohttp.ClientSession() as session:
        url = f"{sim.url}/api/v1/namespaces/{ns}/configmaps"
        async with session.post(url, json=configmap("good")) as good:
            assert good.status == 201
            assert good.headers.getall("Warning") == ['299 - "first"', '299 - "second"']
        async with session.post(url, json=configmap("bad")) as bad:
            assert bad.status == 422
            assert bad.headers.getall("Warning") == ['299 - "careful with \\"bad\\""']


async def test_a_write_racing_a_webhook_is_started_again(hooks: Hooks, kube: KubeClient, ns: str) -> None:
    """When the object changes while its update waits on a webhook, the update starts again from the new object
    (webhooks called again) instead of overwriting the other write."""
    await kube.create(CONFIGMAPS, configmap("a"), ns)
    raced: list[bool] = []

    async def racer(request: AdmissionRequest) -> AdmissionResponse:
        if not raced:
            raced.append(True)
            await kube.patch(CONFIGMAPS, "a", {"metadata": {"labels": {"racer": "won"}}}, ns)
        return allowed()

    hooks.on("/race", racer)
    await register(kube, ns, validating=[hook("race.example.io", hooks.url("/race"), ns)])
    updated = await kube.patch(CONFIGMAPS, "a", {"data": {"k": "mine"}}, ns, patch_type=PatchType.MERGE)
    assert updated["metadata"]["labels"] == {"racer": "won"}
    assert updated["data"] == {"k": "mine"}
    first, racing, again = (request for _, request in hooks.calls)
    assert first.object is not None
    assert first.object["data"] == {"k": "mine"}
    assert racing.object is not None
    assert racing.object["metadata"]["labels"] == {"racer": "won"}
    assert again.old_object is not None
    assert again.old_object["metadata"]["labels"] == {"racer": "won"}


async def test_webhook_configurations_are_never_sent_to_webhooks(hooks: Hooks, kube: KubeClient, ns: str) -> None:
    """A webhook that refuses everything cannot lock its own configuration: deleting it is never admitted."""

    async def no(request: AdmissionRequest) -> AdmissionResponse:
        return denied("no")

    hooks.on("/no", no)
    everything = [{"apiGroups": ["*"], "apiVersions": ["*"], "resources": ["*"], "operations": ["*"]}]
    await register(kube, ns, validating=[{**hook("all.example.io", hooks.url("/no"), ns), "rules": everything}])
    await kube.delete(VALIDATING_CONFIGURATIONS, ns)
    await kube.create(CONFIGMAPS, configmap("a"), ns)
    assert hooks.calls == []

"""Assembly of a simulated cluster: store, registry, core, background controllers and the HTTP server.

``SimServer`` is what ``grove-sim up`` and ``grove_sim.testing.SimCluster`` run. Start order: controllers (so
they see every write), seeded namespaces, initial nodes, then the listening socket; stop order is the reverse,
with open watch streams ended cleanly first so clients see a normal end of stream.
"""

from __future__ import annotations

import os
import ssl
import tempfile
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import yaml
from aiohttp import web

from grove_sim.auth.authentication import ADMIN, Authenticator
from grove_sim.auth.authorizer import new_authorizer
from grove_sim.auth.bootstrap import bootstrap_cluster_role_bindings, bootstrap_cluster_roles
from grove_sim.controllers.endpoints import EndpointsController
from grove_sim.controllers.eventttl import DEFAULT_EVENT_TTL, EventTTL
from grove_sim.controllers.gc import GarbageCollector
from grove_sim.controllers.kubelet import Kubelet, KubeletOptions
from grove_sim.controllers.namespaces import NamespaceController
from grove_sim.controllers.tokens import TokenController
from grove_sim.controllers.workloads.autoscaler import Autoscaler
from grove_sim.controllers.workloads.deployments import DeploymentController
from grove_sim.controllers.workloads.disruption import DisruptionController
from grove_sim.controllers.workloads.metrics import MetricsApi
from grove_sim.controllers.workloads.replicasets import ReplicaSetController
from grove_sim.controllers.workloads.scheduler import DefaultScheduler
from grove_sim.controllers.workqueue import WorkQueue
from grove_sim.http.app import make_app
from grove_sim.http.audit import AuditLog
from grove_sim.http.context import ApiContext
from grove_sim.http.fault_config import FaultConfig
from grove_sim.http.faults import FaultInjector
from grove_sim.http.webhook_client import AiohttpWebhookTransport
from grove_sim.machinery.certs import make_serving_certificates
from grove_sim.machinery.kubeconfig import kubeconfig_document
from grove_sim.registry.core import Core
from grove_sim.registry.resources import Registry
from grove_sim.registry.webhooks import WebhookAdmission
from grove_sim.storage.store import DEFAULT_HISTORY, DEFAULT_HISTORY_AGE, Store

__all__ = ["SimOptions", "SimServer", "kubeconfig_document", "write_kubeconfig"]

SIM_TOKEN = "grove-sim-token"


@dataclass
class SimOptions:
    """Everything that shapes one simulated cluster."""

    nodes: list[dict[str, Any]] = field(default_factory=list)
    ready_delay: float = 0.0
    delete_delay: float = 0.05
    exec_images: dict[str, str] = field(default_factory=dict)
    restart_backoff: float = 10.0
    """Seconds a failed container waits before its second restart (doubling up to ``max_restart_backoff``)."""
    max_restart_backoff: float = 300.0
    audit_log: str | None = None
    """A file to append one audit event (JSON line) per request to, as kube-apiserver's ``--audit-log-path``."""
    history: int = DEFAULT_HISTORY
    history_age: float = DEFAULT_HISTORY_AGE
    """Seconds a change stays replayable to watches (with ``history``, a count, the window's two bounds)."""
    bookmark_interval: float = 60.0
    default_service_accounts: bool = True
    faults: FaultConfig | None = None
    """Faults to inject from the start (None: none until ``PUT /sim/faults``)."""
    authorization_mode: str = "AlwaysAllow"
    """``AlwaysAllow`` or ``RBAC`` (kube-apiserver's ``--authorization-mode``); RBAC seeds the default policy."""
    probe_time_scale: float = 1.0
    """Factor applied to probe delays and periods of containers run as processes (tests use a fast clock)."""
    tls: bool = False
    """Serve HTTPS with a certificate signed by a CA of the cluster's own (kubeconfigs carry the CA)."""
    default_scheduler: bool = False
    """Run the built-in scheduler for pods naming ``default-scheduler`` (``grove-sim up`` turns it on)."""
    hpa_controller: bool = False
    """Run the HorizontalPodAutoscaler controller (``grove-sim up`` turns it on): off, HPAs are stored and served
    but nothing acts on them, as in a cluster whose controller manager runs without it."""
    hpa_sync_period: float = 15.0
    """Seconds between two syncs of each HorizontalPodAutoscaler (kube-controller-manager's
    ``--horizontal-pod-autoscaler-sync-period``)."""
    event_ttl: float = DEFAULT_EVENT_TTL
    """Seconds after its last write an Event is deleted (kube-apiserver's ``--event-ttl``, default 1 h)."""


def write_kubeconfig(
    path: str | os.PathLike[str], url: str, *, token: str = SIM_TOKEN, ca_data: bytes | None = None
) -> Path:
    """Write the kubeconfig atomically (rename), so a reader never sees half a file; ``ca_data`` is the PEM of the
    CA of an HTTPS server."""
    target = Path(path)
    target.parent.mkdir(parents=True, exist_ok=True)
    fd, tmp = tempfile.mkstemp(prefix=".kubeconfig-", dir=target.parent)
    with os.fdopen(fd, "w", encoding="utf-8") as handle:
        yaml.safe_dump(kubeconfig_document(url, token=token, ca_data=ca_data), handle, sort_keys=False)
    Path(tmp).replace(target)
    return target


class SimServer:
    """One simulated cluster served over HTTP on the running event loop."""

    def __init__(self, options: SimOptions | None = None) -> None:
        self.options = options or SimOptions()
        self.store = Store(history=self.options.history, history_age=self.options.history_age)
        self.registry = Registry()
        self.core = Core(self.store, self.registry)
        self.tokens = TokenController(self.core, default_service_accounts=self.options.default_service_accounts)
        self.webhook_transport = AiohttpWebhookTransport()
        self.context = ApiContext(
            self.core,
            bookmark_interval=self.options.bookmark_interval,
            authenticator=Authenticator(
                self.store, static_tokens={SIM_TOKEN: ADMIN}, bound_tokens=self.tokens.issued_to
            ),
            admission=WebhookAdmission(self.store, self.webhook_transport),
        )
        self.gc = GarbageCollector(self.core)
        self.event_ttl = EventTTL(self.core, self.options.event_ttl)
        self.namespaces = NamespaceController(self.core)
        self.endpoints = EndpointsController(self.core)
        self.deployments = DeploymentController(self.core)
        self.replicasets = ReplicaSetController(self.core)
        self.disruption = DisruptionController(self.core)
        self.metrics = MetricsApi(self.core)
        self.autoscaler = (
            Autoscaler(self.core, sync_period=self.options.hpa_sync_period) if self.options.hpa_controller else None
        )
        self.scheduler = DefaultScheduler(self.core) if self.options.default_scheduler else None
        self.kubelet = Kubelet(
            self.core,
            KubeletOptions(
                ready_delay=self.options.ready_delay,
                delete_delay=self.options.delete_delay,
                exec_images=dict(self.options.exec_images),
                restart_backoff=self.options.restart_backoff,
                max_restart_backoff=self.options.max_restart_backoff,
                time_scale=self.options.probe_time_scale,
            ),
            token_for=self.tokens.token_for,
        )
        self.context.pod_logs = self.kubelet.logs
        if self.options.audit_log:
            self.context.audit = AuditLog(self.options.audit_log)
        self.context.authorizer = new_authorizer(self.options.authorization_mode, self.store)
        self.context.faults = FaultInjector(self.store, self.options.faults)
        self._runner: web.AppRunner | None = None
        self.url = ""
        self.ca_pem: bytes | None = None
        """PEM of the CA that signed the serving certificate (with ``tls``)."""

    def user_of(self, token: str | None) -> str:
        """Who a bearer token authenticates as (the administrator, a service account, anonymous); raises
        ``Unauthorized`` for a token nobody holds."""
        authenticator = self.context.authenticator
        assert authenticator is not None
        return authenticator.authenticate(f"Bearer {token}" if token else None).username

    def _seed_policy(self) -> None:
        """Create the default ClusterRoles and bindings a cluster's RBAC bootstrap creates (kept if present)."""
        for plural, objects in (
            ("clusterroles", bootstrap_cluster_roles()),
            ("clusterrolebindings", bootstrap_cluster_role_bindings()),
        ):
            info = self.registry.get("rbac.authorization.k8s.io", "v1", plural)
            assert info is not None
            for obj in objects:
                if self.store.get(info.key, "", obj["metadata"]["name"]) is None:
                    self.core.create(info, "", obj)

    def _queues(self) -> list[WorkQueue[Any]]:
        return [
            self.gc.queue,
            self.namespaces.queue,
            self.tokens.queue,
            self.endpoints.queue,
            self.event_ttl.queue,
            *self.kubelet.queues(),
            *self._workload_queues(),
        ]

    def _workload_queues(self) -> list[WorkQueue[Any]]:
        queues: list[WorkQueue[Any]] = [self.deployments.queue, self.replicasets.queue, self.disruption.queue]
        queues += [c.queue for c in (self.scheduler, self.autoscaler) if c is not None]
        return queues

    async def start(self, host: str = "127.0.0.1", port: int = 0) -> str:
        """Start controllers, seed the cluster and listen; returns the base URL."""
        for queue in self._queues():
            queue.start()
        self.namespaces.seed()
        if self.context.authorizer is not None:
            self._seed_policy()
        info = self.registry.get("", "v1", "nodes")
        assert info is not None
        for node in self.options.nodes:
            self.core.create(info, "", node)
        self._runner = web.AppRunner(make_app(self.context), access_log=None, handle_signals=False)
        await self._runner.setup()
        context = self._tls_context(host) if self.options.tls else None
        site = web.TCPSite(self._runner, host, port, backlog=1024, ssl_context=context)
        await site.start()
        addresses = self._runner.addresses
        bound = int(addresses[0][1]) if addresses else port
        self.url = f"{'https' if context else 'http'}://{host}:{bound}"
        self.kubelet.options.server_url = self.url
        self.kubelet.options.ca_data = self.ca_pem
        return self.url

    def _tls_context(self, host: str) -> ssl.SSLContext:
        """A server context with a fresh CA's serving certificate (the files live only while it loads them)."""
        certs = make_serving_certificates(host)
        self.ca_pem = certs.ca_pem
        context = ssl.create_default_context(ssl.Purpose.CLIENT_AUTH)
        with tempfile.TemporaryDirectory(prefix="grove-sim-tls-") as tmp:
            cert, key = Path(tmp) / "tls.crt", Path(tmp) / "tls.key"
            cert.write_bytes(certs.cert_pem + certs.ca_pem)
            key.write_bytes(certs.key_pem)
            context.load_cert_chain(cert, key)
        return context

    def idle(self) -> bool:
        """True when no controller has pending work (tests use it to wait for quiescence); the HPAs' periodic
        resyncs are always scheduled and do not count."""
        periodic = self.autoscaler.queue if self.autoscaler is not None else None
        return all(q.idle() for q in self._queues() if q is not periodic)

    async def stop(self) -> None:
        """End watch streams, stop serving, stop controllers."""
        for watcher in list(self.context.watchers):
            watcher.close()
        if self._runner is not None:
            await self._runner.cleanup()
            self._runner = None
        await self.webhook_transport.close()
        await self.kubelet.stop_tasks()
        for queue in self._queues():
            await queue.stop()
        if self.context.audit is not None:
            self.context.audit.close()

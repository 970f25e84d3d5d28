"""Mutating/ValidatingWebhookConfigurations that point the API server at this program's webhook server.

A program describes its webhooks once (:class:`ConfigurationSpec`, :class:`WebhookSpec`: name, path, rules,
policies) and :func:`ensure_configurations` makes the cluster match, in one of two modes (:class:`ClientTarget`):

* **url** (local runs): the configurations are this program's own: created, or replaced whole, with a ``url``
  client config pointing at where the server listens (``https://127.0.0.1:PORT/PATH``) and the CA bundle;
* **service** (in a cluster): a configuration that exists (deployed with the program's manifests) only gets the CA
  bundle injected into each of its webhooks, as cert-controller does; one that does not exist is created pointing
  at the Service.

Writes carry the object's resourceVersion; a conflict (another replica wrote first) is re-read and retried.
"""

from __future__ import annotations

import base64
import copy
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

import structlog

from grove_runtime import errors
from grove_runtime.client import Client
from grove_runtime.resources import ResourceType

__all__ = [
    "MUTATING_CONFIGURATIONS",
    "VALIDATING_CONFIGURATIONS",
    "ClientTarget",
    "ConfigurationSpec",
    "WebhookSpec",
    "configuration",
    "ensure_configurations",
    "remove_configurations",
    "rule",
]

log = structlog.get_logger("grove_runtime.webhook")

MUTATING_CONFIGURATIONS = ResourceType(
    "admissionregistration.k8s.io", "v1", "mutatingwebhookconfigurations", "MutatingWebhookConfiguration", False
)
VALIDATING_CONFIGURATIONS = ResourceType(
    "admissionregistration.k8s.io", "v1", "validatingwebhookconfigurations", "ValidatingWebhookConfiguration", False
)
_ATTEMPTS = 5
Obj = dict[str, Any]


def rule(
    groups: Sequence[str], versions: Sequence[str], resources: Sequence[str], operations: Sequence[str], scope: str
) -> Obj:
    """One ``RuleWithOperations``."""
    return {
        "apiGroups": list(groups),
        "apiVersions": list(versions),
        "resources": list(resources),
        "operations": list(operations),
        "scope": scope,
    }


@dataclass(frozen=True, slots=True)
class WebhookSpec:
    """One webhook: its unique name (``pcs.validating.webhooks.grove.io``), server path, rules and policies."""

    name: str
    path: str
    rules: tuple[Obj, ...]
    failure_policy: str = "Fail"
    side_effects: str = "None"
    timeout_seconds: int = 10
    match_policy: str = "Exact"
    object_selector: Obj | None = None
    namespace_selector: Obj | None = None
    reinvocation_policy: str | None = None


@dataclass(frozen=True, slots=True)
class ConfigurationSpec:
    """One Mutating (``mutating=True``) or ValidatingWebhookConfiguration."""

    name: str
    mutating: bool
    webhooks: tuple[WebhookSpec, ...]
    labels: Mapping[str, str] = field(default_factory=dict)

    @property
    def resource(self) -> ResourceType:
        """The configuration's kind."""
        return MUTATING_CONFIGURATIONS if self.mutating else VALIDATING_CONFIGURATIONS


@dataclass(frozen=True, slots=True)
class ClientTarget:
    """Where the API server reaches the webhooks: ``url`` (``https://HOST:PORT``) or a Service
    (``service_namespace``/``service_name``:``service_port``)."""

    url: str | None = None
    service_namespace: str = ""
    service_name: str = ""
    service_port: int = 443

    @property
    def service_mode(self) -> bool:
        """Whether the configurations name a Service (only the CA bundle is ours to set)."""
        return self.url is None

    def client_config(self, path: str, ca_bundle: bytes) -> Obj:
        """The ``clientConfig`` of a webhook served at ``path``."""
        config: Obj = {"caBundle": base64.b64encode(ca_bundle).decode()}
        if self.url is not None:
            config["url"] = self.url.rstrip("/") + path
        else:
            config["service"] = {
                "namespace": self.service_namespace,
                "name": self.service_name,
                "port": self.service_port,
                "path": path,
            }
        return config


def _webhook(spec: WebhookSpec, mutating: bool, target: ClientTarget, ca_bundle: bytes) -> Obj:
    hook: Obj = {
        "name": spec.name,
        "admissionReviewVersions": ["v1"],
        "clientConfig": target.client_config(spec.path, ca_bundle),
        "rules": [dict(r) for r in spec.rules],
        "failurePolicy": spec.failure_policy,
        "matchPolicy": spec.match_policy,
        "sideEffects": spec.side_effects,
        "timeoutSeconds": spec.timeout_seconds,
        "namespaceSelector": dict(spec.namespace_selector or {}),
        "objectSelector": dict(spec.object_selector or {}),
    }
    if mutating:
        hook["reinvocationPolicy"] = spec.reinvocation_policy or "Never"
    return hook


def configuration(spec: ConfigurationSpec, target: ClientTarget, ca_bundle: bytes) -> Obj:
    """The configuration object ``spec`` describes."""
    rt = spec.resource
    metadata: Obj = {"name": spec.name}
    if spec.labels:
        metadata["labels"] = dict(spec.labels)
    return {
        "apiVersion": rt.api_version,
        "kind": rt.kind,
        "metadata": metadata,
        "webhooks": [_webhook(w, spec.mutating, target, ca_bundle) for w in spec.webhooks],
    }


def _with_ca(found: Obj, ca_bundle: bytes) -> Obj:
    updated = copy.deepcopy(found)
    encoded = base64.b64encode(ca_bundle).decode()
    for hook in updated.get("webhooks") or ():
        hook.setdefault("clientConfig", {})["caBundle"] = encoded
    return updated


async def _ensure(client: Client, spec: ConfigurationSpec, target: ClientTarget, ca_bundle: bytes) -> None:
    desired = configuration(spec, target, ca_bundle)
    rt = spec.resource
    for _ in range(_ATTEMPTS):
        try:
            found = await client.get(rt, spec.name)
        except errors.NotFound:
            try:
                await client.create(rt, desired)
            except errors.AlreadyExists:
                continue
            log.info("webhook configuration created", kind=rt.kind, name=spec.name)
            return
        if target.service_mode:
            updated = _with_ca(found, ca_bundle)
        else:
            metadata = {**found["metadata"], "labels": {**(found["metadata"].get("labels") or {}), **spec.labels}}
            updated = {**found, "metadata": metadata, "webhooks": desired["webhooks"]}
        if updated == found:
            return
        try:
            await client.update(rt, updated)
        except errors.Conflict:
            continue
        log.info("webhook configuration updated", kind=rt.kind, name=spec.name)
        return
    raise errors.Conflict(f"{rt.kind} {spec.name} kept changing while being updated")


async def ensure_configurations(
    client: Client, specs: Sequence[ConfigurationSpec], target: ClientTarget, ca_bundle: bytes
) -> None:
    """Make every configuration of ``specs`` point at ``target`` with ``ca_bundle``."""
    for spec in specs:
        await _ensure(client, spec, target, ca_bundle)


async def remove_configurations(client: Client, specs: Sequence[ConfigurationSpec]) -> None:
    """Delete the configurations of ``specs`` that exist (webhooks this run does not serve)."""
    for spec in specs:
        try:
            await client.delete(spec.resource, spec.name)
        except errors.NotFound:
            continue
        log.info("webhook configuration removed", kind=spec.resource.kind, name=spec.name)

"""Paths, rules and configurations of grove-operator's webhooks, and the runnable that serves them (§3.12).

* ``podcliqueset-defaulting-webhook`` (Mutating): ``pcs.defaulting.webhooks.grove.io`` at
  ``/webhooks/default-podcliqueset``, podcliquesets on CREATE and UPDATE;
* ``podcliqueset-validating-webhook``: ``pcs.validating.webhooks.grove.io`` at ``/webhooks/validate-podcliqueset``,
  podcliquesets on CREATE and UPDATE;
* ``clustertopology-validating-webhook``: ``ct.validating.webhooks.grove.io`` at
  ``/webhooks/validate-clustertopology``, clustertopologybindings on CREATE and UPDATE;
* ``authorizer-webhook`` (with ``--authorizer``): ``authorizer.webhooks.grove.io`` at
  ``/webhooks/authorizer-webhook``, the managed objects (see ``authorizer``).

All fail closed (``failurePolicy: Fail``), have no side effects and time out after 10 s, as upstream's. In url mode
a run without ``--authorizer`` deletes an authorizer configuration an earlier run left, so a stopped experiment
cannot keep refusing writes.
"""

from __future__ import annotations

from collections.abc import Mapping

from prometheus_client import CollectorRegistry

from grove_api import ClusterTopologyBinding
from grove_api import labels as glabels
from grove_operator.config import OperatorConfig, WebhookSettings
from grove_operator.kinds import CLUSTERTOPOLOGYBINDINGS, PODCLIQUESETS
from grove_operator.parsed import ParseMemo, parsed_topologies
from grove_operator.webhooks.authorizer import ManagedResourceAuthorizer, OperatorIdentity
from grove_operator.webhooks.clustertopology import ClusterTopologyValidator
from grove_operator.webhooks.podcliqueset import PodCliqueSetDefaulter, PodCliqueSetValidator
from grove_runtime.cache import Cache
from grove_runtime.client import Client
from grove_runtime.clock import Clock
from grove_runtime.health import Address
from grove_runtime.keys import ObjectKey
from grove_runtime.webhook import certs
from grove_runtime.webhook.certsource import CertificateSource, FileCertificates, SecretCertificates
from grove_runtime.webhook.handlers import DefaultingHandler, ValidatingHandler, dict_codec
from grove_runtime.webhook.registration import ClientTarget, ConfigurationSpec, WebhookSpec, rule
from grove_runtime.webhook.server import WebhookServer
from grove_runtime.webhook.serving import ServeWebhooks

__all__ = [
    "AUTHORIZER",
    "CONFIGURATIONS",
    "PATH_AUTHORIZER",
    "PATH_DEFAULT_PODCLIQUESET",
    "PATH_VALIDATE_CLUSTERTOPOLOGY",
    "PATH_VALIDATE_PODCLIQUESET",
    "build_webhooks",
]

PATH_DEFAULT_PODCLIQUESET = "/webhooks/default-podcliqueset"
PATH_VALIDATE_PODCLIQUESET = "/webhooks/validate-podcliqueset"
PATH_VALIDATE_CLUSTERTOPOLOGY = "/webhooks/validate-clustertopology"
PATH_AUTHORIZER = "/webhooks/authorizer-webhook"

_LABELS = {glabels.LABEL_MANAGED_BY: glabels.MANAGED_BY_VALUE}
_GROVE = ("grove.io",)
_V1ALPHA1 = ("v1alpha1",)
_WRITE = ("CREATE", "UPDATE")
_CHANGE = ("UPDATE", "DELETE")
_ALL_WRITES = ("CREATE", "UPDATE", "DELETE")

CONFIGURATIONS = (
    ConfigurationSpec(
        "podcliqueset-defaulting-webhook",
        mutating=True,
        webhooks=(
            WebhookSpec(
                "pcs.defaulting.webhooks.grove.io",
                PATH_DEFAULT_PODCLIQUESET,
                (rule(_GROVE, _V1ALPHA1, ("podcliquesets",), _WRITE, "Namespaced"),),
            ),
        ),
        labels=_LABELS,
    ),
    ConfigurationSpec(
        "podcliqueset-validating-webhook",
        mutating=False,
        webhooks=(
            WebhookSpec(
                "pcs.validating.webhooks.grove.io",
                PATH_VALIDATE_PODCLIQUESET,
                (rule(_GROVE, _V1ALPHA1, ("podcliquesets",), _WRITE, "Namespaced"),),
            ),
        ),
        labels=_LABELS,
    ),
    ConfigurationSpec(
        "clustertopology-validating-webhook",
        mutating=False,
        webhooks=(
            WebhookSpec(
                "ct.validating.webhooks.grove.io",
                PATH_VALIDATE_CLUSTERTOPOLOGY,
                (rule(_GROVE, _V1ALPHA1, ("clustertopologybindings",), _WRITE, "Cluster"),),
            ),
        ),
        labels=_LABELS,
    ),
)

AUTHORIZER = ConfigurationSpec(
    "authorizer-webhook",
    mutating=False,
    webhooks=(
        WebhookSpec(
            "authorizer.webhooks.grove.io",
            PATH_AUTHORIZER,
            (
                rule(_GROVE, _V1ALPHA1, ("podcliques", "podcliquescalinggroups"), _ALL_WRITES, "Namespaced"),
                rule(("scheduler.grove.io",), _V1ALPHA1, ("podgangs",), _ALL_WRITES, "Namespaced"),
                rule(("",), ("v1",), ("pods",), _CHANGE, "Namespaced"),
                rule(("",), ("v1",), ("secrets", "serviceaccounts", "services"), _CHANGE, "Namespaced"),
                rule(("rbac.authorization.k8s.io",), ("v1",), ("roles", "rolebindings"), _CHANGE, "Namespaced"),
                rule(("autoscaling",), ("v2",), ("horizontalpodautoscalers",), _CHANGE, "Namespaced"),
            ),
            object_selector={"matchLabels": dict(_LABELS)},
        ),
    ),
    labels=_LABELS,
)


def _target(settings: WebhookSettings) -> ClientTarget | None:
    if settings.service_name:
        return ClientTarget(
            service_namespace=settings.namespace, service_name=settings.service_name, service_port=settings.service_port
        )
    return None


def _url(address: Address) -> ClientTarget:
    host = address.host if address.host not in ("", "0.0.0.0", "::") else "127.0.0.1"
    return ClientTarget(url=f"https://{Address(host, address.port)}")


def _names(settings: WebhookSettings) -> list[str]:
    """What the serving certificate must name: the Service (cluster) and loopback plus the listen host (local)."""
    names = certs.service_names(settings.service_name or "grove-operator", settings.namespace)
    names += ["localhost", "127.0.0.1", "::1"]
    if settings.host not in ("", "0.0.0.0", "::"):
        names.append(settings.host)
    return names


def build_webhooks(
    config: OperatorConfig,
    settings: WebhookSettings,
    client: Client,
    cache: Cache,
    clock: Clock,
    memo: ParseMemo,
    registry: CollectorRegistry,
) -> ServeWebhooks:
    """The webhook server with every handler registered, and the runnable that serves and registers it."""
    server = WebhookServer(host=settings.host, port=settings.port, prefix="grove_operator", registry=registry)

    def topologies() -> Mapping[str, ClusterTopologyBinding]:
        return parsed_topologies(cache.list(CLUSTERTOPOLOGYBINDINGS), memo)

    server.register(
        PATH_DEFAULT_PODCLIQUESET, "default-podcliqueset", DefaultingHandler(PodCliqueSetDefaulter(), dict_codec())
    )
    server.register(
        PATH_VALIDATE_PODCLIQUESET,
        "validate-podcliqueset",
        ValidatingHandler(PodCliqueSetValidator(config, topologies), dict_codec()),
    )
    server.register(
        PATH_VALIDATE_CLUSTERTOPOLOGY,
        "validate-clustertopology",
        ValidatingHandler(ClusterTopologyValidator(), dict_codec()),
    )
    specs = list(CONFIGURATIONS)
    removed: tuple[ConfigurationSpec, ...] = ()
    if settings.authorizer:

        def parent(namespace: str, name: str) -> dict[str, object] | None:
            return cache.get(PODCLIQUESETS, ObjectKey(namespace, name))

        authorizer = ManagedResourceAuthorizer(OperatorIdentity(client), settings.exempt_users, parent)
        server.register(PATH_AUTHORIZER, "authorizer-webhook", authorizer)
        specs.append(AUTHORIZER)
    elif settings.service_name is None:
        removed = (AUTHORIZER,)
    source: CertificateSource = (
        FileCertificates(settings.cert_dir)
        if settings.cert_dir
        else SecretCertificates(
            client,
            settings.namespace,
            settings.secret_name,
            _names(settings),
            clock,
            labels=_LABELS,
            common_name="grove-operator-webhook-ca",
        )
    )
    service = _target(settings)
    serve = ServeWebhooks(
        client,
        server,
        source,
        specs,
        (lambda _address: service) if service is not None else _url,
        clock,
        interval=settings.check_interval,
        remove=removed,
    )
    return serve

"""OperatorConfiguration: the handful of knobs grove-operator reads (grove-reference §1.7).

One frozen dataclass, filled by the CLI and by tests, so every component sees the same settings through its
`SyncContext` instead of reaching for globals or environment variables.
"""

from __future__ import annotations

import os
from collections.abc import Mapping
from dataclasses import dataclass, field

from grove_api import labels as glabels
from grove_runtime.leaderelection import LeaseSettings

__all__ = [
    "DEFAULT_EXEMPT_USERS",
    "DEFAULT_INIT_CONTAINER_IMAGE",
    "DEFAULT_MAX_PODS_PER_PODCLIQUESET",
    "DEFAULT_SCHEDULER_NAME",
    "OperatorConfig",
    "WebhookSettings",
]

DEFAULT_SCHEDULER_NAME = "grove-scheduler"
DEFAULT_INIT_CONTAINER_IMAGE = "grove-initc"
"""Repository of the `grove-initc` image (`grove-sim up --exec-image grove-initc=...` runs it locally)."""
OPERATOR_VERSION = "0.1.0"
DEFAULT_MAX_PODS_PER_PODCLIQUESET = 100_000
DEFAULT_EXEMPT_USERS = (
    "system:serviceaccount:kube-system:generic-garbage-collector",
    "system:serviceaccount:kube-system:horizontal-pod-autoscaler",
    "system:kube-controller-manager",
)
"""Users besides the operator that may change managed objects when the authorizer is on (Kubernetes' own
controllers that act on them: garbage collection, HPA scaling)."""


@dataclass(frozen=True, slots=True)
class WebhookSettings:
    """The admission webhook server and its registration (flags ``--webhook-*``, ``--authorizer*``).

    Local runs point the configurations at ``https://HOST:PORT`` (``url`` mode); with ``service_name`` they name
    that Service in ``namespace`` (``service`` mode, as in a cluster). The certificate lives in the Secret
    ``namespace``/``secret_name`` shared by replicas, unless ``cert_dir`` holds ``tls.crt``/``tls.key``/``ca.crt``.
    """

    host: str = "127.0.0.1"
    port: int = 9443
    namespace: str = "grove-system"
    secret_name: str = "grove-webhook-server-cert"
    cert_dir: str | None = None
    service_name: str | None = None
    service_port: int = 443
    authorizer: bool = False
    exempt_users: tuple[str, ...] = DEFAULT_EXEMPT_USERS
    check_interval: float = 600.0


@dataclass(frozen=True, slots=True)
class OperatorConfig:
    """Controller concurrency, scheduler defaults, retry intervals and process-level endpoints."""

    pcs_workers: int = 10
    pclq_workers: int = 10
    pcsg_workers: int = 5
    podgang_workers: int = 5
    pgs_workers: int = 5
    first_api: bool = True
    """Run the controllers of the first API (`grove.dynamo.ai/v1`); the CLI turns it off when the cluster does not
    serve that group, so an operator on a cluster with only upstream's CRDs still syncs its caches."""
    """Workers of the first API's PodGangSet controller (`grove.dynamo.ai/v1`)."""
    default_scheduler_name: str = DEFAULT_SCHEDULER_NAME
    init_container_image: str = f"{DEFAULT_INIT_CONTAINER_IMAGE}:{OPERATOR_VERSION}"
    retry_interval: float = 5.0
    watch_namespace: str | None = None
    leader_elect: bool = True
    lease: LeaseSettings = field(default_factory=lambda: LeaseSettings(name="grove-operator-leader-election"))
    metrics_port: int | None = 2752
    health_host: str = "127.0.0.1"
    metrics_host: str = "127.0.0.1"
    expectations_timeout: float = 300.0
    child_batch_period: float = 0.2
    """Seconds an owner waits after a child's status event (a PodClique after its pods' events) before
    reconciling, so the changes of many children cost one reconcile per period instead of one each; 0 disables."""
    owner_batch_scale: float = 1.0
    """The PodCliqueSet's batch period also stretches to this multiple of its last reconcile's duration: a
    5,000-replica reconcile walks 15,000 children, and back to back such reconciles would starve the PodClique
    controller that creates and ungates the pods; 1.0 leaves it at most about half of the CPU. 0 disables."""
    max_pods_per_podcliqueset: int = DEFAULT_MAX_PODS_PER_PODCLIQUESET
    """Sanity bound on the pods one PodCliqueSet template, scaling group or PodClique may ask for; a larger one is
    refused with `lastErrors` and a Warning Event instead of being worked on (see `grove_operator.admission`)."""
    topology_aware_scheduling: bool = True
    """Upstream's `topologyAwareScheduling.enabled`: on here (our scheduler packs into topology domains); off, the
    webhook refuses PodCliqueSets that carry topology constraints."""
    webhooks: WebhookSettings | None = None
    """Serve and register the admission webhooks (None: no webhooks, as in tests of the reconcilers alone)."""

    @staticmethod
    def init_image(flag: str | None = None, env: Mapping[str, str] | None = None) -> str:
        """The `grove-initc` image: `--initc-image`, else `$GROVE_INIT_CONTAINER_IMAGE` (upstream's name), else
        `grove-initc`. A repository gets the operator's version as its tag, as upstream builds it; a reference
        that already names a tag or digest is used as given."""
        env = os.environ if env is None else env
        image = flag or env.get(glabels.ENV_INIT_CONTAINER_IMAGE) or DEFAULT_INIT_CONTAINER_IMAGE
        last = image.rsplit("/", 1)[-1]
        return image if ":" in last or "@" in image else f"{image}:{OPERATOR_VERSION}"

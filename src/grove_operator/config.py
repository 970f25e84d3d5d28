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
    "DEFAULT_INIT_CONTAINER_IMAGE",
    "DEFAULT_MAX_PODS_PER_PODCLIQUESET",
    "DEFAULT_SCHEDULER_NAME",
    "OperatorConfig",
]

DEFAULT_SCHEDULER_NAME = "grove-scheduler"
DEFAULT_INIT_CONTAINER_IMAGE = "grove-initc"
"""Repository of the `grove-initc` image (`grove-sim up --exec-image grove-initc=...` runs it locally)."""
OPERATOR_VERSION = "0.1.0"
DEFAULT_MAX_PODS_PER_PODCLIQUESET = 100_000


@dataclass(frozen=True, slots=True)
class OperatorConfig:
    """Controller concurrency, scheduler defaults, retry intervals and process-level endpoints."""

    pcs_workers: int = 10
    pclq_workers: int = 10
    pcsg_workers: int = 5
    podgang_workers: int = 5
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

    @staticmethod
    def init_image(flag: str | None = None, env: Mapping[str, str] | None = None) -> str:
        """The `grove-initc` image: `--initc-image`, else `$GROVE_INIT_CONTAINER_IMAGE` (upstream's name), else
        `grove-initc`. A repository gets the operator's version as its tag, as upstream builds it; a reference
        that already names a tag or digest is used as given."""
        env = os.environ if env is None else env
        image = flag or env.get(glabels.ENV_INIT_CONTAINER_IMAGE) or DEFAULT_INIT_CONTAINER_IMAGE
        last = image.rsplit("/", 1)[-1]
        return image if ":" in last or "@" in image else f"{image}:{OPERATOR_VERSION}"

"""Desired headless Service of a PCS replica (grove-reference §2.1, §2.2).

Every replica gets one, whatever `headlessServiceConfig` says; it gives pods their stable DNS names
`<pclq>-<idx>.<pcs>-<i>.<ns>.svc.cluster.local`.
"""

from __future__ import annotations

from typing import Any

from grove_api import PodCliqueSet
from grove_api import labels as glabels
from grove_api import names as gnames
from grove_operator.desired.layout import controller_reference

__all__ = ["build_headless_service"]


def build_headless_service(pcs: PodCliqueSet, pcs_replica: int) -> dict[str, Any]:
    """Service `<pcs>-<i>`: clusterIP None, selecting the replica's pods; publishNotReadyAddresses defaults true."""
    pcs_name = pcs.metadata.name or ""
    name = gnames.headless_service_name(pcs_name, pcs_replica)
    config = pcs.spec.template.headless_service_config
    publish = True if config is None else config.publish_not_ready_addresses
    return {
        "apiVersion": "v1",
        "kind": "Service",
        "metadata": {
            "name": name,
            "namespace": pcs.metadata.namespace or "default",
            "labels": glabels.headless_service_labels(pcs_name, pcs_replica, name),
            "ownerReferences": [
                controller_reference(PodCliqueSet.API_VERSION, PodCliqueSet.KIND, pcs_name, pcs.metadata.uid or "")
            ],
        },
        "spec": {
            "clusterIP": "None",
            "selector": glabels.headless_service_selector(pcs_name, pcs_replica),
            "publishNotReadyAddresses": publish,
        },
    }

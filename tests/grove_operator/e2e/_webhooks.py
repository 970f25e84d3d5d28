"""Helpers for the webhook tests: an operator serving its webhooks on any free port, manifests, kubectl apply.

The operator runs in its own thread (``OperatorThread``) against the module's grove-sim, exactly as the binary
would: it makes its certificate Secret in ``grove-system``, listens on a free port and registers its webhook
configurations with a url client config; the tests then drive the real kubectl. Every module gets a fresh cluster,
so configurations an operator leaves behind (as a real one does when stopped) never reach another module.
"""

from __future__ import annotations

import copy
import subprocess
import time
from collections.abc import Callable
from dataclasses import replace
from typing import Any

import yaml

from grove_operator.config import OperatorConfig, WebhookSettings

from ._harness import OperatorThread

Obj = dict[str, Any]
Kubectl = Callable[..., subprocess.CompletedProcess[str]]
SYSTEM = "grove-system"


def webhook_config(**settings: Any) -> OperatorConfig:
    """A test operator's config with webhooks on a free loopback port, the certificate in grove-system."""
    return OperatorConfig(
        leader_elect=False,
        metrics_port=None,
        retry_interval=0.5,
        webhooks=WebhookSettings(port=0, namespace=SYSTEM, **settings),
    )


def start_operator(kubeconfig: str, kubectl: Kubectl, config: OperatorConfig | None = None) -> OperatorThread:
    """An operator whose webhooks are registered and answering (waits for the webhooks' readiness)."""
    kubectl("create", "namespace", SYSTEM, check=False)
    operator = OperatorThread(kubeconfig, config or webhook_config()).start()
    deadline = time.monotonic() + 60
    while not operator.call(
        lambda: operator.app is not None and operator.app.webhooks is not None and operator.app.webhooks.ready.is_set()
    ):
        if time.monotonic() > deadline:
            operator.kill()
            raise AssertionError("the operator's webhooks never became ready")
        time.sleep(0.02)
    return operator


def webhook_port(operator: OperatorThread) -> int:
    """Where the operator's webhook server listens."""
    assert operator.app is not None
    assert operator.app.webhooks is not None
    return operator.app.webhooks.server.port


def apply(kubectl: Kubectl, manifest: Obj, *args: str) -> subprocess.CompletedProcess[str]:
    """``kubectl apply -f -`` of one manifest (never raising: tests look at the exit code and output)."""
    return kubectl("apply", "-f", "-", *args, input=yaml.safe_dump(manifest), check=False)


def pcs(name: str = "wh") -> Obj:
    """A valid PodCliqueSet touching most rules: Explicit startup, a scaling group, autoscaling, topology."""
    container = {"name": "c", "image": "registry.example.com/echo:1.0", "resources": {"requests": {"cpu": "10m"}}}
    return {
        "apiVersion": "grove.io/v1alpha1",
        "kind": "PodCliqueSet",
        "metadata": {"name": name},
        "spec": {
            "replicas": 1,
            "template": {
                "cliqueStartupType": "CliqueStartupTypeExplicit",
                "topologyConstraint": {"topologyName": "gpu-cluster", "pack": {"preferred": "block"}},
                "cliques": [
                    {
                        "name": "router",
                        "spec": {
                            "roleName": "router",
                            "replicas": 2,
                            "minAvailable": 1,
                            "podSpec": {"containers": [copy.deepcopy(container)]},
                            "autoScalingConfig": {"maxReplicas": 4},
                        },
                    },
                    {
                        "name": "leader",
                        "topologyConstraint": {"pack": {"required": "rack"}},
                        "spec": {
                            "roleName": "leader",
                            "replicas": 1,
                            "startsAfter": ["router"],
                            "podSpec": {"containers": [copy.deepcopy(container)]},
                        },
                    },
                    {
                        "name": "worker",
                        "spec": {
                            "roleName": "worker",
                            "replicas": 2,
                            "startsAfter": ["leader"],
                            "podSpec": {"containers": [copy.deepcopy(container)]},
                        },
                    },
                ],
                "podCliqueScalingGroups": [
                    {"name": "model", "cliqueNames": ["leader", "worker"], "replicas": 2, "minAvailable": 1}
                ],
            },
        },
    }


TOPOLOGY = {
    "apiVersion": "grove.io/v1alpha1",
    "kind": "ClusterTopologyBinding",
    "metadata": {"name": "gpu-cluster"},
    "spec": {
        "levels": [
            {"domain": "block", "key": "topology.kubernetes.io/block"},
            {"domain": "rack", "key": "topology.kubernetes.io/rack"},
            {"domain": "host", "key": "kubernetes.io/hostname"},
        ]
    },
}


def with_settings(config: OperatorConfig, **settings: Any) -> OperatorConfig:
    """``config`` with other webhook settings."""
    assert config.webhooks is not None
    return replace(config, webhooks=replace(config.webhooks, **settings))

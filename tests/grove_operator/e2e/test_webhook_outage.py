"""The webhooks when the operator is not there: failurePolicy Fail and Ignore, and what the reconciler does with an
object that got in unchecked; then the webhooks reached through a Service, as in a cluster.

This module stops operators on purpose; its cluster is its own, so the configurations a stopped operator leaves
behind (as a real one does) reach no other module.
"""

from __future__ import annotations

import json
from collections.abc import Iterator
from typing import Any

import pytest
import yaml

from grove_sim.testing import SimCluster

from ._harness import OperatorThread
from ._webhooks import (
    SYSTEM,
    TOPOLOGY,
    Kubectl,
    apply,
    pcs,
    start_operator,
    webhook_config,
    webhook_port,
    with_settings,
)

Obj = dict[str, Any]


@pytest.fixture(scope="module")
def topology(crds: SimCluster, kubectl: Kubectl) -> SimCluster:
    """The cluster with the topology the manifests name."""
    apply(kubectl, TOPOLOGY)
    return crds


@pytest.fixture
def operator(topology: SimCluster, kubectl: Kubectl) -> Iterator[OperatorThread]:
    """An operator for one test (the test may stop it)."""
    running = start_operator(topology.kubeconfig, kubectl)
    try:
        yield running
    finally:
        running.kill()


def _wait_reconciled(kubectl: Kubectl, name: str) -> Obj:
    import time

    deadline = time.monotonic() + 60
    while time.monotonic() < deadline:
        obj: Obj = yaml.safe_load(kubectl("get", "pcs", name, "-o", "yaml").stdout)
        status = obj.get("status") or {}
        if status.get("observedGeneration") == obj["metadata"]["generation"] or status.get("lastErrors"):
            return obj
        time.sleep(0.1)
    raise AssertionError(f"{name} was never reconciled")


def _fail_open(kubectl: Kubectl) -> None:
    for kind, name in (
        ("mutatingwebhookconfiguration", "podcliqueset-defaulting-webhook"),
        ("validatingwebhookconfiguration", "podcliqueset-validating-webhook"),
    ):
        kubectl(
            "patch",
            kind,
            name,
            "--type=json",
            "-p",
            json.dumps([{"op": "replace", "path": "/webhooks/0/failurePolicy", "value": "Ignore"}]),
        )


def test_fail_closed_while_stopped_then_open_by_policy(
    topology: SimCluster, operator: OperatorThread, kubectl: Kubectl
) -> None:
    """Operator stopped: a create fails with the webhook's connection error (failurePolicy Fail) and works again
    once an operator is back; with failurePolicy Ignore it goes through while the operator is away."""
    port = webhook_port(operator)
    assert apply(kubectl, pcs("before")).returncode == 0
    operator.kill()
    refused = apply(kubectl, pcs("during"))
    assert refused.returncode != 0
    assert 'failed calling webhook "pcs.defaulting.webhooks.grove.io"' in refused.stderr
    assert f"dial tcp 127.0.0.1:{port}: connect: connection refused" in refused.stderr
    back = start_operator(topology.kubeconfig, kubectl)
    try:
        assert apply(kubectl, pcs("during")).returncode == 0
    finally:
        back.kill()
    _fail_open(kubectl)
    assert apply(kubectl, pcs("ignored")).returncode == 0


def test_an_object_that_got_in_unchecked_is_reported_and_still_deletable(
    topology: SimCluster, operator: OperatorThread, kubectl: Kubectl
) -> None:
    """With the webhooks failing open during an outage, an invalid PodCliqueSet is stored; the operator, back,
    reports it in lastErrors (never builds from it), and it can still be labelled and deleted: a write that does
    not touch the spec is never refused for a spec stored before the webhook ran."""
    operator.kill()
    _fail_open(kubectl)
    bad = pcs("unchecked")
    bad["spec"]["template"]["cliques"][0]["spec"]["startsAfter"] = ["worker"]
    assert apply(kubectl, bad).returncode == 0
    back = start_operator(topology.kubeconfig, kubectl)
    try:
        obj = _wait_reconciled(kubectl, "unchecked")
        assert "startsAfter has a cycle" in obj["status"]["lastErrors"][0]["description"]
        assert kubectl("get", "pclq", "-o", "name").stdout.count("unchecked") == 0
        kubectl("label", "pcs", "unchecked", "team=a")
        kubectl("delete", "pcs", "unchecked", "--timeout=60s")
    finally:
        back.kill()


def test_service_reference_through_the_local_address_annotation(topology: SimCluster, kubectl: Kubectl) -> None:
    """In service mode the configurations name the webhook Service; grove-sim reaches the operator through the
    Service's sim.grove.io/local-address and verifies the certificate for NAME.NAMESPACE.svc."""
    kubectl("delete", "mutatingwebhookconfigurations,validatingwebhookconfigurations", "--all")
    config = with_settings(webhook_config(), service_name="grove-operator-webhook")
    operator = start_operator(topology.kubeconfig, kubectl, config)
    try:
        hooks = yaml.safe_load(
            kubectl("get", "validatingwebhookconfiguration", "podcliqueset-validating-webhook", "-o", "yaml").stdout
        )
        assert hooks["webhooks"][0]["clientConfig"]["service"] == {
            "namespace": SYSTEM,
            "name": "grove-operator-webhook",
            "port": 443,
            "path": "/webhooks/validate-podcliqueset",
        }
        bad = pcs("via-service")
        bad["spec"]["template"]["cliques"][0]["spec"]["minAvailable"] = 5
        unreachable = apply(kubectl, bad)
        assert 'service "grove-operator-webhook" not found' in unreachable.stderr
        service = {
            "apiVersion": "v1",
            "kind": "Service",
            "metadata": {
                "name": "grove-operator-webhook",
                "namespace": SYSTEM,
                "annotations": {"sim.grove.io/local-address": f"127.0.0.1:{webhook_port(operator)}"},
            },
            "spec": {"ports": [{"port": 443}]},
        }
        assert apply(kubectl, service).returncode == 0
        refused = apply(kubectl, bad)
        assert "spec.template.cliques[0].spec.minAvailable" in refused.stderr
    finally:
        operator.kill()

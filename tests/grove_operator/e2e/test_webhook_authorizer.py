"""The authorizer webhook: the operator, running as its service account, changes what it manages; users cannot.

kubectl acts as a user with ``--as`` (it sends no bearer token over grove-sim's plain HTTP, so impersonation is how
a test picks who is asking); the operator authenticates with its service account's token, as in a cluster.
"""

from __future__ import annotations

import time
from collections.abc import Iterator

import pytest

from grove_sim.testing import SimCluster

from ._harness import OperatorThread
from ._webhooks import TOPOLOGY, Kubectl, apply, pcs, start_operator, webhook_config, with_settings

OPERATOR_USER = "system:serviceaccount:grove-system:grove-operator"
ALICE = "--as=alice"


@pytest.fixture(scope="module")
def protected(crds: SimCluster, kubectl: Kubectl) -> Iterator[str]:
    """An operator with the authorizer on, authenticated as its service account, and a reconciled PodCliqueSet."""
    apply(kubectl, TOPOLOGY)
    kubeconfig = crds.service_account_kubeconfig("grove-system", "grove-operator")
    operator: OperatorThread = start_operator(kubeconfig, kubectl, with_settings(webhook_config(), authorizer=True))
    try:
        assert apply(kubectl, pcs("guarded")).returncode == 0
        deadline = time.monotonic() + 60
        while "guarded-0-router" not in kubectl("get", "pclq", "-o", "name").stdout:
            assert time.monotonic() < deadline, "the operator never created the PodCliques"
            time.sleep(0.1)
        yield "guarded"
    finally:
        operator.kill()


def test_operator_writes_pass_and_users_are_refused(protected: str, kubectl: Kubectl) -> None:
    """The operator created the PodCliques and pods through the authorizer as its service account; a user's edit
    of a managed PodClique is refused naming the object and the way out; the operator's own user may."""
    assert "guarded-0-router" in kubectl("get", "pods", "-o", "name").stdout
    refused = kubectl("label", "pclq", "guarded-0-router", "team=a", ALICE, check=False)
    assert refused.returncode != 0
    assert 'admission webhook "authorizer.webhooks.grove.io" denied the request' in refused.stderr
    assert "PodClique default/guarded-0-router" in refused.stderr
    assert "grove.io/disable-managed-resource-protection" in refused.stderr
    kubectl("label", "pclq", "guarded-0-router", "team=a", f"--as={OPERATOR_USER}")
    created = kubectl("create", "-f", "-", ALICE, check=False, input=_user_podclique())
    assert created.returncode != 0
    assert "denied the request" in created.stderr


def _user_podclique() -> str:
    return """
apiVersion: grove.io/v1alpha1
kind: PodClique
metadata:
  name: guarded-0-fake
  labels: {app.kubernetes.io/managed-by: grove-operator, app.kubernetes.io/part-of: guarded}
spec:
  roleName: fake
  replicas: 1
  podSpec: {containers: [{name: c, image: busybox}]}
"""


def test_pod_deletion_and_exempt_users_are_allowed(protected: str, kubectl: Kubectl) -> None:
    """Anyone may delete a managed pod; an exempt controller (the garbage collector) may change managed objects."""
    pod = kubectl("get", "pods", "-l", "grove.io/podclique=guarded-0-router", "-o", "name").stdout.split()[0]
    kubectl("delete", pod, ALICE, "--wait=false")
    gc = "--as=system:serviceaccount:kube-system:generic-garbage-collector"
    kubectl("label", "pclq", "guarded-0-router", "gc=ok", gc)


def test_the_opt_out_annotation_lifts_the_protection(protected: str, kubectl: Kubectl) -> None:
    """With grove.io/disable-managed-resource-protection=true on the PodCliqueSet, users may edit its objects."""
    kubectl("annotate", "pcs", protected, "grove.io/disable-managed-resource-protection=true")
    deadline = time.monotonic() + 30
    while kubectl("label", "pclq", "guarded-0-router", "team=b", "--overwrite", ALICE, check=False).returncode:
        assert time.monotonic() < deadline, "the annotation never lifted the protection"
        time.sleep(0.1)
    kubectl("annotate", "pcs", protected, "grove.io/disable-managed-resource-protection-")

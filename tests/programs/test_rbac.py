"""grove-operator and grove-scheduler work on a cluster that enforces RBAC, each as its own ServiceAccount with the
ClusterRole its deployment will need (``tests/fixtures/rbac``), and a scheduler whose role lacks ``pods/binding``
really fails to bind, as in a real cluster."""

from __future__ import annotations

import asyncio
import copy
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import aiohttp
import pytest
import yaml

from grove_sim.cluster import nodes_from_flags
from grove_sim.server import SIM_TOKEN, SimOptions
from grove_sim.testing import SimCluster

from ._proc import clean_env, running

ROOT = Path(__file__).resolve().parents[2]
RBAC_FIXTURES = ROOT / "tests" / "fixtures" / "rbac"
ADMIN = {"Authorization": f"Bearer {SIM_TOKEN}"}
NO_LISTENERS = ("--health-probe-bind-address", "0", "--metrics-bind-address", "0")
PATHS = {
    "CustomResourceDefinition": "/apis/apiextensions.k8s.io/v1/customresourcedefinitions",
    "ClusterRole": "/apis/rbac.authorization.k8s.io/v1/clusterroles",
    "ClusterRoleBinding": "/apis/rbac.authorization.k8s.io/v1/clusterrolebindings",
    "PodCliqueSet": "/apis/grove.io/v1alpha1/namespaces/default/podcliquesets",
}

pytestmark = pytest.mark.slow


def _documents(path: Path) -> list[dict[str, Any]]:
    return [d for d in yaml.safe_load_all(path.read_text(encoding="utf-8")) if d]


async def _create(sim: SimCluster, documents: list[dict[str, Any]]) -> None:
    """Create objects as the cluster administrator (kubectl would send no token over plain HTTP)."""
    async with aiohttp.ClientSession() as session:
        for document in documents:
            async with session.post(sim.url + PATHS[document["kind"]], json=document, headers=ADMIN) as response:
                assert response.status == 201, await response.text()


async def _pods(sim: SimCluster) -> list[dict[str, Any]]:
    async with (
        aiohttp.ClientSession() as session,
        session.get(sim.url + "/api/v1/namespaces/default/pods", headers=ADMIN) as response,
    ):
        items: list[dict[str, Any]] = (await response.json())["items"]
        return items


@pytest.fixture(scope="module")
def rbac_cluster() -> Iterator[SimCluster]:
    """An RBAC cluster with Grove's CRDs and the programs' ServiceAccounts (bound to nothing yet)."""
    with SimCluster(SimOptions(authorization_mode="RBAC"), nodes=nodes_from_flags(4, 8, "block=2,rack=4")) as sim:
        yield sim


def _kubeconfigs(sim: SimCluster) -> dict[str, str]:
    return {
        name: sim.service_account_kubeconfig("grove-system", name) for name in ("grove-operator", "grove-scheduler")
    }


async def _all_bound_and_running(sim: SimCluster, count: int) -> bool:
    """Poll (a guard of about a minute, not a measurement) until ``count`` pods are bound and Running."""
    for _ in range(600):
        pods = await _pods(sim)
        if len(pods) == count and all(p["spec"].get("nodeName") and p["status"]["phase"] == "Running" for p in pods):
            return True
        await asyncio.sleep(0.1)
    return False


async def test_operator_and_scheduler_as_their_service_accounts(rbac_cluster: SimCluster, tmp_path: Path) -> None:
    """With the fixtures' ClusterRoles bound, the operator (webhooks and leader election on) turns a PodCliqueSet into
    its 9 pods and the scheduler binds every one; all of it through RBAC as the two service accounts."""
    sim = rbac_cluster
    await _create(sim, [d for f in sorted((ROOT / "crds").glob("*.yaml")) for d in _documents(f)])
    await _create(sim, _documents(RBAC_FIXTURES / "grove-operator.yaml"))
    await _create(sim, _documents(RBAC_FIXTURES / "grove-scheduler.yaml"))
    configs = _kubeconfigs(sim)
    env = clean_env(tmp_path)
    async with (
        running(
            "grove-operator", "--kubeconfig", configs["grove-operator"], "--webhooks", "--webhook-port", "0",
            *NO_LISTENERS, env=env,
        ) as operator,
        running("grove-scheduler", "--kubeconfig", configs["grove-scheduler"], *NO_LISTENERS, env=env) as scheduler,
    ):  # fmt: skip
        await _create(sim, _documents(ROOT / "tests" / "fixtures" / "pcs" / "simple" / "simple1.yaml"))
        await scheduler.event("gang bound")
        assert await _all_bound_and_running(sim, 9)
        forbidden = [line for p in (operator, scheduler) for line in p.lines if "forbidden" in line.lower()]
        assert forbidden == []


async def test_a_scheduler_without_pods_binding_is_refused(rbac_cluster: SimCluster, tmp_path: Path) -> None:
    """The same scheduler with ``pods/binding`` taken out of its role: its binds are 403s and it reports the gang as
    not scheduled, naming the refusal."""
    sim = rbac_cluster
    role, binding = _documents(RBAC_FIXTURES / "grove-scheduler.yaml")
    crippled = copy.deepcopy(role)
    crippled["metadata"]["name"] = "grove-scheduler-no-bind"
    crippled["rules"] = [r for r in crippled["rules"] if "pods/binding" not in r["resources"]]
    rebound = copy.deepcopy(binding)
    rebound["metadata"]["name"] = "grove-scheduler-no-bind"
    rebound["roleRef"]["name"] = "grove-scheduler-no-bind"
    rebound["subjects"] = [{"kind": "ServiceAccount", "namespace": "grove-system", "name": "weak-scheduler"}]
    await _create(sim, [crippled, rebound])
    weak = sim.service_account_kubeconfig("grove-system", "weak-scheduler")
    unplaced = {
        "apiVersion": "v1",
        "kind": "Pod",
        "metadata": {"name": "lonely"},
        "spec": {"schedulerName": "grove-scheduler", "containers": [{"name": "c", "image": "i"}]},
    }
    async with aiohttp.ClientSession() as session:
        url = sim.url + "/api/v1/namespaces/default/pods"
        async with session.post(url, json=unplaced, headers=ADMIN) as response:
            assert response.status == 201, await response.text()
    refusal = 'User \\"system:serviceaccount:grove-system:weak-scheduler\\" cannot create resource \\"pods/binding\\"'
    async with running(
        "grove-scheduler", "--kubeconfig", weak, "--no-leader-elect", *NO_LISTENERS, env=clean_env(tmp_path)
    ) as scheduler:
        await scheduler.wait_for(lambda p: any(refusal in line for line in p.lines))
    pods = {p["metadata"]["name"]: p for p in await _pods(sim)}
    assert not pods["lonely"]["spec"].get("nodeName")

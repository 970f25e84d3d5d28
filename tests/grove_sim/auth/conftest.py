"""An RBAC-enforcing simulated cluster per module, with helpers that write RBAC objects as the administrator."""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

import aiohttp
import pytest

from grove_sim.server import SIM_TOKEN, SimOptions
from grove_sim.testing import SimCluster

RBAC = "rbac.authorization.k8s.io"
ADMIN_HEADERS = {"Authorization": f"Bearer {SIM_TOKEN}"}
IMPERSONATOR = {
    "apiVersion": f"{RBAC}/v1",
    "kind": "ClusterRole",
    "metadata": {"name": "test-impersonator"},
    "rules": [{"apiGroups": [""], "resources": ["users", "groups", "serviceaccounts"], "verbs": ["impersonate"]}],
}


@pytest.fixture(scope="module")
def sim() -> Iterator[SimCluster]:
    """This folder's module cluster (``kubectl_env`` and the clients of tests/conftest.py reach it): one with
    ``--authorization-mode RBAC``; anonymous callers may impersonate (and nothing else), because
    kubectl sends no token over plain HTTP: ``kubectl --as`` is how these tests choose who asks."""
    with SimCluster(SimOptions(authorization_mode="RBAC")) as cluster:
        cluster.call(lambda s: _create(s, "clusterroles", "", IMPERSONATOR))
        binding = cluster_role_binding("test-impersonator", "test-impersonator", [group("system:unauthenticated")])
        cluster.call(lambda s: _create(s, "clusterrolebindings", "", binding))
        yield cluster


def _create(server: Any, plural: str, namespace: str, body: dict[str, Any]) -> dict[str, Any]:
    group = "" if plural in ("namespaces", "serviceaccounts", "pods") else RBAC
    info = server.registry.get(group, "v1", plural)
    result: dict[str, Any] = server.core.create(info, namespace, body)
    return result


def group(name: str) -> dict[str, str]:
    return {"kind": "Group", "apiGroup": RBAC, "name": name}


def user(name: str) -> dict[str, str]:
    return {"kind": "User", "apiGroup": RBAC, "name": name}


def service_account(namespace: str, name: str) -> dict[str, str]:
    return {"kind": "ServiceAccount", "namespace": namespace, "name": name}


def cluster_role_binding(name: str, role: str, subjects: list[dict[str, str]]) -> dict[str, Any]:
    return {
        "apiVersion": f"{RBAC}/v1",
        "kind": "ClusterRoleBinding",
        "metadata": {"name": name},
        "roleRef": {"apiGroup": RBAC, "kind": "ClusterRole", "name": role},
        "subjects": subjects,
    }


def role_binding(name: str, kind: str, role: str, subjects: list[dict[str, str]]) -> dict[str, Any]:
    return {
        "apiVersion": f"{RBAC}/v1",
        "kind": "RoleBinding",
        "metadata": {"name": name},
        "roleRef": {"apiGroup": RBAC, "kind": kind, "name": role},
        "subjects": subjects,
    }


async def admin(session: aiohttp.ClientSession, sim: SimCluster, method: str, path: str, body: Any = None) -> Any:
    """One request as the cluster administrator; fails the test unless it succeeds."""
    async with session.request(method, sim.url + path, json=body, headers=ADMIN_HEADERS) as response:
        answer = await response.json()
        assert response.status < 300, answer
        return answer

"""The audit log (kube-apiserver's ``--audit-log-path``): one event per request, naming the user the bearer token
authenticates as, the verb as kube-apiserver derives it and the object."""

from __future__ import annotations

import json
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import aiohttp
import pytest

from grove_sim.server import SIM_TOKEN, SimOptions
from grove_sim.testing import SimCluster


@pytest.fixture(scope="module")
def audited(tmp_path_factory: pytest.TempPathFactory) -> Iterator[tuple[SimCluster, Path]]:
    log = tmp_path_factory.mktemp("audit") / "audit.log"
    with SimCluster(SimOptions(audit_log=str(log))) as sim:
        yield sim, log


def events(log: Path) -> list[dict[str, Any]]:
    return [json.loads(line) for line in log.read_text().splitlines()]


@pytest.mark.slow
async def test_each_request_is_one_event_with_user_verb_and_object(audited: tuple[SimCluster, Path]) -> None:
    """Verbs follow kube-apiserver (list vs get vs watch, deletecollection); the administrator's token, a
    service account's and none at all are told apart."""
    sim, log = audited
    sa_token = sim.call(lambda s: s.tokens.token_for("default", "reader"))
    pod = {"metadata": {"name": "p"}, "spec": {"containers": [{"name": "c", "image": "busybox"}]}}
    requests: list[tuple[str, str, str | None, Any]] = [
        ("POST", "/api/v1/namespaces/default/pods", SIM_TOKEN, pod),
        ("GET", "/api/v1/namespaces/default/pods/p", sa_token, None),
        ("GET", "/api/v1/namespaces/default/pods?labelSelector=a%3Db", sa_token, None),
        ("GET", "/api/v1/namespaces/default/pods?watch=true&timeoutSeconds=1", sa_token, None),
        ("GET", "/api/v1/namespaces/default/pods/p/status", None, None),
        ("DELETE", "/api/v1/namespaces/default/configmaps", SIM_TOKEN, None),
        ("GET", "/version", None, None),
    ]
    account = {"metadata": {"name": "reader"}}
    async with aiohttp.ClientSession() as session:
        headers = {"Authorization": f"Bearer {SIM_TOKEN}"}
        async with session.post(f"{sim.url}/api/v1/namespaces/default/serviceaccounts", json=account, headers=headers):
            pass
        for method, path, token, body in requests:
            headers = {"Authorization": f"Bearer {token}"} if token else {}
            async with session.request(method, sim.url + path, json=body, headers=headers) as resp:
                await resp.read()
    seen = [
        (e["verb"], e["user"]["username"], (e.get("objectRef") or {}).get("subresource"), e["requestURI"])
        for e in events(log)[-len(requests) :]
    ]
    reader = "system:serviceaccount:default:reader"
    assert [s[:3] for s in seen] == [
        ("create", "kubernetes-admin", None),
        ("get", reader, None),
        ("list", reader, None),
        ("watch", reader, None),
        ("get", "system:anonymous", "status"),
        ("deletecollection", "kubernetes-admin", None),
        ("get", "system:anonymous", None),
    ]
    assert seen[2][3] == "/api/v1/namespaces/default/pods?labelSelector=a%3Db"
    last = events(log)[-len(requests) + 1]
    assert last["apiVersion"] == "audit.k8s.io/v1"
    assert last["objectRef"] == {
        "resource": "pods",
        "apiGroup": "",
        "apiVersion": "v1",
        "namespace": "default",
        "name": "p",
    }

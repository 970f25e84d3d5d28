"""grove-sim authenticates callers as kube-apiserver does: the admin token, service-account tokens, anonymous
requests, impersonation; an unknown token is a 401."""

from __future__ import annotations

import subprocess
from collections.abc import Callable
from typing import Any

import aiohttp
import pytest

from grove_sim.testing import SimCluster

Obj = dict[str, Any]
WHOAMI = "/apis/authentication.k8s.io/v1/selfsubjectreviews"
REVIEW = {"apiVersion": "authentication.k8s.io/v1", "kind": "SelfSubjectReview"}


async def _whoami(sim: SimCluster, headers: dict[str, str]) -> tuple[int, Obj]:
    async with (
        aiohttp.ClientSession() as session,
        session.post(f"{sim.url}{WHOAMI}", json=REVIEW, headers=headers) as r,
    ):
        return r.status, await r.json()


def _token(kubeconfig: str) -> str:
    import yaml

    with open(kubeconfig, encoding="utf-8") as handle:
        return str(yaml.safe_load(handle)["users"][0]["user"]["token"])


async def test_admin_anonymous_and_unknown_tokens(sim: SimCluster) -> None:
    """The kubeconfig's token is the admin in system:masters; no token is anonymous; any other token is 401
    with kube-apiserver's Status, before anything else is looked at."""
    status, review = await _whoami(sim, {"Authorization": f"Bearer {_token(sim.kubeconfig)}"})
    assert status == 201
    assert review["status"]["userInfo"] == {
        "username": "kubernetes-admin",
        "groups": ["system:masters", "system:authenticated"],
    }
    assert (await _whoami(sim, {}))[1]["status"]["userInfo"]["username"] == "system:anonymous"
    for header in ("Bearer nope", "Basic YWRtaW46YWRtaW4=", "Bearer"):
        status, body = await _whoami(sim, {"Authorization": header})
        assert status == 401
        assert body == {
            "kind": "Status",
            "apiVersion": "v1",
            "metadata": {},
            "status": "Failure",
            "message": "Unauthorized",
            "reason": "Unauthorized",
            "code": 401,
        }
    headers = {"Authorization": "Bearer nope"}
    async with aiohttp.ClientSession() as session, session.get(f"{sim.url}/api/v1/pods", headers=headers) as listed:
        assert listed.status == 401


async def test_service_account_tokens_are_valid_while_their_secret_and_account_exist(sim: SimCluster) -> None:
    """A token the token controller minted is its service account (with the service-account groups) until the
    Secret holding it is deleted."""
    config = sim.service_account_kubeconfig("auth-ns", "robot")
    token = _token(config)
    status, review = await _whoami(sim, {"Authorization": f"Bearer {token}"})
    user = review["status"]["userInfo"]
    assert status == 201
    assert user["username"] == "system:serviceaccount:auth-ns:robot"
    assert user["groups"] == ["system:serviceaccounts", "system:serviceaccounts:auth-ns", "system:authenticated"]
    assert user["uid"]
    async with aiohttp.ClientSession() as session:
        url = f"{sim.url}/api/v1/namespaces/auth-ns/secrets/robot-token"
        async with session.delete(url) as deleted:
            assert deleted.status == 200
    assert (await _whoami(sim, {"Authorization": f"Bearer {token}"}))[0] == 401


async def test_bound_tokens_are_their_service_account_while_it_exists(sim: SimCluster) -> None:
    """A token issued for a pod's projected volume (no Secret holds it) authenticates as its service account, and
    stops doing so once the account is deleted, as kube-apiserver checks a bound token's account."""
    sim.service_account_kubeconfig("bound-ns", "runner")
    token = sim.call(lambda s: s.tokens.token_for("bound-ns", "runner-projected"))
    headers = {"Authorization": f"Bearer {token}"}
    assert (await _whoami(sim, headers))[0] == 401  # issued for an account that does not exist
    async with aiohttp.ClientSession() as session:
        url = f"{sim.url}/api/v1/namespaces/bound-ns/serviceaccounts"
        async with session.post(url, json={"metadata": {"name": "runner-projected"}}) as created:
            assert created.status == 201
        status, review = await _whoami(sim, headers)
        assert status == 201
        assert review["status"]["userInfo"]["username"] == "system:serviceaccount:bound-ns:runner-projected"
        async with session.delete(f"{url}/runner-projected") as deleted:
            assert deleted.status == 200
    assert (await _whoami(sim, headers))[0] == 401


async def test_impersonation_replaces_the_user(sim: SimCluster) -> None:
    """Impersonate-User/Group headers (kubectl --as, --as-group) name the user admission sees."""
    status, review = await _whoami(
        sim, {"Impersonate-User": "system:serviceaccount:team:bot", "Authorization": f"Bearer {_token(sim.kubeconfig)}"}
    )
    assert status == 201
    assert review["status"]["userInfo"]["groups"] == [
        "system:serviceaccounts",
        "system:serviceaccounts:team",
        "system:authenticated",
    ]


@pytest.mark.kubectl
def test_kubectl_auth_whoami(kubectl: Callable[..., subprocess.CompletedProcess[str]]) -> None:
    """``kubectl auth whoami`` works (it posts a protobuf body); ``--as`` is how kubectl acts as someone over
    plain HTTP, where it sends no bearer token."""
    assert "system:anonymous" in kubectl("auth", "whoami").stdout
    impersonated = kubectl("auth", "whoami", "--as=alice", "--as-group=devs").stdout
    assert "alice" in impersonated
    assert "[devs system:authenticated]" in impersonated

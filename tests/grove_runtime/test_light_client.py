"""The light client: a Connection read from the resolved configuration without kubernetes-asyncio, and the same
KubeClient verbs over LightTransport (bearer token re-read from its file, user agent), informer included."""

from __future__ import annotations

import asyncio
import base64
import contextlib
import ssl
from pathlib import Path
from typing import Any

import pytest
import yaml

from grove_runtime import _transport
from grove_runtime._transport import LightTransport, ssl_context
from grove_runtime.client import KubeClient, RetryPolicy
from grove_runtime.informer import Informer
from grove_runtime.kubeconfig import Connection, KubeconfigError, load_connection
from grove_runtime.resources import PODS

from .conftest import MiniApi


def kubeconfig(path: Path, user: dict[str, Any], cluster: dict[str, Any] | None = None, **extra: Any) -> Path:
    doc = {
        "apiVersion": "v1",
        "kind": "Config",
        "clusters": [{"name": "c", "cluster": {"server": "https://k8s.example:6443", **(cluster or {})}}],
        "users": [{"name": "u", "user": user}],
        "contexts": [{"name": "x", "context": {"cluster": "c", "user": "u"}}],
        "current-context": "x",
        **extra,
    }
    path.write_text(yaml.safe_dump(doc))
    return path


def test_a_kubeconfig_gives_server_credentials_and_tls_paths_relative_to_the_file(tmp_path: Path) -> None:
    """File references resolve against the kubeconfig's folder, as kubectl resolves them; data is decoded."""
    ca = base64.b64encode(b"-----BEGIN CERTIFICATE-----\n").decode()
    cluster = {"certificate-authority-data": ca, "tls-server-name": "api", "proxy-url": "http://proxy:3128"}
    path = kubeconfig(
        tmp_path / "config", {"tokenFile": "secrets/token", "client-certificate": "/abs/tls.crt"}, cluster
    )
    connection = load_connection(str(path), env={})
    assert connection == Connection(
        server="https://k8s.example:6443",
        token_file=str(tmp_path / "secrets" / "token"),
        ca_data=b"-----BEGIN CERTIFICATE-----\n",
        cert_file="/abs/tls.crt",
        tls_server_name="api",
        proxy="http://proxy:3128",
    )


@pytest.mark.parametrize(
    ("user", "extra", "message"),
    [
        ({"exec": {"command": "aws"}}, {}, "credentials of kind 'exec' are not supported"),
        ({"auth-provider": {"name": "oidc"}}, {}, "'auth-provider'"),
        ({"token": "t"}, {"current-context": "nope"}, "context 'nope' is not defined"),
        ({"token": "t", "client-certificate-data": "not base64!"}, {}, "Only base64 data is allowed"),
    ],
)
def test_what_the_light_client_cannot_use_is_one_clear_error(
    tmp_path: Path, user: dict[str, Any], extra: dict[str, Any], message: str
) -> None:
    path = kubeconfig(tmp_path / "config", user, **extra)
    with pytest.raises(KubeconfigError, match=message):
        load_connection(str(path), env={})


def test_in_cluster_uses_the_service_host_and_the_mounted_token(tmp_path: Path) -> None:
    (tmp_path / "token").write_text("sa-token")
    (tmp_path / "ca.crt").write_text("ca")
    env = {"KUBERNETES_SERVICE_HOST": "fd00::1", "KUBERNETES_SERVICE_PORT": "443", "HOME": str(tmp_path)}
    connection = load_connection(env=env, sa_dir=tmp_path)
    assert connection == Connection(
        server="https://[fd00::1]:443", token_file=str(tmp_path / "token"), ca_file=str(tmp_path / "ca.crt")
    )


def test_an_insecure_cluster_skips_verification() -> None:
    context = ssl_context(Connection(server="https://x", insecure=True))
    assert context.verify_mode == ssl.CERT_NONE
    assert not context.check_hostname
    assert ssl_context(Connection(server="https://x")).verify_mode == ssl.CERT_REQUIRED


async def test_requests_carry_the_token_from_its_file_and_the_user_agent(
    mini_api: MiniApi, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A rotated token file is read again (client-go re-reads it every minute; here at once)."""
    monkeypatch.setattr(_transport, "TOKEN_FILE_REFRESH", 0.0)
    assert mini_api.server is not None
    token = tmp_path / "token"
    token.write_text("first\n")
    connection = Connection(server=str(mini_api.server.make_url("")).rstrip("/"), token_file=str(token))
    retry = RetryPolicy(attempts=2, initial=0.001, maximum=0.01)
    client = KubeClient(None, transport=LightTransport(connection, user_agent="probe/1"), retry=retry)
    try:
        await client.list(PODS, "default")
        token.write_text("second\n")
        await client.list(PODS, "default")
    finally:
        await client.close()
    assert [h.get("Authorization") for h in mini_api.headers] == ["Bearer first", "Bearer second"]
    assert {h.get("User-Agent") for h in mini_api.headers} == {"probe/1"}


async def test_an_informer_runs_over_the_light_client(mini_api: MiniApi) -> None:
    """List, then watch: the informer sees a pod created after it synced."""
    assert mini_api.server is not None
    mini_api.put("api/v1/pods", {"metadata": {"name": "a", "namespace": "default"}})
    connection = Connection(server=str(mini_api.server.make_url("")).rstrip("/"))
    client = KubeClient(None, transport=LightTransport(connection))
    informer = Informer(client, PODS, namespace="default")
    task = asyncio.get_running_loop().create_task(informer.run())
    try:
        await asyncio.wait_for(informer.wait_synced(), 10)
        mini_api.put("api/v1/pods", {"metadata": {"name": "b", "namespace": "default"}})
        for _ in range(200):
            if len(informer.store.list()) == 2:
                break
            await asyncio.sleep(0.01)
        assert sorted(p["metadata"]["name"] for p in informer.store.list()) == ["a", "b"]
    finally:
        task.cancel()
        with contextlib.suppress(asyncio.CancelledError):
            await task
        mini_api.close_watches()
        await client.close()


def test_a_client_needs_an_api_client_or_a_transport() -> None:
    with pytest.raises(ValueError, match="needs an ApiClient or a transport"):
        KubeClient(None)

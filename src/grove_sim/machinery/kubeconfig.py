"""The kubeconfig document a client of the simulated server gets: one cluster, one user, one context.

Shared by ``grove-sim up`` (the administrator's file) and the kubelet, which gives each executable-image process a
file of its own carrying the pod's service-account token instead of the administrator's credentials.
"""

from __future__ import annotations

import base64
from typing import Any

__all__ = ["kubeconfig_document"]


def kubeconfig_document(
    url: str,
    *,
    name: str = "grove-sim",
    token: str | None = None,
    namespace: str = "default",
    user: str | None = None,
    ca_data: bytes | None = None,
) -> dict[str, Any]:
    """A kubeconfig for ``url`` authenticating with ``token`` (none: anonymous), ``namespace`` as the default,
    trusting the CA whose PEM is ``ca_data`` (an HTTPS server with a CA of its own)."""
    user_name = user or name
    cluster: dict[str, Any] = {"server": url}
    if ca_data is not None:
        cluster["certificate-authority-data"] = base64.b64encode(ca_data).decode()
    return {
        "apiVersion": "v1",
        "kind": "Config",
        "clusters": [{"name": name, "cluster": cluster}],
        "users": [{"name": user_name, "user": {"token": token} if token else {}}],
        "contexts": [{"name": name, "context": {"cluster": name, "user": user_name, "namespace": namespace}}],
        "current-context": name,
        "preferences": {},
    }

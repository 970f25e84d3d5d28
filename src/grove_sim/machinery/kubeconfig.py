"""The kubeconfig document a client of the simulated server gets: one cluster, one user, one context.

Shared by ``grove-sim up`` (the administrator's file) and the kubelet, which gives each executable-image process a
file of its own carrying the pod's service-account token instead of the administrator's credentials.
"""

from __future__ import annotations

from typing import Any

__all__ = ["kubeconfig_document"]


def kubeconfig_document(
    url: str, *, name: str = "grove-sim", token: str | None = None, namespace: str = "default", user: str | None = None
) -> dict[str, Any]:
    """A kubeconfig for ``url`` authenticating with ``token`` (none: anonymous), ``namespace`` as the default."""
    user_name = user or name
    return {
        "apiVersion": "v1",
        "kind": "Config",
        "clusters": [{"name": name, "cluster": {"server": url}}],
        "users": [{"name": user_name, "user": {"token": token} if token else {}}],
        "contexts": [{"name": name, "context": {"cluster": name, "user": user_name, "namespace": namespace}}],
        "current-context": name,
        "preferences": {},
    }

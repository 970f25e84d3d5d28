"""The ClusterRoles and ClusterRoleBindings kube-apiserver's RBAC bootstrap creates, as far as clients rely on them.

``cluster-admin`` for ``system:masters``; ``system:discovery`` (API discovery, OpenAPI, health, version) and
``system:basic-user`` (self-subject reviews: ``kubectl auth can-i``, ``kubectl auth whoami``) for every authenticated
user; ``system:public-info-viewer`` (health and version) for everyone, anonymous included; ``system:monitoring``
(``/metrics``) bound to nobody, as upstream. Same names, labels, annotations and rules as upstream's bootstrap policy,
so ``kubectl get clusterroles`` on grove-sim reads like a cluster's; the aggregated ``admin``/``edit``/``view``
roles are not created.
"""

from __future__ import annotations

from typing import Any, Final

__all__ = ["bootstrap_cluster_role_bindings", "bootstrap_cluster_roles"]

_RBAC: Final = "rbac.authorization.k8s.io"
_META: Final = {
    "labels": {"kubernetes.io/bootstrapping": "rbac-defaults"},
    "annotations": {"rbac.authorization.kubernetes.io/autoupdate": "true"},
}
_HEALTH: Final = ["/healthz", "/livez", "/readyz", "/version", "/version/"]
_DISCOVERY: Final = sorted(["/api", "/api/*", "/apis", "/apis/*", "/openapi", "/openapi/*", *_HEALTH])


def _meta(name: str) -> dict[str, Any]:
    return {"name": name, "labels": dict(_META["labels"]), "annotations": dict(_META["annotations"])}


def _role(name: str, rules: list[dict[str, Any]]) -> dict[str, Any]:
    return {"apiVersion": f"{_RBAC}/v1", "kind": "ClusterRole", "metadata": _meta(name), "rules": rules}


def bootstrap_cluster_roles() -> list[dict[str, Any]]:
    """The default ClusterRoles (upstream's ``ClusterRoles()`` subset, see the module doc)."""
    return [
        _role(
            "cluster-admin",
            [{"apiGroups": ["*"], "resources": ["*"], "verbs": ["*"]}, {"nonResourceURLs": ["*"], "verbs": ["*"]}],
        ),
        _role("system:discovery", [{"nonResourceURLs": list(_DISCOVERY), "verbs": ["get"]}]),
        _role("system:public-info-viewer", [{"nonResourceURLs": list(_HEALTH), "verbs": ["get"]}]),
        _role(
            "system:basic-user",
            [
                {
                    "apiGroups": ["authorization.k8s.io"],
                    "resources": ["selfsubjectaccessreviews", "selfsubjectrulesreviews"],
                    "verbs": ["create"],
                },
                {"apiGroups": ["authentication.k8s.io"], "resources": ["selfsubjectreviews"], "verbs": ["create"]},
            ],
        ),
        _role(
            "system:monitoring",
            [
                {
                    "nonResourceURLs": ["/healthz", "/healthz/*", "/livez", "/livez/*", "/metrics", "/metrics/slis"],
                    "verbs": ["get"],
                },
                {"nonResourceURLs": ["/readyz", "/readyz/*"], "verbs": ["get"]},
            ],
        ),
    ]


def _binding(name: str, groups: list[str]) -> dict[str, Any]:
    return {
        "apiVersion": f"{_RBAC}/v1",
        "kind": "ClusterRoleBinding",
        "metadata": _meta(name),
        "roleRef": {"apiGroup": _RBAC, "kind": "ClusterRole", "name": name},
        "subjects": [{"apiGroup": _RBAC, "kind": "Group", "name": group} for group in groups],
    }


def bootstrap_cluster_role_bindings() -> list[dict[str, Any]]:
    """The default ClusterRoleBindings of those roles."""
    return [
        _binding("cluster-admin", ["system:masters"]),
        _binding("system:discovery", ["system:authenticated"]),
        _binding("system:basic-user", ["system:authenticated"]),
        _binding("system:public-info-viewer", ["system:authenticated", "system:unauthenticated"]),
    ]

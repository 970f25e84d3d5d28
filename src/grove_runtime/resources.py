"""Descriptors for API resource types, so one client and one informer serve any kind, built-in or custom.

A :class:`ResourceType` knows how to build collection and object URLs; well-known built-ins are predefined.
"""

from __future__ import annotations

from dataclasses import dataclass


@dataclass(frozen=True, slots=True)
class ResourceType:
    """Group/version/plural/kind of one API resource, and whether it lives in namespaces."""

    group: str
    version: str
    plural: str
    kind: str
    namespaced: bool = True

    @property
    def api_version(self) -> str:
        """``apiVersion`` as written in objects (``v1`` or ``group/version``)."""
        return f"{self.group}/{self.version}" if self.group else self.version

    @property
    def base_path(self) -> str:
        """``/api/v1`` for the core group, ``/apis/<group>/<version>`` otherwise."""
        return f"/apis/{self.group}/{self.version}" if self.group else f"/api/{self.version}"

    @property
    def is_builtin(self) -> bool:
        """Built-in kinds accept strategic merge patch; custom resources do not (heuristic: no dot or k8s.io)."""
        return self.group == "" or "." not in self.group or self.group.endswith(".k8s.io")

    def collection_path(self, namespace: str | None = None) -> str:
        """URL of the collection; ``namespace=None`` (or a cluster-scoped kind) means across all namespaces."""
        if self.namespaced and namespace:
            return f"{self.base_path}/namespaces/{namespace}/{self.plural}"
        return f"{self.base_path}/{self.plural}"

    def object_path(self, namespace: str, name: str, subresource: str | None = None) -> str:
        """URL of one object, optionally of one of its subresources (``status``, ``scale``, ``binding``)."""
        path = f"{self.collection_path(namespace if self.namespaced else None)}/{name}"
        return f"{path}/{subresource}" if subresource else path

    def __str__(self) -> str:
        return f"{self.plural}.{self.group}" if self.group else self.plural


PODS = ResourceType("", "v1", "pods", "Pod")
NODES = ResourceType("", "v1", "nodes", "Node", namespaced=False)
SERVICES = ResourceType("", "v1", "services", "Service")
NAMESPACES = ResourceType("", "v1", "namespaces", "Namespace", namespaced=False)
EVENTS = ResourceType("", "v1", "events", "Event")
CONFIGMAPS = ResourceType("", "v1", "configmaps", "ConfigMap")
SECRETS = ResourceType("", "v1", "secrets", "Secret")
SERVICEACCOUNTS = ResourceType("", "v1", "serviceaccounts", "ServiceAccount")
LEASES = ResourceType("coordination.k8s.io", "v1", "leases", "Lease")
ROLES = ResourceType("rbac.authorization.k8s.io", "v1", "roles", "Role")
ROLEBINDINGS = ResourceType("rbac.authorization.k8s.io", "v1", "rolebindings", "RoleBinding")
HPAS = ResourceType("autoscaling", "v2", "horizontalpodautoscalers", "HorizontalPodAutoscaler")
PRIORITYCLASSES = ResourceType("scheduling.k8s.io", "v1", "priorityclasses", "PriorityClass", namespaced=False)
CRDS = ResourceType(
    "apiextensions.k8s.io", "v1", "customresourcedefinitions", "CustomResourceDefinition", namespaced=False
)

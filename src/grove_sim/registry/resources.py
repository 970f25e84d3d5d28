"""The registry of served resources: built-in kinds plus the custom resources that CRD objects declare.

Everything that depends on "what does this server serve" (request routing, discovery, OpenAPI, field selectors,
schema validation, printer columns, scale paths) reads one ``ResourceInfo`` from here. CRDs register and unregister
their kinds the moment the CRD object is written, because kubectl re-fetches discovery immediately after applying a
CRD and must find the new kind (apiserver-notes §1.1).
"""

from __future__ import annotations

from collections.abc import Iterator, Mapping
from dataclasses import dataclass, field
from typing import Any

from grove_sim.schema.structural import StructuralSchema
from grove_sim.storage.store import ResourceKey

__all__ = ["ALL_VERBS", "Registry", "ResourceInfo", "ResourceKey"]

ALL_VERBS: tuple[str, ...] = ("create", "delete", "deletecollection", "get", "list", "patch", "update", "watch")


@dataclass(eq=False)
class ResourceInfo:
    """One served resource (a group/version/plural) and how the server treats it."""

    group: str
    version: str
    plural: str
    singular: str
    kind: str
    namespaced: bool
    short_names: tuple[str, ...] = ()
    categories: tuple[str, ...] = ()
    subresources: frozenset[str] = frozenset()
    verbs: tuple[str, ...] = ALL_VERBS
    custom: bool = False
    has_generation: bool = False
    schema: StructuralSchema | None = None
    printer_columns: list[dict[str, Any]] = field(default_factory=list)
    scale: dict[str, str] | None = None
    selectable_fields: tuple[str, ...] = ()

    key: ResourceKey = field(init=False)
    """Storage key shared by every version of the resource: (group, plural)."""
    group_version: str = field(init=False)
    """``v1`` for core, ``<group>/<version>`` otherwise (the ``apiVersion`` of its objects)."""
    has_status: bool = field(init=False)
    """Whether ``status`` is a separate subresource (main writes then ignore it)."""

    def __post_init__(self) -> None:
        # Read on every request and every write: computed once rather than per access.
        self.key = (self.group, self.plural)
        self.group_version = f"{self.group}/{self.version}" if self.group else self.version
        self.has_status = "status" in self.subresources


def _builtin(
    group: str,
    version: str,
    plural: str,
    kind: str,
    namespaced: bool = True,
    short: tuple[str, ...] = (),
    cats: tuple[str, ...] = (),
    subs: tuple[str, ...] = (),
    verbs: tuple[str, ...] = ALL_VERBS,
    generation: bool = False,
) -> ResourceInfo:
    return ResourceInfo(
        group=group,
        version=version,
        plural=plural,
        singular=kind.lower(),
        kind=kind,
        namespaced=namespaced,
        short_names=short,
        categories=cats,
        subresources=frozenset(subs),
        verbs=verbs,
        has_generation=generation,
    )


def _access_reviews() -> list[ResourceInfo]:
    """``authorization.k8s.io/v1``: the reviews that ask the authorizer (create only, nothing is stored)."""
    group, create = "authorization.k8s.io", ("create",)
    return [
        _builtin(group, "v1", "selfsubjectaccessreviews", "SelfSubjectAccessReview", False, verbs=create),
        _builtin(group, "v1", "selfsubjectrulesreviews", "SelfSubjectRulesReview", False, verbs=create),
        _builtin(group, "v1", "subjectaccessreviews", "SubjectAccessReview", False, verbs=create),
        _builtin(group, "v1", "localsubjectaccessreviews", "LocalSubjectAccessReview", True, verbs=create),
    ]


_REPLICAS_SCALE: dict[str, str] = {
    "specReplicasPath": ".spec.replicas",
    "statusReplicasPath": ".status.replicas",
    "labelSelectorPath": ".spec.selector",
}


def workload_resources() -> list[ResourceInfo]:
    """Workload kinds: Deployments and ReplicaSets (with ``/scale``), disruption budgets, and the read-only
    ``metrics.k8s.io`` views that a metrics-server would serve (computed, never stored)."""
    deployments = _builtin(
        "apps", "v1", "deployments", "Deployment", True, ("deploy",), ("all",), ("status", "scale"), generation=True
    )
    replicasets = _builtin(
        "apps", "v1", "replicasets", "ReplicaSet", True, ("rs",), ("all",), ("status", "scale"), generation=True
    )
    deployments.scale = replicasets.scale = dict(_REPLICAS_SCALE)
    return [
        deployments,
        replicasets,
        _builtin("policy", "v1", "poddisruptionbudgets", "PodDisruptionBudget", True, ("pdb",), (), ("status",),
                 generation=True),
        _builtin("metrics.k8s.io", "v1beta1", "pods", "PodMetrics", True, verbs=("get", "list")),
        _builtin("metrics.k8s.io", "v1beta1", "nodes", "NodeMetrics", False, verbs=("get", "list")),
    ]  # fmt: skip


def builtin_resources() -> list[ResourceInfo]:
    """The built-in kinds every simulated cluster serves (apiserver-notes §7)."""
    return [
        _builtin("", "v1", "namespaces", "Namespace", False, ("ns",), (), ("status", "finalize")),
        _builtin("", "v1", "nodes", "Node", False, ("no",), (), ("status",)),
        _builtin(
            "", "v1", "pods", "Pod", True, ("po",), ("all",),
            ("status", "binding", "eviction", "log", "proxy", "portforward"),
        ),
        _builtin("", "v1", "bindings", "Binding", True, verbs=("create",)),
        _builtin("authentication.k8s.io", "v1", "selfsubjectreviews", "SelfSubjectReview", False, verbs=("create",)),
        _builtin("", "v1", "events", "Event", True, ("ev",)),
        _builtin("", "v1", "configmaps", "ConfigMap", True, ("cm",)),
        _builtin("", "v1", "secrets", "Secret", True),
        _builtin("", "v1", "services", "Service", True, ("svc",), ("all",), ("status", "proxy")),
        _builtin("", "v1", "serviceaccounts", "ServiceAccount", True, ("sa",)),
        _builtin("", "v1", "endpoints", "Endpoints", True, ("ep",)),
        _builtin("discovery.k8s.io", "v1", "endpointslices", "EndpointSlice", True),
        _builtin("events.k8s.io", "v1", "events", "Event", True, ("ev",)),
        _builtin("coordination.k8s.io", "v1", "leases", "Lease", True),
        _builtin("scheduling.k8s.io", "v1", "priorityclasses", "PriorityClass", False, ("pc",), generation=True),
        _builtin("rbac.authorization.k8s.io", "v1", "roles", "Role", True),
        _builtin("rbac.authorization.k8s.io", "v1", "rolebindings", "RoleBinding", True),
        _builtin("rbac.authorization.k8s.io", "v1", "clusterroles", "ClusterRole", False),
        _builtin("rbac.authorization.k8s.io", "v1", "clusterrolebindings", "ClusterRoleBinding", False),
        *_access_reviews(),
        _builtin(
            "autoscaling", "v2", "horizontalpodautoscalers", "HorizontalPodAutoscaler", True, ("hpa",), ("all",),
            ("status",), generation=True,
        ),
        *workload_resources(),
        _builtin(
            "apiextensions.k8s.io", "v1", "customresourcedefinitions", "CustomResourceDefinition", False,
            ("crd", "crds"), ("api-extensions",), ("status",), generation=True,
        ),
        _builtin(
            "admissionregistration.k8s.io", "v1", "mutatingwebhookconfigurations", "MutatingWebhookConfiguration",
            False, (), ("api-extensions",), generation=True,
        ),
        _builtin(
            "admissionregistration.k8s.io", "v1", "validatingwebhookconfigurations",
            "ValidatingWebhookConfiguration", False, (), ("api-extensions",), generation=True,
        ),
    ]  # fmt: skip


def infos_from_crd(crd: Mapping[str, Any]) -> list[ResourceInfo]:
    """One ``ResourceInfo`` per served version of a CRD object."""
    spec = crd.get("spec") or {}
    names = spec.get("names") or {}
    group = str(spec.get("group", ""))
    infos = []
    for version in spec.get("versions") or []:
        if not version.get("served", True):
            continue
        subresources = version.get("subresources") or {}
        schema_doc = (version.get("schema") or {}).get("openAPIV3Schema")
        infos.append(
            ResourceInfo(
                group=group,
                version=str(version.get("name")),
                plural=str(names.get("plural", "")),
                singular=str(names.get("singular") or str(names.get("kind", "")).lower()),
                kind=str(names.get("kind", "")),
                namespaced=spec.get("scope", "Namespaced") == "Namespaced",
                short_names=tuple(names.get("shortNames") or ()),
                categories=tuple(names.get("categories") or ()),
                subresources=frozenset(k for k in ("status", "scale") if k in subresources),
                custom=True,
                has_generation=True,
                schema=StructuralSchema(schema_doc) if isinstance(schema_doc, dict) else None,
                printer_columns=list(version.get("additionalPrinterColumns") or []),
                scale=dict(subresources["scale"]) if "scale" in subresources else None,
                selectable_fields=tuple(str(f.get("jsonPath", "")) for f in version.get("selectableFields") or []),
            )
        )
    return infos


class Registry:
    """Served resources by (group, version, plural), with a revision that changes whenever the set changes."""

    def __init__(self) -> None:
        self._by_gvr: dict[tuple[str, str, str], ResourceInfo] = {}
        self._crd_infos: dict[str, list[ResourceInfo]] = {}
        self.revision = 0
        for info in builtin_resources():
            self._add(info)

    def _add(self, info: ResourceInfo) -> None:
        self._by_gvr[(info.group, info.version, info.plural)] = info

    def get(self, group: str, version: str, plural: str) -> ResourceInfo | None:
        """The resource served at ``/apis/<group>/<version>/<plural>`` or None."""
        return self._by_gvr.get((group, version, plural))

    def by_key(self, key: ResourceKey) -> ResourceInfo | None:
        """Any served version of a stored collection (the first registered, i.e. the storage version)."""
        for info in self._by_gvr.values():
            if info.key == key:
                return info
        return None

    def by_kind(self, api_version: str, kind: str) -> ResourceInfo | None:
        """The resource whose objects have this apiVersion and kind (used to resolve ownerReferences)."""
        group, _, version = api_version.rpartition("/")
        for info in self._by_gvr.values():
            if info.kind == kind and info.group == group and info.version == version:
                return info
        return None

    def __iter__(self) -> Iterator[ResourceInfo]:
        return iter(list(self._by_gvr.values()))

    def group_versions(self) -> dict[str, list[str]]:
        """Served versions per group, in kube-apiserver's discovery order (core is the empty group).

        Built-in groups come first, in registration order; CRD groups follow sorted by name: kube-apiserver gives
        every CRD group the same priority (an APIService with groupPriorityMinimum 1000) and breaks the tie by
        name. kubectl resolves a resource name two groups serve (`podcliques`) to the first group listed, so the
        order must not depend on which CRD happened to be applied first.
        """
        builtin: dict[str, list[str]] = {}
        custom: dict[str, list[str]] = {}
        for info in self._by_gvr.values():
            versions = (custom if info.custom else builtin).setdefault(info.group, [])
            if info.version not in versions:
                versions.append(info.version)
        return {**builtin, **dict(sorted(custom.items()))}

    def register_crd(self, crd: Mapping[str, Any]) -> list[ResourceInfo]:
        """(Re-)register the kinds of a CRD; returns the new infos. Raises what ``StructuralSchema`` raises."""
        name = str((crd.get("metadata") or {}).get("name", ""))
        infos = infos_from_crd(crd)
        self.unregister_crd(name)
        for info in infos:
            self._add(info)
        self._crd_infos[name] = infos
        self.revision += 1
        return infos

    def unregister_crd(self, name: str) -> list[ResourceInfo]:
        """Stop serving a CRD's kinds; returns the infos removed."""
        infos = self._crd_infos.pop(name, [])
        for info in infos:
            self._by_gvr.pop((info.group, info.version, info.plural), None)
        if infos:
            self.revision += 1
        return infos

    def crd_infos(self, name: str) -> list[ResourceInfo]:
        """The infos registered for a CRD name (empty when none)."""
        return list(self._crd_infos.get(name, []))

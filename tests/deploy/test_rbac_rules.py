"""The RBAC reading the audit check relies on follows kube-apiserver's authorizer: where a binding grants, what a
subresource and resourceNames mean, and what counts as an unused grant."""

from __future__ import annotations

from typing import Any

from ._rbac import Request, denied, grants_of, unused

Obj = dict[str, Any]
USER = "system:serviceaccount:sys:prog"
SUBJECTS = [{"kind": "ServiceAccount", "name": "prog", "namespace": "sys"}]


def _role(kind: str, name: str, rules: list[Obj], namespace: str = "") -> Obj:
    meta: Obj = {"name": name, **({"namespace": namespace} if namespace else {})}
    return {"kind": kind, "metadata": meta, "rules": rules}


def _binding(kind: str, ref_kind: str, name: str, namespace: str = "") -> Obj:
    meta: Obj = {"name": name, **({"namespace": namespace} if namespace else {})}
    return {"kind": kind, "metadata": meta, "roleRef": {"kind": ref_kind, "name": name}, "subjects": SUBJECTS}


PODS = {"apiGroups": [""], "resources": ["pods"], "verbs": ["get", "list"]}
LEASE = {"apiGroups": ["coordination.k8s.io"], "resources": ["leases"], "resourceNames": ["me"], "verbs": ["get"]}
OBJECTS = [
    _role("ClusterRole", "cluster", [PODS]),
    _binding("ClusterRoleBinding", "ClusterRole", "cluster"),
    _role("Role", "local", [LEASE], "sys"),
    _binding("RoleBinding", "Role", "local", "sys"),
    _role("ClusterRole", "shared", [{"apiGroups": [""], "resources": ["secrets"], "verbs": ["get"]}]),
    _binding("RoleBinding", "ClusterRole", "shared", "sys"),
]


def test_cluster_role_binding_grants_everywhere_role_binding_only_in_its_namespace() -> None:
    grants = grants_of(OBJECTS, USER)
    assert denied([Request("list", "", "pods", "", ""), Request("get", "", "pods", "ns1", "p")], grants) == []
    assert denied([Request("get", "", "secrets", "sys", "s")], grants) == []
    assert denied([Request("get", "", "secrets", "other", "s")], grants) == ["get secrets.core s in other"]
    assert denied([Request("get", "", "secrets", "", "")], grants) == ["get secrets.core (cluster-wide)"]
    assert grants_of(OBJECTS, "system:serviceaccount:sys:someone-else") == []


def test_resource_names_and_subresources_are_exact() -> None:
    grants = grants_of(OBJECTS, USER)
    assert denied([Request("get", "coordination.k8s.io", "leases", "sys", "me")], grants) == []
    for request in (
        Request("get", "coordination.k8s.io", "leases", "sys", "other"),
        Request("create", "coordination.k8s.io", "leases", "sys", ""),
        Request("list", "coordination.k8s.io", "leases", "sys", ""),
        Request("create", "", "pods/binding", "ns1", "p"),
        Request("delete", "", "pods", "ns1", "p"),
    ):
        assert denied([request], grants) == [str(request)]


def test_unused_lists_each_verb_no_request_needed() -> None:
    grants = grants_of(OBJECTS, USER)
    left = unused([Request("list", "", "pods", "", ""), Request("get", "", "secrets", "sys", "s")], grants)
    assert sorted(str(g) for g in left) == [
        "ClusterRole cluster: get pods.core",
        "Role local: get leases.coordination.k8s.io ['me'] in sys",
    ]

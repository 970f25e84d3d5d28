"""Desired ServiceAccount, Role, RoleBinding and SA-token Secret of a PodCliqueSet (grove-reference §2.1, §3.5).

`grove-initc` watches the pods of its gang with this identity. The token Secret is mounted into the init container
only, so the workload's own `serviceAccountName` stays untouched.
"""

from __future__ import annotations

from typing import Any

from grove_api import PodCliqueSet
from grove_api import labels as glabels
from grove_api import names as gnames
from grove_operator.desired.layout import controller_reference

__all__ = ["build_role", "build_role_binding", "build_sa_token_secret", "build_service_account"]


def _metadata(pcs: PodCliqueSet, name: str, component: str) -> dict[str, Any]:
    pcs_name = pcs.metadata.name or ""
    return {
        "name": name,
        "namespace": pcs.metadata.namespace or "default",
        "labels": glabels.component_labels(pcs_name, component, name),
        "ownerReferences": [
            controller_reference(PodCliqueSet.API_VERSION, PodCliqueSet.KIND, pcs_name, pcs.metadata.uid or "")
        ],
    }


def build_service_account(pcs: PodCliqueSet) -> dict[str, Any]:
    """ServiceAccount `<pcs>` whose token `grove-initc` uses."""
    name = gnames.service_account_name(pcs.metadata.name or "")
    return {
        "apiVersion": "v1",
        "kind": "ServiceAccount",
        "metadata": _metadata(pcs, name, glabels.COMPONENT_SERVICE_ACCOUNT),
        "automountServiceAccountToken": True,
    }


def build_role(pcs: PodCliqueSet) -> dict[str, Any]:
    """Role `grove.io:pcs:<pcs>`: read-only access to pods and their status."""
    name = gnames.role_name(pcs.metadata.name or "")
    return {
        "apiVersion": "rbac.authorization.k8s.io/v1",
        "kind": "Role",
        "metadata": _metadata(pcs, name, glabels.COMPONENT_ROLE),
        "rules": [{"apiGroups": [""], "resources": ["pods", "pods/status"], "verbs": ["get", "list", "watch"]}],
    }


def build_role_binding(pcs: PodCliqueSet) -> dict[str, Any]:
    """RoleBinding `grove.io:pcs:<pcs>` of the Role to the PCS ServiceAccount."""
    pcs_name = pcs.metadata.name or ""
    name = gnames.role_binding_name(pcs_name)
    return {
        "apiVersion": "rbac.authorization.k8s.io/v1",
        "kind": "RoleBinding",
        "metadata": _metadata(pcs, name, glabels.COMPONENT_ROLE_BINDING),
        "roleRef": {"apiGroup": "rbac.authorization.k8s.io", "kind": "Role", "name": gnames.role_name(pcs_name)},
        "subjects": [
            {
                "kind": "ServiceAccount",
                "name": gnames.service_account_name(pcs_name),
                "namespace": pcs.metadata.namespace or "default",
            }
        ],
    }


def build_sa_token_secret(pcs: PodCliqueSet) -> dict[str, Any]:
    """Secret `<pcs>-ic-sat` of type service-account-token; the token controller fills in `data.token`."""
    pcs_name = pcs.metadata.name or ""
    metadata = _metadata(pcs, gnames.sa_token_secret_name(pcs_name), glabels.COMPONENT_SA_TOKEN_SECRET)
    metadata["annotations"] = {glabels.ANNOTATION_SERVICE_ACCOUNT_NAME: gnames.service_account_name(pcs_name)}
    return {"apiVersion": "v1", "kind": "Secret", "metadata": metadata, "type": "kubernetes.io/service-account-token"}

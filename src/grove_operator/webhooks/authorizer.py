"""The authorizer webhook: only the operator (and exempt users) may change the objects it manages (§3.12).

Registered (when ``--authorizer`` is on) for objects labelled ``app.kubernetes.io/managed-by: grove-operator``:
PodCliques, PodCliqueScalingGroups and PodGangs on create, update and delete; pods on update and delete; Secrets,
ServiceAccounts, Services, Roles, RoleBindings and HPAs on update and delete. A write is allowed when:

* it is a deletion of a pod (anyone allowed to delete pods may, as upstream);
* the object names no PodCliqueSet (``app.kubernetes.io/part-of``), or that PodCliqueSet does not exist (allowed,
  with a warning);
* that PodCliqueSet carries ``grove.io/disable-managed-resource-protection: "true"``;
* it comes from the operator itself or from an exempt user (``--authorizer-exempt-user``).

Everything else is refused with 403 Forbidden naming the object and how to opt out. The operator's own user name
is whatever the API server says it is (a SelfSubjectReview, ``kubectl auth whoami``), asked once: in a cluster
``system:serviceaccount:NAMESPACE:NAME``, locally the user of the operator's kubeconfig.
"""

from __future__ import annotations

import asyncio
from collections.abc import Callable, Collection, Mapping
from typing import Any

from grove_api import labels as glabels
from grove_runtime.client import Client
from grove_runtime.resources import ResourceType
from grove_runtime.webhook.review import AdmissionRequest, AdmissionResponse, allowed, denied

__all__ = ["SELF_SUBJECT_REVIEWS", "ManagedResourceAuthorizer", "OperatorIdentity"]

SELF_SUBJECT_REVIEWS = ResourceType("authentication.k8s.io", "v1", "selfsubjectreviews", "SelfSubjectReview", False)
Obj = dict[str, Any]
ParentLookup = Callable[[str, str], Obj | None]


class OperatorIdentity:
    """The API server's name for this operator's credentials, asked once and remembered."""

    def __init__(self, client: Client) -> None:
        self._client = client
        self._username: str | None = None
        self._lock = asyncio.Lock()

    async def username(self) -> str:
        """``status.userInfo.username`` of a SelfSubjectReview."""
        async with self._lock:
            if self._username is None:
                review = {"apiVersion": SELF_SUBJECT_REVIEWS.api_version, "kind": "SelfSubjectReview"}
                answer = await self._client.create(SELF_SUBJECT_REVIEWS, review)
                self._username = str(((answer.get("status") or {}).get("userInfo") or {}).get("username") or "")
            return self._username


class ManagedResourceAuthorizer:
    """A raw admission handler (it decides from the request's user and the object's labels)."""

    def __init__(self, identity: OperatorIdentity, exempt: Collection[str], parent: ParentLookup) -> None:
        """``parent(namespace, name)`` is the cached PodCliqueSet, or None."""
        self.identity = identity
        self.exempt = frozenset(exempt)
        self.parent = parent

    async def handle(self, request: AdmissionRequest) -> AdmissionResponse:
        """Allow or refuse one write of a managed object."""
        obj = request.object if request.object is not None else request.old_object
        metadata: Mapping[str, Any] = (obj or {}).get("metadata") or {}
        kind = str(request.kind.get("kind") or "")
        where = f"{kind} {request.namespace}/{request.name or metadata.get('name') or ''}"
        if request.operation == "CONNECT" or (
            request.operation == "DELETE" and kind == "Pod" and not request.kind.get("group")
        ):
            return allowed(f"{request.operation} of {where} is not restricted")
        pcs_name = str((metadata.get("labels") or {}).get(glabels.LABEL_PART_OF) or "")
        if not pcs_name:
            return allowed(warnings=[f"{where} names no PodCliqueSet ({glabels.LABEL_PART_OF}); not protected"])
        pcs = self.parent(request.namespace, pcs_name)
        if pcs is None:
            return allowed(warnings=[f"PodCliqueSet {pcs_name} of {where} not found; not protected"])
        annotations = (pcs.get("metadata") or {}).get("annotations") or {}
        if annotations.get(glabels.ANNOTATION_DISABLE_MANAGED_RESOURCE_PROTECTION) == "true":
            return allowed(f"protection of PodCliqueSet {pcs_name}'s objects is disabled")
        user = request.username
        if user == await self.identity.username() or user in self.exempt:
            return allowed()
        verb = "deletion" if request.operation == "DELETE" else "creation/update"
        return denied(
            f"{verb} of {where} is not allowed: it is managed by grove-operator for PodCliqueSet {pcs_name}; "
            f"only the operator may change it (annotate the PodCliqueSet with "
            f'{glabels.ANNOTATION_DISABLE_MANAGED_RESOURCE_PROTECTION}="true" to allow it)'
        )

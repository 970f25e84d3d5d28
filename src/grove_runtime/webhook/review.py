"""AdmissionReview v1: the request a webhook receives and the response it sends back.

Decoding is strict about what a webhook needs (a request with a uid and an operation) and lenient about the rest,
as controller-runtime's decoder is. Responses are built with the helpers at the bottom; a refusal carries a
``metav1.Status`` whose ``code``, ``reason`` and ``details.causes`` the API server hands to the client unchanged
(``kubectl`` prints ``Error from server (Invalid): ...``).
"""

from __future__ import annotations

import base64
import json
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

__all__ = [
    "AdmissionRequest",
    "AdmissionResponse",
    "ReviewError",
    "allowed",
    "denied",
    "errored",
    "invalid_status",
    "review_response",
]

Obj = dict[str, Any]
API_VERSION = "admission.k8s.io/v1"

_CAUSE_TYPES = {
    "Invalid": ("FieldValueInvalid", "Invalid value"),
    "Required": ("FieldValueRequired", "Required value"),
    "Duplicate": ("FieldValueDuplicate", "Duplicate value"),
    "NotFound": ("FieldValueNotFound", "Not found"),
    "Forbidden": ("FieldValueForbidden", "Forbidden"),
}


class ReviewError(ValueError):
    """The body is not an AdmissionReview this webhook can answer."""


@dataclass(frozen=True, slots=True)
class AdmissionRequest:
    """``AdmissionReview.request``: what is being written, by whom, and the objects before and after."""

    uid: str
    operation: str
    kind: Mapping[str, str]
    resource: Mapping[str, str]
    name: str
    namespace: str
    user_info: Mapping[str, Any]
    object: Obj | None
    old_object: Obj | None
    sub_resource: str = ""
    dry_run: bool = False
    options: Mapping[str, Any] = field(default_factory=dict)

    @property
    def username(self) -> str:
        """``userInfo.username`` (``system:serviceaccount:NS:NAME`` for a service account)."""
        return str(self.user_info.get("username") or "")

    @classmethod
    def from_review(cls, body: Any) -> AdmissionRequest:
        """The request of an AdmissionReview document; raises :class:`ReviewError`."""
        if not isinstance(body, dict) or body.get("kind") != "AdmissionReview":
            raise ReviewError("expected an AdmissionReview")
        if body.get("apiVersion") != API_VERSION:
            raise ReviewError(f"unsupported AdmissionReview version {body.get('apiVersion')!r}, expected {API_VERSION}")
        request = body.get("request")
        if not isinstance(request, dict) or not request.get("uid") or not request.get("operation"):
            raise ReviewError("the AdmissionReview has no request with a uid and an operation")
        obj, old = request.get("object"), request.get("oldObject")
        return cls(
            uid=str(request["uid"]),
            operation=str(request["operation"]),
            kind=dict(request.get("kind") or {}),
            resource=dict(request.get("resource") or {}),
            name=str(request.get("name") or ""),
            namespace=str(request.get("namespace") or ""),
            user_info=dict(request.get("userInfo") or {}),
            object=obj if isinstance(obj, dict) else None,
            old_object=old if isinstance(old, dict) else None,
            sub_resource=str(request.get("subResource") or ""),
            dry_run=bool(request.get("dryRun")),
            options=dict(request.get("options") or {}),
        )


@dataclass(frozen=True, slots=True)
class AdmissionResponse:
    """``AdmissionReview.response`` without its uid (the server adds the request's)."""

    allowed: bool
    status: Obj | None = None
    patch: Sequence[Obj] = ()
    warnings: tuple[str, ...] = ()

    def with_warnings(self, warnings: Sequence[str]) -> AdmissionResponse:
        """The same answer with ``warnings`` added."""
        return AdmissionResponse(self.allowed, self.status, self.patch, (*self.warnings, *warnings))


def review_response(uid: str, response: AdmissionResponse) -> Obj:
    """The AdmissionReview document answering request ``uid``."""
    body: Obj = {"uid": uid, "allowed": response.allowed}
    if response.status is not None:
        body["status"] = response.status
    if response.patch:
        body["patchType"] = "JSONPatch"
        body["patch"] = base64.b64encode(json.dumps(list(response.patch)).encode()).decode()
    if response.warnings:
        body["warnings"] = list(response.warnings)
    return {"apiVersion": API_VERSION, "kind": "AdmissionReview", "response": body}


def allowed(message: str = "", *, patch: Sequence[Obj] = (), warnings: Sequence[str] = ()) -> AdmissionResponse:
    """Admit (with an optional JSON patch)."""
    status = {"code": 200, "message": message} if message else None
    return AdmissionResponse(True, status, tuple(patch), tuple(warnings))


def denied(message: str, *, code: int = 403, reason: str = "Forbidden") -> AdmissionResponse:
    """Refuse, as controller-runtime's ``Denied`` does (403 Forbidden unless told otherwise)."""
    return AdmissionResponse(False, {"code": code, "reason": reason, "message": message})


def errored(code: int, message: str) -> AdmissionResponse:
    """Refuse because the webhook could not decide (a bad request, an internal error)."""
    return AdmissionResponse(False, {"code": code, "message": message})


def invalid_status(group: str, kind: str, name: str, causes: Sequence[tuple[str, str, str]]) -> Obj:
    """apimachinery's ``NewInvalid``: 422 ``Invalid`` naming each (field, type, detail), in the message and as
    ``details.causes`` (types: Invalid, Required, Duplicate, NotFound, Forbidden)."""
    rendered = []
    for path, type_, detail in causes:
        reason, label = _CAUSE_TYPES.get(type_, ("FieldValueInvalid", "Invalid value"))
        rendered.append({"reason": reason, "message": f"{label}: {detail}", "field": path})
    parts = [f"{c['field']}: {c['message']}" for c in rendered]
    joined = parts[0] if len(parts) == 1 else f"[{', '.join(parts)}]"
    qualified = f"{kind}.{group}" if group else kind
    return {
        "status": "Failure",
        "code": 422,
        "reason": "Invalid",
        "message": f'{qualified} "{name}" is invalid: {joined}',
        "details": {"name": name, "group": group, "kind": kind, "causes": rendered},
    }

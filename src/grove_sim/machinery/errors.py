"""``metav1.Status`` errors with the reasons, codes and messages of the real kube-apiserver.

Clients branch on ``reason`` and ``code`` (kubernetes-asyncio raises ``ApiException(status)``, kubectl prints
``Error from server (<reason>): <message>``), so every failure the simulator reports is one ``ApiError`` carrying a
complete Status body. The builders below reproduce upstream wording (``k8s.io/apimachinery/pkg/api/errors``).
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

__all__ = [
    "ApiError",
    "already_exists",
    "bad_request",
    "conflict",
    "expired",
    "forbidden",
    "internal_error",
    "invalid",
    "method_not_allowed",
    "not_found",
    "route_not_found",
    "status_body",
    "unauthorized",
    "unsupported_media_type",
]


def status_body(code: int, reason: str, message: str, details: dict[str, Any] | None = None) -> dict[str, Any]:
    """A failure ``Status`` object as the real server serialises it."""
    body: dict[str, Any] = {
        "kind": "Status",
        "apiVersion": "v1",
        "metadata": {},
        "status": "Failure",
        "message": message,
        "reason": reason,
        "code": code,
    }
    if details:
        body["details"] = details
    return body


class ApiError(Exception):
    """A request failure that the HTTP layer turns into a ``Status`` response with ``code``."""

    def __init__(self, code: int, reason: str, message: str, details: dict[str, Any] | None = None) -> None:
        super().__init__(message)
        self.code = code
        self.reason = reason
        self.message = message
        self.details = details

    def status(self) -> dict[str, Any]:
        """The ``metav1.Status`` body for this error."""
        return status_body(self.code, self.reason, self.message, self.details)


def _details(name: str, group: str, plural: str) -> dict[str, Any]:
    details: dict[str, Any] = {"name": name, "kind": plural}
    if group:
        details["group"] = group
    return details


def _qualified(group: str, plural: str) -> str:
    return f"{plural}.{group}" if group else plural


def not_found(group: str, plural: str, name: str) -> ApiError:
    """404 for a missing object: ``pods "x" not found``."""
    return ApiError(404, "NotFound", f'{_qualified(group, plural)} "{name}" not found', _details(name, group, plural))


def already_exists(group: str, plural: str, name: str) -> ApiError:
    """409 for a create whose name is taken."""
    message = f'{_qualified(group, plural)} "{name}" already exists'
    return ApiError(409, "AlreadyExists", message, _details(name, group, plural))


def conflict(group: str, plural: str, name: str, detail: str | None = None) -> ApiError:
    """409 for a failed optimistic-concurrency or precondition check."""
    why = detail or "the object has been modified; please apply your changes to the latest version and try again"
    message = f'Operation cannot be fulfilled on {_qualified(group, plural)} "{name}": {why}'
    return ApiError(409, "Conflict", message, _details(name, group, plural))


def invalid(kind: str, group: str, name: str, causes: Sequence[tuple[str, str, str]]) -> ApiError:
    """422 with ``details.causes``; each cause is (field, reason, detail) like ``field.Error``.

    The message follows ``errors.NewInvalid``: ``<Kind>.<group> "<name>" is invalid: <field>: <detail>`` and a
    bracketed list when there is more than one cause, each distinct text once (``ErrorList.ToAggregate``);
    ``details.causes`` keeps every cause.
    """
    qualified = f"{kind}.{group}" if group else kind
    parts = list(dict.fromkeys(f"{field}: {detail}" if field else detail for field, _reason, detail in causes))
    joined = parts[0] if len(parts) == 1 else "[" + ", ".join(parts) + "]"
    details: dict[str, Any] = {
        "name": name,
        "kind": kind,
        "causes": [{"reason": reason, "message": detail, "field": field} for field, reason, detail in causes],
    }
    if group:
        details["group"] = group
    return ApiError(422, "Invalid", f'{qualified} "{name}" is invalid: {joined}', details)


def bad_request(message: str) -> ApiError:
    """400 BadRequest (bad selector, undecodable body, mismatched namespace)."""
    return ApiError(400, "BadRequest", message)


def forbidden(group: str, plural: str, name: str, why: str) -> ApiError:
    """403 Forbidden, e.g. creating content in a terminating namespace."""
    message = f'{_qualified(group, plural)} "{name}" is forbidden: {why}'
    return ApiError(403, "Forbidden", message, _details(name, group, plural))


def method_not_allowed(verb: str, what: str) -> ApiError:
    """405 for a verb the resource does not support."""
    return ApiError(
        405, "MethodNotAllowed", f"the server does not allow this method on the requested resource ({what})"
    )


def unsupported_media_type(content_type: str, accepted: Sequence[str]) -> ApiError:
    """415 with the upstream wording that names the accepted media types."""
    message = (
        f"the body of the request was in an unknown format - accepted media types include: {', '.join(accepted)}"
        if accepted
        else f"unsupported media type {content_type!r}"
    )
    return ApiError(415, "UnsupportedMediaType", message)


def expired(message: str) -> ApiError:
    """410 Expired (stale continue token, watch from a compacted resourceVersion)."""
    return ApiError(410, "Expired", message)


def route_not_found() -> ApiError:
    """404 for a path that names no served resource."""
    return ApiError(404, "NotFound", "the server could not find the requested resource")


def unauthorized() -> ApiError:
    """401 for credentials that identify nobody (an unknown or revoked bearer token)."""
    return ApiError(401, "Unauthorized", "Unauthorized")


def internal_error(why: str) -> ApiError:
    """500 InternalError, worded as apierrors.NewInternalError (a failed webhook call with failurePolicy Fail)."""
    return ApiError(500, "InternalError", f"Internal error occurred: {why}", {"causes": [{"message": why}]})

"""API errors, mapped once from HTTP status (and ``metav1.Status.reason``) to a small hierarchy.

Callers catch meaning, not numbers: ``except NotFound`` instead of ``if e.status == 404``. The retrying client
retries only :class:`TooManyRequests`, :class:`ServerError` and :class:`ConnectionLost`::

    ApiError                      any failed API call (status, reason, message, body, retry_after)
    ├── ClientError               4xx: the request itself is wrong or not allowed now
    │   ├── BadRequest            400
    │   ├── Unauthorized          401
    │   ├── Forbidden             403
    │   ├── NotFound              404
    │   ├── Conflict              409 (optimistic-concurrency failure, lost race)
    │   │   └── AlreadyExists     409 with reason AlreadyExists
    │   ├── Gone                  410 (watch resourceVersion expired; also named Expired)
    │   ├── UnsupportedMediaType  415 (e.g. strategic merge patch on a custom resource)
    │   ├── Invalid               422 (schema or admission validation)
    │   └── TooManyRequests       429 (honour retry_after)
    ├── ServerError               5xx
    └── ConnectionLost            no HTTP answer at all (status 0)

:class:`Fenced` is not an API error: a fenced request (``fence`` said this process no longer leads) was not sent.
"""

from __future__ import annotations

import json
from collections.abc import Mapping
from typing import Any


class ApiError(Exception):
    """A failed API call; ``retry_after`` is the server's Retry-After in seconds, when given."""

    status: int = 0

    def __init__(
        self,
        message: str,
        *,
        status: int | None = None,
        reason: str = "",
        body: Mapping[str, Any] | None = None,
        retry_after: float | None = None,
    ) -> None:
        super().__init__(message)
        if status is not None:
            self.status = status
        self.message = message
        self.reason = reason
        self.body: Mapping[str, Any] = body or {}
        self.retry_after = retry_after


class ClientError(ApiError):
    """4xx: retrying the same request will not help (except 429)."""


class BadRequest(ClientError):
    """400."""

    status = 400


class Unauthorized(ClientError):
    """401."""

    status = 401


class Forbidden(ClientError):
    """403: RBAC denies the request, or the namespace is terminating."""

    status = 403


class NotFound(ClientError):
    """404."""

    status = 404


class Conflict(ClientError):
    """409: a write lost an optimistic-concurrency race; re-read and retry at the reconcile level."""

    status = 409


class AlreadyExists(Conflict):
    """409 with reason AlreadyExists: a create hit an existing name."""


class Gone(ClientError):
    """410: the requested resourceVersion is too old; re-list."""

    status = 410


Expired = Gone


class UnsupportedMediaType(ClientError):
    """415: the patch content type is not accepted for this resource."""

    status = 415


class Invalid(ClientError):
    """422: the object failed validation."""

    status = 422


class TooManyRequests(ClientError):
    """429: back off (for ``retry_after`` seconds when the server says so)."""

    status = 429


class ServerError(ApiError):
    """5xx: transient server trouble; retried."""

    status = 500


class ConnectionLost(ApiError):
    """The connection failed or dropped before an HTTP status arrived; retried."""

    status = 0


class Fenced(Exception):
    """A fenced request was not sent (not even as a retry): its fence said this process no longer leads."""


_BY_STATUS: dict[int, type[ApiError]] = {
    400: BadRequest,
    401: Unauthorized,
    403: Forbidden,
    404: NotFound,
    409: Conflict,
    410: Gone,
    415: UnsupportedMediaType,
    422: Invalid,
    429: TooManyRequests,
}


def _parse_body(body: bytes | str | Mapping[str, Any] | None) -> Mapping[str, Any]:
    if body is None:
        return {}
    if isinstance(body, Mapping):
        return body
    try:
        parsed = json.loads(body)
    except (ValueError, UnicodeDecodeError):
        return {}
    return parsed if isinstance(parsed, dict) else {}


def _parse_retry_after(value: str | None) -> float | None:
    if value is None:
        return None
    try:
        return max(0.0, float(value))
    except ValueError:
        return None


def error_for_status(
    status: int,
    body: bytes | str | Mapping[str, Any] | None = None,
    *,
    retry_after: str | None = None,
    default_message: str = "",
) -> ApiError:
    """Build the exception for an HTTP status and its (``metav1.Status``) body."""
    parsed = _parse_body(body)
    reason = str(parsed.get("reason") or "")
    message = str(parsed.get("message") or default_message or f"HTTP {status}")
    cls: type[ApiError]
    if status == 409 and reason == "AlreadyExists":
        cls = AlreadyExists
    elif status in _BY_STATUS:
        cls = _BY_STATUS[status]
    elif status >= 500:
        cls = ServerError
    elif status == 0:
        cls = ConnectionLost
    else:
        cls = ClientError
    return cls(message, status=status, reason=reason, body=parsed, retry_after=_parse_retry_after(retry_after))


def from_api_exception(exc: Any) -> ApiError:
    """Translate a kubernetes-asyncio ``ApiException`` (duck-typed: status, body, headers, reason)."""
    status = int(getattr(exc, "status", 0) or 0)
    headers = getattr(exc, "headers", None) or {}
    retry_after = headers.get("Retry-After") if hasattr(headers, "get") else None
    return error_for_status(
        status, getattr(exc, "body", None), retry_after=retry_after, default_message=str(getattr(exc, "reason", ""))
    )


def is_retryable(exc: BaseException) -> bool:
    """Whether the client should retry a request that failed with ``exc``."""
    return isinstance(exc, TooManyRequests | ServerError | ConnectionLost)

"""What went wrong in a reconcile, and what the controller does about it.

Every failure a user should see is a `ComponentError`: its `code` and `message` become the owner's
`status.lastErrors` entry and a Warning Event (`reason`), and its kind decides the retry:

    ComponentError    ERR_SYNC_<COMPONENT>  ReconcileError   a write or read failed: retried with backoff
    SpecError         ERR_INVALID_SPEC      InvalidSpec      the spec cannot be reconciled as it is: no retry,
                                                             the next spec change brings the object back
    ParentNotFound    ERR_MISSING_PARENT    ParentNotFound   the owner's PodCliqueSet is gone: retried slowly

Messages must be stable per cause. The Event recorder aggregates repeats of the same message into one Event with a
count (client-go's correlator keys on it), and `lastErrors` keeps its `observedAt` while the description is
unchanged; an error text carrying a generated pod name would make every retry look like a new failure. `describe`
turns API errors into such stable text.
"""

from __future__ import annotations

from collections.abc import Mapping
from datetime import datetime
from typing import Any

from grove_operator.config import OperatorConfig
from grove_runtime import errors
from grove_runtime.keys import Result

__all__ = [
    "ERR_INVALID_SPEC",
    "ERR_MISSING_PARENT",
    "ComponentError",
    "ParentNotFound",
    "SpecError",
    "describe",
    "error_code",
    "last_errors",
]

Obj = dict[str, Any]
ERR_INVALID_SPEC = "ERR_INVALID_SPEC"
ERR_MISSING_PARENT = "ERR_MISSING_PARENT"
PARENT_RETRY_FACTOR = 6
"""A missing parent is looked for again after this many `retry_interval`s."""


def error_code(component: str) -> str:
    """`ERR_SYNC_<COMPONENT>` derived from the component name (no per-component constants)."""
    return "ERR_SYNC_" + component.upper().replace("-", "_")


class ComponentError(Exception):
    """A component failed to sync; carries the Grove-style error code and the failed operation."""

    reason = "ReconcileError"
    """The reason of the Warning Event that reports it."""

    def __init__(self, code: str, operation: str, message: str) -> None:
        super().__init__(message)
        self.code = code
        self.operation = operation
        self.message = message

    def outcome(self, config: OperatorConfig) -> Result | None:
        """What the reconcile returns after reporting this failure; None re-raises it (retry with backoff)."""
        return None


class SpecError(ComponentError):
    """The spec cannot be reconciled as it stands (invalid, or larger than the operator allows)."""

    reason = "InvalidSpec"

    def __init__(self, message: str, operation: str = "validate") -> None:
        super().__init__(ERR_INVALID_SPEC, operation, message)

    def outcome(self, config: OperatorConfig) -> Result | None:
        """No retry: only a change of the object (which its watch delivers) can fix it."""
        return Result()


class ParentNotFound(ComponentError):
    """The PodCliqueSet the object belongs to does not exist (yet, or any more)."""

    reason = "ParentNotFound"

    def __init__(self, message: str) -> None:
        super().__init__(ERR_MISSING_PARENT, "get", message)

    def outcome(self, config: OperatorConfig) -> Result | None:
        """Look again slowly, never in a tight loop."""
        return Result(requeue_after=config.retry_interval * PARENT_RETRY_FACTOR)


def describe(exc: BaseException, generate_name: str | None = None) -> str:
    """A message for `exc` that is the same for every occurrence of the same cause.

    API errors name the object they are about; an object created with `generate_name` gets a new random name on
    every attempt, so that name is replaced by `<generate_name>*`.
    """
    if not isinstance(exc, errors.ApiError):
        return repr(exc)
    message = str(exc)
    body = exc.body if isinstance(exc.body, Mapping) else {}
    details = body.get("details")
    name = details.get("name") if isinstance(details, Mapping) else None
    if generate_name and isinstance(name, str) and name.startswith(generate_name):
        message = message.replace(name, f"{generate_name}*")
    return f"{type(exc).__name__}({message!r})"


def last_errors(failure: ComponentError | None, now: datetime, previous: Any = None) -> list[Obj] | None:
    """`status.lastErrors` for the failure of this reconcile (None when it succeeded).

    A repeat of the previous error keeps its `observedAt`, so a persisting failure does not rewrite the status.
    """
    if failure is None:
        return None
    entry = {"code": failure.code, "description": f"{failure.operation}: {failure.message}", "observedAt": _ts(now)}
    for old in previous or ():
        if (
            isinstance(old, Mapping)
            and old.get("code") == entry["code"]
            and old.get("description") == entry["description"]
        ):
            entry["observedAt"] = str(old.get("observedAt") or entry["observedAt"])
    return [entry]


def _ts(now: datetime) -> str:
    return now.strftime("%Y-%m-%dT%H:%M:%SZ")

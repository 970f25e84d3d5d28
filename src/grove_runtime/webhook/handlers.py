"""Typed defaulting and validating webhooks, as controller-runtime's ``CustomDefaulter``/``CustomValidator``.

A program implements :class:`Defaulter` or :class:`Validator` over its own object type ``T`` and gives a ``codec``
(``decode`` raw JSON to ``T``, ``encode`` it back); :class:`DefaultingHandler` and :class:`ValidatingHandler` turn
those into :class:`Handler`s the server routes reviews to:

* defaulting decodes ``request.object``, lets ``default`` change it, and answers with the JSON patch between the raw
  request and the encoded result (nothing on DELETE);
* validating calls ``validate_create``/``validate_update``/``validate_delete`` by operation; returning admits with
  the returned warnings, raising :class:`Denied` refuses with its ``Status`` (and warnings).

Any other exception in a handler is caught and answered as a 500 refusal (controller-runtime's ``RecoverPanic``),
so a bug never takes the server down and ``failurePolicy`` decides what the API server does.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Any, Generic, Protocol, TypeVar

import structlog

from grove_runtime.jsoncopy import json_copy
from grove_runtime.webhook.jsonpatch import create_patch
from grove_runtime.webhook.review import AdmissionRequest, AdmissionResponse, allowed, errored

__all__ = [
    "Codec",
    "Defaulter",
    "DefaultingHandler",
    "Denied",
    "Handler",
    "ValidatingHandler",
    "Validator",
    "Warnings",
    "dict_codec",
    "safe_handle",
]

T = TypeVar("T")
T_contra = TypeVar("T_contra", contravariant=True)
Obj = dict[str, Any]
Warnings = Sequence[str]

log = structlog.get_logger("grove_runtime.webhook")


class Handler(Protocol):
    """Answers one admission request (controller-runtime's ``admission.Handler``)."""

    async def handle(self, request: AdmissionRequest) -> AdmissionResponse:
        """The answer to ``request``."""
        ...


class Denied(Exception):
    """Raised by a validator to refuse: ``status`` is the ``metav1.Status`` the client gets."""

    def __init__(self, status: Obj, warnings: Warnings = ()) -> None:
        super().__init__(str(status.get("message") or "denied"))
        self.status = status
        self.warnings = tuple(warnings)


class Defaulter(Protocol[T_contra]):
    """Fills defaults into an object in place; returns warnings (may be empty)."""

    async def default(self, request: AdmissionRequest, obj: T_contra) -> Warnings:
        """Default ``obj`` (being created or updated)."""
        ...


class Validator(Protocol[T_contra]):
    """Checks writes; each method returns warnings or raises :class:`Denied`."""

    async def validate_create(self, request: AdmissionRequest, obj: T_contra) -> Warnings:
        """Check a new object."""
        ...

    async def validate_update(self, request: AdmissionRequest, old: T_contra, new: T_contra) -> Warnings:
        """Check a change."""
        ...

    async def validate_delete(self, request: AdmissionRequest, obj: T_contra) -> Warnings:
        """Check a deletion."""
        ...


@dataclass(frozen=True, slots=True)
class Codec(Generic[T]):
    """Raw JSON to ``T`` and back; ``decode`` raises ``ValueError`` for an object that is not a ``T``."""

    decode: Callable[[Obj], T]
    encode: Callable[[T], Obj]


def dict_codec() -> Codec[Obj]:
    """Work on (a private copy of) the raw JSON, for rules that must see objects a schema would not parse."""
    return Codec(json_copy, lambda obj: obj)


async def safe_handle(name: str, handler: Handler, request: AdmissionRequest) -> AdmissionResponse:
    """``handler.handle`` with every unexpected exception turned into a 500 refusal (and logged)."""
    try:
        return await handler.handle(request)
    except Denied as exc:
        return AdmissionResponse(False, exc.status, (), exc.warnings)
    except Exception as exc:
        log.exception("webhook handler failed", webhook=name, uid=request.uid, name=request.name)
        return errored(500, f"internal error in webhook {name}: {exc}")


class DefaultingHandler(Generic[T]):
    """A :class:`Defaulter` served as a mutating webhook."""

    def __init__(self, defaulter: Defaulter[T], codec: Codec[T]) -> None:
        self._defaulter = defaulter
        self._codec = codec

    async def handle(self, request: AdmissionRequest) -> AdmissionResponse:
        """The patch that defaults ``request.object``."""
        if request.operation == "DELETE" or request.object is None:
            return allowed()
        try:
            obj = self._codec.decode(request.object)
        except ValueError as exc:
            return errored(400, f"cannot decode the object: {exc}")
        warnings = await self._defaulter.default(request, obj)
        return allowed(patch=create_patch(request.object, self._codec.encode(obj)), warnings=warnings)


class ValidatingHandler(Generic[T]):
    """A :class:`Validator` served as a validating webhook."""

    def __init__(self, validator: Validator[T], codec: Codec[T]) -> None:
        self._validator = validator
        self._codec = codec

    async def handle(self, request: AdmissionRequest) -> AdmissionResponse:
        """Admit with warnings, or refuse with the validator's ``Status``."""
        try:
            if request.operation == "CREATE" and request.object is not None:
                warnings = await self._validator.validate_create(request, self._codec.decode(request.object))
            elif request.operation == "UPDATE" and request.object is not None and request.old_object is not None:
                old, new = self._codec.decode(request.old_object), self._codec.decode(request.object)
                warnings = await self._validator.validate_update(request, old, new)
            elif request.operation == "DELETE" and request.old_object is not None:
                warnings = await self._validator.validate_delete(request, self._codec.decode(request.old_object))
            else:
                return errored(400, f"operation {request.operation} without the object it needs")
        except ValueError as exc:
            return errored(400, f"cannot decode the object: {exc}")
        return allowed(warnings=warnings)

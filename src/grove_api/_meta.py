"""Kubernetes metadata shapes shared by every Grove kind.

Grove objects embed a handful of apimachinery types (ObjectMeta, OwnerReference, metav1.Condition, metav1.Time).
They live here, in one light form, so that every kind module and the CRD generator agree on their wire shape.
`GroveModel` is the base of every API model: it fixes the camelCase aliases and the "ignore unknown spec fields"
policy once (newer upstream fields must not break older readers).
"""

from __future__ import annotations

from datetime import UTC, datetime
from typing import Annotated, Literal

from pydantic import BaseModel, ConfigDict, Field, PlainSerializer
from pydantic.alias_generators import to_camel

__all__ = [
    "Condition",
    "ConditionStatus",
    "GroveModel",
    "Int32",
    "Int64",
    "IntFormat",
    "ObjectMeta",
    "OwnerReference",
    "Time",
    "format_time",
]


class IntFormat:
    """Marks an `int` annotation with its OpenAPI `format` (int32/int64) for the CRD generator."""

    __slots__ = ("name",)

    def __init__(self, name: str) -> None:
        self.name = name

    def __repr__(self) -> str:
        return f"IntFormat({self.name!r})"


Int32 = Annotated[int, IntFormat("int32")]
Int64 = Annotated[int, IntFormat("int64")]


def format_time(value: datetime) -> str:
    """Render a timestamp the way metav1.Time does: RFC 3339, UTC, second precision, `Z` suffix."""
    if value.tzinfo is None:
        value = value.replace(tzinfo=UTC)
    return value.astimezone(UTC).strftime("%Y-%m-%dT%H:%M:%SZ")


Time = Annotated[datetime, PlainSerializer(format_time, return_type=str)]
"""metav1.Time: parsed into an aware datetime, always serialised as an RFC 3339 string."""


class GroveModel(BaseModel):
    """Base for every API model: camelCase JSON names, Python names accepted too, unknown fields ignored."""

    model_config = ConfigDict(alias_generator=to_camel, populate_by_name=True, extra="ignore")


class OwnerReference(GroveModel):
    """metav1.OwnerReference: ties a child to the object whose deletion garbage-collects it."""

    api_version: str
    kind: str
    name: str
    uid: str
    controller: bool | None = None
    block_owner_deletion: bool | None = None


class ObjectMeta(GroveModel):
    """A light metav1.ObjectMeta; fields we do not model (managedFields, …) are kept verbatim."""

    model_config = ConfigDict(alias_generator=to_camel, populate_by_name=True, extra="allow")

    name: str | None = None
    generate_name: str | None = None
    namespace: str | None = None
    uid: str | None = None
    resource_version: str | None = None
    generation: Int64 | None = None
    creation_timestamp: Time | None = None
    deletion_timestamp: Time | None = None
    labels: dict[str, str] | None = None
    annotations: dict[str, str] | None = None
    owner_references: list[OwnerReference] | None = None
    finalizers: list[str] | None = None


_CONDITION_TYPE_PATTERN = (
    r"^([a-z0-9]([-a-z0-9]*[a-z0-9])?(\.[a-z0-9]([-a-z0-9]*[a-z0-9])?)*/)?(([A-Za-z0-9][-A-Za-z0-9_.]*)?[A-Za-z0-9])$"
)

ConditionStatus = Literal["True", "False", "Unknown"]


class Condition(GroveModel):
    """metav1.Condition: one observed aspect of an object's state with the time it last changed."""

    type: Annotated[str, Field(max_length=316, pattern=_CONDITION_TYPE_PATTERN)]
    status: ConditionStatus
    last_transition_time: Time
    reason: Annotated[str, Field(min_length=1, max_length=1024, pattern=r"^[A-Za-z]([A-Za-z0-9_,:]*[A-Za-z0-9_])?$")]
    message: Annotated[str, Field(max_length=32768)] = ""
    observed_generation: Annotated[Int64, Field(ge=0)] | None = None

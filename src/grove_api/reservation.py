"""Reservation (`reservations`, scheduling.koordinator.sh/v1alpha1, cluster scoped): capacity held ahead of time.

Koordinator's shape, so a user's Reservation manifests apply unchanged where Koordinator is not installed:
`spec.template` is the pod template whose resources are reserved, `spec.owners` says whose pods may use them
(an object reference, a controller reference, or a label selector), `spec.ttl` / `spec.expires` end it, and
`spec.allocateOnce` (Koordinator's default: true) ends it once an owner has used it. The status (`phase`
Pending / Available / Succeeded / Failed, `nodeName`, `allocatable`, `allocated`) is written by grove-scheduler.
Grove's extension: the annotation `grove.io/reservation-replicas` reserves that many copies of the template as
one gang (all placed or none), `grove.io/reservation-pack` a node label key they share (one rack), and
`status.nodeNames` lists the node of each copy.
"""

from __future__ import annotations

from typing import Any, ClassVar, Literal

from pydantic import Field

from grove_api._meta import Condition, GroveModel, ObjectMeta

__all__ = [
    "ANNOTATION_RESERVATION_PACK",
    "ANNOTATION_RESERVATION_REPLICAS",
    "Reservation",
    "ReservationOwner",
    "ReservationSpec",
    "ReservationStatus",
]

ANNOTATION_RESERVATION_REPLICAS = "grove.io/reservation-replicas"
ANNOTATION_RESERVATION_PACK = "grove.io/reservation-pack"


class ReservationOwner(GroveModel):
    """Who may use a reservation: a pod whose object, controller or labels match (one of the three per entry)."""

    object: dict[str, Any] | None = None
    controller: dict[str, Any] | None = None
    label_selector: dict[str, Any] | None = None


class ReservationSpec(GroveModel):
    """What to reserve and for whom."""

    template: dict[str, Any]
    owners: list[ReservationOwner] = Field(min_length=1)
    ttl: str | None = None
    expires: str | None = None
    allocate_once: bool | None = None
    unschedulable: bool | None = None


class ReservationStatus(GroveModel):
    """Where the reservation holds capacity and how much of it its owners use."""

    phase: Literal["Pending", "Available", "Succeeded", "Failed"] | None = None
    conditions: list[Condition] | None = None
    node_name: str | None = None
    node_names: list[str] | None = None
    allocatable: dict[str, Any] | None = None
    allocated: dict[str, Any] | None = None
    current_owners: list[dict[str, Any]] | None = None


class Reservation(GroveModel):
    """A Reservation object as stored by the API server."""

    API_VERSION: ClassVar[str] = "scheduling.koordinator.sh/v1alpha1"
    KIND: ClassVar[str] = "Reservation"

    api_version: Literal["scheduling.koordinator.sh/v1alpha1"] = "scheduling.koordinator.sh/v1alpha1"
    kind: Literal["Reservation"] = "Reservation"
    metadata: ObjectMeta = Field(default_factory=ObjectMeta)
    spec: ReservationSpec
    status: ReservationStatus | None = None

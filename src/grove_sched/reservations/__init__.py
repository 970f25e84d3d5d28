"""Koordinator Reservations (`scheduling.koordinator.sh/v1alpha1`): capacity the scheduler places ahead of time
and holds for its owners only (`model`: the pure rules; `controller`: placing, holding, ending them)."""

from __future__ import annotations

from grove_sched.reservations.controller import (
    RESERVATIONS,
    ReservationEvents,
    Reservations,
    is_reservation_key,
    reservation_key,
)

__all__ = ["RESERVATIONS", "ReservationEvents", "Reservations", "is_reservation_key", "reservation_key"]

"""The post-filter step: what the scheduling cycle does after placement says a gang does not fit now.

Why a step of its own (kube-scheduler's PostFilter extension point): preemption lives here. It runs only for an
Unschedulable status, never for UnschedulableAndUnresolvable (the gang is wrong, or asks more than any node has:
evicting pods cannot help), never for a gang whose minimum is already bound (its extra pods wait for capacity like
anyone else), and with the same snapshot the placement saw. It returns the status the cycle then reports and
queues by: a preemption that evicted victims would still say Unschedulable (the gang waits for the victims' pod
deletions, which wake it) with the victims among the reasons.

A post-filter may also hold capacity for a gang it preempted for (`reserved`: pods the scheduler layers onto the
snapshot of every other gang it must not yield to; `nominated`: where the gang's pods are expected to go, shown as
their `nominatedNodeName`), released by `forget` when that gang binds or disappears.

`NoPostFilter` does nothing: nothing is preempted, the status passes through unchanged, nothing is reserved.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Protocol

from grove_sched.gangs import GangKey, ReadyGang
from grove_sched.model import BoundPod, Status
from grove_sched.placement import Snapshot

__all__ = ["NoPostFilter", "PostFilter"]


class PostFilter(Protocol):
    """Tries to make an unschedulable gang fit later (by preemption); returns the status to report and queue by."""

    async def post_filter(self, gang: ReadyGang, snapshot: Snapshot, status: Status) -> Status:
        """Called with the gang, the snapshot it did not fit and the placement's Unschedulable status."""
        ...

    def reserved(self, gang: GangKey, priority: int) -> Sequence[BoundPod]:
        """Pods held for other gangs that `gang` (of this priority) must treat as placed."""
        ...

    def nominated(self, gang: GangKey) -> Mapping[str, str]:
        """Pod name → node the gang's pods are nominated to (empty when none)."""
        ...

    def forget(self, gang: GangKey) -> None:
        """The gang bound or is gone: release what is held for it."""
        ...


class NoPostFilter:
    """The default post-filter: does nothing."""

    async def post_filter(self, gang: ReadyGang, snapshot: Snapshot, status: Status) -> Status:
        """The status, unchanged."""
        return status

    def reserved(self, gang: GangKey, priority: int) -> Sequence[BoundPod]:
        """Nothing is held."""
        return ()

    def nominated(self, gang: GangKey) -> Mapping[str, str]:
        """Nothing is nominated."""
        return {}

    def forget(self, gang: GangKey) -> None:
        """Nothing to release."""

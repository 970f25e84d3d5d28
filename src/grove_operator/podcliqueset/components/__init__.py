"""The PodCliqueSet's components and the one place that fixes their sync order.

`sync_groups()` builds a tuple of groups (fresh component instances, each owning its in-sync memo, for one
reconciler); `OrderedComponents` syncs the groups in order and the components of one group concurrently
(asyncio.TaskGroup). A component returning a `Result` (a wait) stops the later groups; a wait in the last group
only asks for a requeue.
"""

from __future__ import annotations

import asyncio
from collections.abc import Sequence

from grove_api import PodCliqueSet
from grove_operator.podcliqueset.components._common import PcsContext
from grove_operator.podcliqueset.components.hpa import Hpas
from grove_operator.podcliqueset.components.podclique import StandalonePodCliques
from grove_operator.podcliqueset.components.podgang import PodGangs
from grove_operator.podcliqueset.components.rbac import ROLE, ROLE_BINDING, SERVICE_ACCOUNT, TOKEN_SECRET
from grove_operator.podcliqueset.components.replica import PodCliqueSetReplicas
from grove_operator.podcliqueset.components.scalinggroup import ScalingGroups
from grove_operator.podcliqueset.components.service import HeadlessServices
from grove_operator.reconcile.context import Component
from grove_operator.reconcile.failures import ComponentError, describe, error_code
from grove_runtime.keys import Result

__all__ = ["OrderedComponents", "PcsComponent", "SyncGroups", "run_group", "sync_groups"]

PcsComponent = Component[PodCliqueSet]
SyncGroups = tuple[tuple[PcsComponent, ...], ...]


def sync_groups() -> SyncGroups:
    """The PodCliqueSet's components in sync order (deletion would walk it backwards)."""
    return (
        # G1 — per-PCS infrastructure that pods rely on before they exist: grove-initc's identity (SA, Role,
        # RoleBinding, token Secret: the Secret waits for the token controller and so holds back every PodClique),
        # the headless services that give pods DNS names, and the HPAs that own scaling of what follows; and the
        # replica lifecycle (gang termination, rolling update), which may delete a replica's PodCliques.
        (SERVICE_ACCOUNT, ROLE, ROLE_BINDING, TOKEN_SECRET, HeadlessServices(), Hpas(), PodCliqueSetReplicas()),
        # G2 — standalone PodCliques: their controller creates the (gated) pods.
        (StandalonePodCliques(),),
        # G3 — scaling groups (whose controller creates member PodCliques) and the PodGangs that reference the pods
        # of both; gangs come last so their PodGroups can point at PodCliques that already exist.
        (ScalingGroups(), PodGangs()),
    )


async def run_group(group: Sequence[PcsComponent], ctx: PcsContext) -> list[Result | ComponentError | None]:
    """Sync the components of one group concurrently; each outcome is its Result, None, or its error."""
    outcomes: list[Result | ComponentError | None] = [None] * len(group)

    async def run(i: int, component: PcsComponent) -> None:
        try:
            outcomes[i] = await component.sync(ctx)
        except ComponentError as exc:
            outcomes[i] = exc
        except Exception as exc:
            outcomes[i] = ComponentError(error_code(component.name), "sync", describe(exc))

    async with asyncio.TaskGroup() as tg:
        for i, component in enumerate(group):
            tg.create_task(run(i, component))
    return outcomes


class OrderedComponents:
    """Every component of the PodCliqueSet as one step, group by group."""

    name = "podcliqueset"

    def __init__(self) -> None:
        self.groups = sync_groups()

    def existing_names(self, ctx: PcsContext) -> list[str]:
        """Names of every cached child of the PodCliqueSet, in sync order."""
        return [name for group in self.groups for component in group for name in component.existing_names(ctx)]

    async def sync(self, ctx: PcsContext) -> Result | None:
        """Run the groups in order; a wait in an early group stops the rest, one in the last group only requeues."""
        for index, group in enumerate(self.groups):
            outcomes = await run_group(group, ctx)
            failures = [o for o in outcomes if isinstance(o, ComponentError)]
            if failures:
                raise failures[0]
            waits = [o for o in outcomes if isinstance(o, Result)]
            if waits:
                wait = min(waits, key=lambda r: r.requeue_after or 0.0)
                if index < len(self.groups) - 1:
                    return wait
                ctx.requeue_after(wait.requeue_after or 0.0)
        return None

    async def delete(self, ctx: PcsContext) -> None:
        """Delete every child, walking the sync order backwards."""
        for group in reversed(self.groups):
            for component in reversed(group):
                await component.delete(ctx)

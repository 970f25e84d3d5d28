"""The PodCliqueSet's components and the one place that fixes their sync order.

`sync_groups()` builds a tuple of groups (fresh component instances, each owning its in-sync memo, for one
reconciler); the reconciler runs the groups in order and the components of one group concurrently
(asyncio.TaskGroup). A component returning a `Result` (a wait) stops the later groups.
"""

from __future__ import annotations

from grove_api import PodCliqueSet
from grove_operator.podcliqueset.components.hpa import Hpas
from grove_operator.podcliqueset.components.podclique import StandalonePodCliques
from grove_operator.podcliqueset.components.podgang import PodGangs
from grove_operator.podcliqueset.components.rbac import ROLE, ROLE_BINDING, SERVICE_ACCOUNT, TOKEN_SECRET
from grove_operator.podcliqueset.components.scalinggroup import ScalingGroups
from grove_operator.podcliqueset.components.service import HeadlessServices
from grove_operator.reconcile.context import Component

__all__ = ["PcsComponent", "SyncGroups", "sync_groups"]

PcsComponent = Component[PodCliqueSet]
SyncGroups = tuple[tuple[PcsComponent, ...], ...]


def sync_groups() -> SyncGroups:
    """The PodCliqueSet's components in sync order (deletion would walk it backwards)."""
    return (
        # G1 — per-PCS infrastructure that pods rely on before they exist: grove-initc's identity (SA, Role,
        # RoleBinding, token Secret: the Secret waits for the token controller and so holds back every PodClique),
        # the headless services that give pods DNS names, and the HPAs that own scaling of what follows.
        (SERVICE_ACCOUNT, ROLE, ROLE_BINDING, TOKEN_SECRET, HeadlessServices(), Hpas()),
        # G2 — standalone PodCliques: their controller creates the (gated) pods.
        (StandalonePodCliques(),),
        # G3 — scaling groups (whose controller creates member PodCliques) and the PodGangs that reference the pods
        # of both; gangs come last so their PodGroups can point at PodCliques that already exist.
        (ScalingGroups(), PodGangs()),
    )

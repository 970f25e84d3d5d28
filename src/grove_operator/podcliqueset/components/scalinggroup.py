"""PodCliqueScalingGroups of a PodCliqueSet (group 3): one per replica and scaling-group config.

`spec.replicas` is set only at creation (live scaling wins); `minAvailable`, `cliqueNames`, labels and annotations
are refreshed; groups of removed replicas are deleted (their member PodCliques follow through GC).
"""

from __future__ import annotations

from collections.abc import Iterable

from grove_api import PodCliqueScalingGroup, PodCliqueSet
from grove_api import labels as glabels
from grove_api import names as gnames
from grove_operator.desired.layout import scaling_group_configs, scaling_group_identity
from grove_operator.desired.scalinggroup import build_scaling_group
from grove_operator.kinds import PODCLIQUESCALINGGROUPS
from grove_operator.podcliqueset.components._common import Obj, PcsContext, children
from grove_operator.reconcile.childset import ChildSet

__all__ = ["ScalingGroups"]

Slot = tuple[int, str]
"""(PCS replica index, scaling-group config name)."""


class ScalingGroups(ChildSet[PodCliqueSet, Slot]):
    """One PCSG per replica and scaling-group config."""

    name = "podcliquescalinggroup"
    rt = PODCLIQUESCALINGGROUPS
    noun = "PodCliqueScalingGroup"

    def existing(self, ctx: PcsContext) -> Iterable[Obj]:
        """Cached PCSGs of the PCS."""
        return children(ctx, PODCLIQUESCALINGGROUPS, glabels.COMPONENT_PCSG)

    def key_of(self, ctx: PcsContext, child: Obj) -> Slot | None:
        """Replica and config parsed from `<pcs>-<i>-<group>`."""
        identity = scaling_group_identity(ctx.owner, str(child["metadata"]["name"]))
        return None if identity is None else (identity[0], identity[1].name)

    def wanted(self, ctx: PcsContext, key: Slot) -> bool:
        """The replica exists and the template still has the config."""
        groups = scaling_group_configs(ctx.owner.spec.template)
        return 0 <= key[0] < (ctx.owner.spec.replicas or 0) and any(g.name == key[1] for g in groups)

    def candidates(self, ctx: PcsContext) -> Iterable[Slot]:
        """Replica-major, configs in template order."""
        groups = [g.name for g in scaling_group_configs(ctx.owner.spec.template)]
        return ((i, group) for i in range(ctx.owner.spec.replicas or 0) for group in groups)

    def child_name(self, ctx: PcsContext, key: Slot) -> str:
        """`<pcs>-<i>-<group>`."""
        return gnames.pcsg_name(ctx.key.name, *key)

    def build(self, ctx: PcsContext, key: Slot, existing: Obj | None) -> Obj:
        """The PCSG from its config, keeping the live `spec.replicas` of an existing one."""
        live = ctx.parsed.parse(PodCliqueScalingGroup, existing) if existing is not None else None
        return build_scaling_group(ctx.owner, key[0], key[1], live)

"""PodCliqueScalingGroups of a PodCliqueSet (group 3): one per replica and scaling-group config.

`spec.replicas` is set only at creation (live scaling wins); `minAvailable`, `cliqueNames`, labels and annotations
are refreshed; groups of removed replicas are deleted (their member PodCliques follow through GC).
"""

from __future__ import annotations

from grove_api import PodCliqueScalingGroup, PodCliqueSetTemplateSpec
from grove_api import labels as glabels
from grove_api import names as gnames
from grove_operator.desired.layout import scaling_group_configs
from grove_operator.desired.scalinggroup import build_scaling_group
from grove_operator.kinds import PODCLIQUESCALINGGROUPS
from grove_operator.podcliqueset.components._common import Obj, PcsContext, PcsIndexedChildSet
from grove_operator.reconcile.childset import IndexedSlots, Slot

__all__ = ["ScalingGroups"]


class ScalingGroups(PcsIndexedChildSet):
    """One PCSG per replica and scaling-group config."""

    name = "podcliquescalinggroup"
    rt = PODCLIQUESCALINGGROUPS
    noun = "PodCliqueScalingGroup"
    component_label = glabels.COMPONENT_PCSG
    naming = staticmethod(gnames.pcsg_name)

    def entries(self, template: PodCliqueSetTemplateSpec) -> tuple[str, ...]:
        """The scaling-group configs."""
        return tuple(g.name for g in scaling_group_configs(template))

    def build(self, ctx: PcsContext, view: IndexedSlots, key: Slot, existing: Obj | None) -> Obj:
        """The PCSG from its config, keeping the live `spec.replicas` of an existing one."""
        live = ctx.parsed.parse(PodCliqueScalingGroup, existing) if existing is not None else None
        return build_scaling_group(ctx.owner, key[0], key[1], live)

"""HorizontalPodAutoscalers of a PodCliqueSet (group 1): one per autoscaled standalone clique and scaling group
per replica, named after its target; HPAs no longer wanted (scale-in, removed config) are deleted.
"""

from __future__ import annotations

from collections.abc import Iterable

from grove_api import PodClique, PodCliqueScalingGroup, PodCliqueSet
from grove_api import labels as glabels
from grove_api import names as gnames
from grove_operator.desired.hpa import HpaTarget, build_hpa_for, hpa_targets, is_hpa_target, target_name
from grove_operator.desired.layout import identify_podclique, scaling_group_identity
from grove_operator.podcliqueset.components._common import Obj, PcsContext, children
from grove_operator.reconcile.childset import ChildSet
from grove_runtime.resources import HPAS

__all__ = ["Hpas"]


class Hpas(ChildSet[PodCliqueSet, HpaTarget, PodCliqueSet]):
    """One HPA per autoscaled target."""

    name = "hpa"
    rt = HPAS

    def view(self, ctx: PcsContext) -> PodCliqueSet:
        """The PodCliqueSet itself."""
        return ctx.owner

    def existing(self, ctx: PcsContext) -> Iterable[Obj]:
        """Cached HPAs of the PCS."""
        return children(ctx, HPAS, glabels.COMPONENT_HPA)

    def key_of(self, view: PodCliqueSet, child: Obj) -> HpaTarget | None:
        """The target named by the HPA's `scaleTargetRef`."""
        ref = (child.get("spec") or {}).get("scaleTargetRef") or {}
        kind, name = ref.get("kind"), str(ref.get("name") or "")
        if kind == PodClique.KIND:
            instance = identify_podclique(view, name)
            if instance is not None and instance.scaling_group is None:
                return HpaTarget(instance.pcs_replica, PodClique.KIND, instance.clique.name)
        elif kind == PodCliqueScalingGroup.KIND:
            identity = scaling_group_identity(view, name)
            if identity is not None:
                return HpaTarget(identity[0], PodCliqueScalingGroup.KIND, identity[1].name)
        return None

    def wanted(self, view: PodCliqueSet, key: HpaTarget) -> bool:
        """The replica exists and its target is still autoscaled."""
        return is_hpa_target(view, key)

    def candidates(self, view: PodCliqueSet) -> Iterable[HpaTarget]:
        """Replica-major: standalone cliques, then scaling groups."""
        return hpa_targets(view)

    def child_name(self, view: PodCliqueSet, key: HpaTarget) -> str:
        """Named after its target."""
        return gnames.hpa_name(target_name(view, key))

    def build(self, ctx: PcsContext, view: PodCliqueSet, key: HpaTarget, existing: Obj | None) -> Obj:
        """The HPA of `key`."""
        return build_hpa_for(view, key)

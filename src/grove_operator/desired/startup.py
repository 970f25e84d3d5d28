"""Resolving `startsAfter` into fully-qualified parent PodCliques (grove-reference §3.5).

The PCS template speaks in clique template names; PodClique objects and the `grove-initc` init container need the
names of the actual parent PodCliques of the same PodGang. The rules differ by startup type and by whether the
child sits in the base gang or a scaled gang, which is why they live in one place.
"""

from __future__ import annotations

from grove_api import PodCliqueSet
from grove_api import names as gnames
from grove_operator.desired.layout import CliqueInstance

__all__ = ["StartupParent", "parent_template_names", "resolve_starts_after"]

StartupParent = tuple[str, int]
"""A parent PodClique FQN and the number of its pods that must be Ready (its minAvailable)."""


def parent_template_names(pcs: PodCliqueSet, clique_name: str) -> list[str]:
    """The parent clique template names the startup type implies for `clique_name` (before expansion)."""
    template = pcs.spec.template
    startup = template.effective_startup_type()
    if startup == "CliqueStartupTypeInOrder":
        order = [c.name for c in template.cliques]
        position = order.index(clique_name)
        return [] if position == 0 else [order[position - 1]]
    if startup == "CliqueStartupTypeExplicit":
        clique = template.clique(clique_name)
        return list(clique.spec.starts_after or ()) if clique is not None else []
    return []


def resolve_starts_after(pcs: PodCliqueSet, instance: CliqueInstance) -> list[StartupParent]:
    """Fully-qualified parents of `instance`, each with its minAvailable, in template order without duplicates.

    A standalone parent resolves to its PodClique of the same PCS replica; a scaling-group parent to every base-gang
    instance (`j < minAvailable`). A child in a scaled gang keeps only parents of its own scaling group, resolved to
    its own PCSG replica: ordering is only enforced within one PodGang.
    """
    template = pcs.spec.template
    parents: list[StartupParent] = []
    for parent_name in parent_template_names(pcs, instance.clique.name):
        parent = template.clique(parent_name)
        if parent is None or parent_name == instance.clique.name:
            continue
        min_available = parent.spec.effective_min_available()
        group = template.scaling_group_of(parent_name)
        if instance.in_scaled_gang:
            if group is None or instance.scaling_group is None or group.name != instance.scaling_group.name:
                continue
            parents.append(
                (
                    CliqueInstance(instance.pcs_name, instance.pcs_replica, parent, group, instance.pcsg_replica).name,
                    min_available,
                )
            )
        elif group is None:
            parents.append(
                (gnames.standalone_pclq_name(instance.pcs_name, instance.pcs_replica, parent_name), min_available)
            )
        else:
            fqn = gnames.pcsg_name(instance.pcs_name, instance.pcs_replica, group.name)
            for j in range(group.effective_min_available()):
                parents.append((gnames.pcsg_member_pclq_name(fqn, j, parent_name), min_available))
    seen: set[str] = set()
    unique: list[StartupParent] = []
    for name, min_available in parents:
        if name not in seen:
            seen.add(name)
            unique.append((name, min_available))
    return unique

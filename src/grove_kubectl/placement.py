"""`kubectl grove placement pcs/NAME|pgs/NAME|podgang/NAME`: where each gang's pods are and whether that is what
it asked for.

Per gang: its pods by topology domain (block → rack → node, `cluster.Domains`) with each domain's GPUs used and
free across the cluster and the gang's own share; every constraint it carries, from the PodGang's
`topologyConstraint`s and from its pods' pod affinity (the first API's PodCliques put theirs there), each with the
domains its bound pods occupy and whether that is one domain (met); and the scheduler's placement score.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence
from typing import Any

import pydantic

from grove_api import LabelSelector
from grove_kubectl.cluster import Domains, gpu_request, levels_of, node_gpus
from grove_kubectl.kinds import CLUSTERTOPOLOGYBINDINGS, PODCLIQUESETS, PODGANGS
from grove_kubectl.output import ConstraintView, GangPlacement, PlacementOutput
from grove_kubectl.session import Session
from grove_runtime.resources import NODES, PODS, ResourceType

__all__ = ["build_placement", "gangs_of", "members"]

Obj = Mapping[str, Any]
PART_OF = "app.kubernetes.io/part-of"


def _name(obj: Obj) -> str:
    return str(obj["metadata"]["name"])


def _owned_by(obj: Obj, kind: str, name: str) -> bool:
    refs = (obj.get("metadata") or {}).get("ownerReferences") or ()
    return any(r.get("kind") == kind and r.get("name") == name and r.get("controller") for r in refs)


async def gangs_of(session: Session, rt: ResourceType, name: str) -> list[Obj]:
    """The PodGangs of a PodCliqueSet, of a PodGangSet, or the one PodGang named."""
    if rt == PODGANGS:
        return [await session.get(PODGANGS, name)]
    await session.get(rt, name)
    gangs = await session.list(PODGANGS)
    if rt == PODCLIQUESETS:
        chosen = [g for g in gangs if ((g["metadata"].get("labels") or {}).get(PART_OF) == name)]
    else:
        chosen = [g for g in gangs if _owned_by(g, "PodGangSet", name)]
    return sorted(chosen, key=_name)


def members(gang: Obj) -> dict[str, list[str]]:
    """Pod names per PodGroup of a PodGang."""
    return {
        str(g.get("name")): [str(r.get("name")) for r in g.get("podReferences") or ()]
        for g in (gang.get("spec") or {}).get("podgroups") or ()
    }


def _pack(raw: Obj | None) -> list[tuple[str, bool]]:
    pack = (raw or {}).get("packConstraint") or {}
    return [(str(pack[k]), k == "required") for k in ("required", "preferred") if pack.get(k)]


def _selects(term: Obj, labels: Mapping[str, str]) -> bool:
    try:
        return LabelSelector.model_validate(term.get("labelSelector") or {}).matches(labels)
    except pydantic.ValidationError:
        return False


def _affinity_scopes(
    groups: Mapping[str, list[str]], pods: Mapping[str, Obj]
) -> list[tuple[str, list[str], str, bool]]:
    """(scope, pods, key, required) for each pod-affinity term of the gang's pods that selects gang pods."""
    found: dict[tuple[str, str, bool], tuple[str, list[str], str, bool]] = {}
    for group, names in groups.items():
        for name in names:
            pod = pods.get(name)
            affinity = ((pod or {}).get("spec") or {}).get("affinity") or {}
            rules = affinity.get("podAffinity") or {}
            terms = [(t, True) for t in rules.get("requiredDuringSchedulingIgnoredDuringExecution") or ()]
            terms += [
                (t.get("podAffinityTerm") or {}, False)
                for t in rules.get("preferredDuringSchedulingIgnoredDuringExecution") or ()
            ]
            for term, required in terms:
                key = str(term.get("topologyKey") or "")
                selected = [
                    n for g in groups.values() for n in g
                    if n in pods and _selects(term, (pods[n].get("metadata") or {}).get("labels") or {})
                ]  # fmt: skip
                if not key or not selected:
                    continue
                ident = (group, key + repr(term.get("labelSelector")), required)
                scope = found.setdefault(ident, (f"pod affinity of {group}", [], key, required))
                scope[1].extend(n for n in [name, *selected] if n not in scope[1])
    return list(found.values())


def _constraint(
    scope: str,
    names: Iterable[str],
    key: str,
    required: bool,
    source: str,
    pods: Mapping[str, Obj],
    labels: Mapping[str, Mapping[str, str]],
) -> ConstraintView:
    nodes = [str((pods[n].get("spec") or {}).get("nodeName") or "") for n in names if n in pods]
    domains = sorted({labels.get(node, {}).get(key, "-") for node in nodes if node})
    return ConstraintView.model_validate(
        {
            "scope": scope,
            "key": key,
            "required": required,
            "source": source,
            "met": len(domains) == 1,
            "domains": domains,
        }
    )


def _gang(gang: Obj, pods: Mapping[str, Obj], domains: Domains) -> GangPlacement:
    groups = members(gang)
    names = [n for g in groups.values() for n in g]
    mine = [pods[n] for n in names if n in pods]
    gpus: dict[str, int] = {}
    placed: dict[str, list[str]] = {}
    for pod in mine:
        node = str((pod.get("spec") or {}).get("nodeName") or "")
        if node:
            gpus[node] = gpus.get(node, 0) + gpu_request(pod)
            placed.setdefault(node, []).append(_name(pod))
    labels = {n.name: n.labels for n in domains.nodes.values()}
    spec = gang.get("spec") or {}
    wanted: list[tuple[str, list[str], str, bool, str]] = [
        (f"gang {_name(gang)}", names, key, req, "topologyConstraint")
        for key, req in _pack(spec.get("topologyConstraint"))
    ]
    for config in spec.get("topologyConstraintGroupConfigs") or ():
        inside = [n for g in config.get("podGroupNames") or () for n in groups.get(str(g), [])]
        wanted += [
            (f"group config {config.get('name')}", inside, k, r, "topologyConstraint")
            for k, r in _pack(config.get("topologyConstraint"))
        ]
    for group in spec.get("podgroups") or ():
        inside = groups.get(str(group.get("name")), [])
        wanted += [
            (f"group {group.get('name')}", inside, k, r, "topologyConstraint")
            for k, r in _pack(group.get("topologyConstraint"))
        ]
    wanted += [(s, p, k, r, "podAffinity") for s, p, k, r in _affinity_scopes(groups, pods)]
    status = gang.get("status") or {}
    score = status.get("placementScore")
    return GangPlacement(
        name=_name(gang),
        namespace=str(gang["metadata"].get("namespace") or ""),
        phase=str(status.get("phase") or "Pending"),
        placement_score=float(score) if isinstance(score, int | float) else None,
        pods=len(names),
        bound_pods=sum(1 for p in mine if (p.get("spec") or {}).get("nodeName")),
        domains=domains.tree(gpus, gpus, placed),
        constraints=[_constraint(s, p, k, r, src, pods, labels) for s, p, k, r, src in wanted],
    )


async def build_placement(session: Session, rt: ResourceType, name: str, target: str) -> PlacementOutput:
    """The placement of every gang of the target."""
    gangs = await gangs_of(session, rt, name)
    everyone = await session.list(PODS, everywhere=True)
    namespace = session.namespace or "default"
    pods = {_name(p): p for p in everyone if (p.get("metadata") or {}).get("namespace") == namespace}
    nodes = node_gpus(await session.list(NODES), everyone)
    domains = Domains(nodes, levels_of(await session.list(CLUSTERTOPOLOGYBINDINGS), nodes.values()))
    return PlacementOutput(target=target, gangs=[_gang(g, pods, domains) for g in gangs])


def lines(output: PlacementOutput, colour: Any) -> list[str]:
    """The text form: per gang a header, the domain tree with GPUs, then the constraints."""
    out: list[str] = []
    for gang in output.gangs:
        score = f"{gang.placement_score:.2f}" if gang.placement_score is not None else "-"
        out.append(
            colour.bold(f"PodGang {gang.name}")
            + f"  {colour.status(gang.phase)}  {gang.bound_pods}/{gang.pods} pods bound  placementScore {score}"
        )
        out += _domain_lines(gang.domains, colour, "  ")
        for c in gang.constraints:
            verdict = colour.status("met") if c.met else colour.alert("violated" if c.required else "not met")
            kind = "required" if c.required else "preferred"
            where = ", ".join(c.domains) or "-"
            out.append(f"  {kind} one {c.key} for {c.scope} ({c.source}): {verdict} [{where}]")
        out.append("")
    return out or ["No PodGangs found."]


def _domain_lines(domains: Sequence[Any], colour: Any, indent: str) -> list[str]:
    out: list[str] = []
    for d in domains:
        gpus = d.gpus
        extra = f"  pods: {', '.join(d.pods)}" if d.pods else ""
        usage = f"{gpus.used}/{gpus.allocatable} GPUs used, {gpus.free} free"
        out.append(f"{indent}{d.level} {d.name}: gang {d.gang_gpus} GPUs; {usage}{extra}")
        out += _domain_lines(d.children, colour, indent + "  ")
    return out

"""`kubectl grove tree pcs/NAME|pgs/NAME`: the whole hierarchy in one screen.

PodCliqueSet → replica → scaling groups → PodCliques → pods, and the PodGangs of each replica; a PodGangSet →
its PodGang → its pods. Each object shows a status word, ready/total counts and the conditions that need
attention (a breached minimum, a gang the scheduler could not place). Everything is read in one list call per
kind, filtered by the PodCliqueSet's `app.kubernetes.io/part-of` label (or the PodGangSet's label).
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

from grove_kubectl.kinds import PODCLIQUES, PODCLIQUESCALINGGROUPS, PODCLIQUESETS, PODGANGS, PODGANGSETS
from grove_kubectl.output import Attention, TreeNode, TreeOutput
from grove_kubectl.session import Session
from grove_runtime.resources import PODS, ResourceType

__all__ = ["build_tree", "pod_node", "pod_state"]

Obj = Mapping[str, Any]
PART_OF = "app.kubernetes.io/part-of"
PODGANGSET_LABEL = "grove.dynamo.ai/podgangset"
PODGANG_LABEL = "grove.io/podgang"
_HEALTHY = {"MinAvailableBreached": "False", "PodCliqueScheduled": "True", "Scheduled": "True", "Ready": "True"}


def _name(obj: Obj) -> str:
    return str(obj["metadata"]["name"])


def _labels(obj: Obj) -> Mapping[str, str]:
    return (obj.get("metadata") or {}).get("labels") or {}


def _conditions(obj: Obj) -> list[Obj]:
    return list((obj.get("status") or {}).get("conditions") or ())


def attention(obj: Obj) -> list[Attention]:
    """Conditions whose status is not the healthy one (known types only)."""
    return [
        Attention(type=c["type"], status=c["status"], reason=c.get("reason", ""), message=c.get("message", ""))
        for c in _conditions(obj)
        if c.get("type") in _HEALTHY and c.get("status") != _HEALTHY[c["type"]]
    ]


def pod_state(pod: Obj) -> str:
    """One word for a pod: Terminating, Gated, Pending, Running, Ready, or its phase."""
    if (pod.get("metadata") or {}).get("deletionTimestamp"):
        return "Terminating"
    spec = pod.get("spec") or {}
    if spec.get("schedulingGates"):
        return "Gated"
    if not spec.get("nodeName"):
        return "Pending"
    phase = str((pod.get("status") or {}).get("phase") or "Pending")
    ready = any(c.get("type") == "Ready" and c.get("status") == "True" for c in _conditions(pod))
    return "Ready" if phase == "Running" and ready else phase


def pod_node(pod: Obj) -> TreeNode:
    """A pod leaf: its state and node."""
    node = str((pod.get("spec") or {}).get("nodeName") or "")
    state = pod_state(pod)
    return TreeNode(
        kind="Pod", name=_name(pod), status=state, ready=int(state == "Ready"), total=1, detail=node and f"on {node}"
    )


def _gang_node(gang: Obj, pods: Sequence[Obj]) -> TreeNode:
    status = gang.get("status") or {}
    score = status.get("placementScore")
    members = {
        r.get("name") for g in (gang.get("spec") or {}).get("podgroups") or () for r in g.get("podReferences") or ()
    }
    bound = sum(1 for p in pods if _name(p) in members and (p.get("spec") or {}).get("nodeName"))
    detail = f"placementScore {score:.2f}" if isinstance(score, int | float) else ""
    return TreeNode(
        kind="PodGang",
        name=_name(gang),
        status=str(status.get("phase") or "Pending"),
        ready=bound,
        total=len(members),
        detail=detail,
        attention=attention(gang),
    )


def _clique_node(pclq: Obj, pods: Sequence[Obj]) -> TreeNode:
    status = pclq.get("status") or {}
    replicas = int((pclq.get("spec") or {}).get("replicas") or 0)
    ready = int(status.get("readyReplicas") or 0)
    notes = attention(pclq)
    word = (
        "Breached"
        if any(n.type == "MinAvailableBreached" for n in notes)
        else "Ready"
        if ready >= replicas
        else "Pending"
    )
    children = [pod_node(p) for p in sorted(pods, key=_name) if _labels(p).get("grove.io/podclique") == _name(pclq)]
    return TreeNode(
        kind="PodClique", name=_name(pclq), status=word, ready=ready, total=replicas, attention=notes, children=children
    )


def _owned_by(obj: Obj, kind: str, name: str) -> bool:
    refs = (obj.get("metadata") or {}).get("ownerReferences") or ()
    return any(r.get("kind") == kind and r.get("name") == name and r.get("controller") for r in refs)


async def _pcs_tree(session: Session, pcs: Obj) -> TreeNode:
    name = _name(pcs)

    async def part(rt: ResourceType) -> list[Obj]:
        return [o for o in await session.list(rt) if _labels(o).get(PART_OF) == name]

    pclqs, pcsgs, gangs, pods = (
        await part(PODCLIQUES),
        await part(PODCLIQUESCALINGGROUPS),
        await part(PODGANGS),
        await part(PODS),
    )
    replicas = int((pcs.get("spec") or {}).get("replicas") or 0)
    children = []
    for i in range(replicas):
        index = str(i)
        mine = [o for o in pclqs if _labels(o).get("grove.io/podcliqueset-replica-index") == index]
        groups = []
        for pcsg in sorted(
            (g for g in pcsgs if _labels(g).get("grove.io/podcliqueset-replica-index") == index), key=_name
        ):
            members = [
                _clique_node(c, pods)
                for c in sorted(mine, key=_name)
                if _owned_by(c, "PodCliqueScalingGroup", _name(pcsg))
            ]
            st = pcsg.get("status") or {}
            groups.append(
                TreeNode(
                    kind="PodCliqueScalingGroup",
                    name=_name(pcsg),
                    status="Available"
                    if int(st.get("availableReplicas") or 0) >= int((pcsg.get("spec") or {}).get("replicas") or 0)
                    else "Progressing",
                    ready=int(st.get("availableReplicas") or 0),
                    total=int((pcsg.get("spec") or {}).get("replicas") or 0),
                    attention=attention(pcsg),
                    children=members,
                )
            )
        standalone = [_clique_node(c, pods) for c in sorted(mine, key=_name) if _owned_by(c, "PodCliqueSet", name)]
        replica_gangs = [
            _gang_node(g, pods)
            for g in sorted(gangs, key=_name)
            if _name(g) == f"{name}-{i}" or _name(g).startswith(f"{name}-{i}-")
        ]
        replica_pods = [p for p in pods if _labels(p).get("grove.io/podcliqueset-replica-index") == index]
        ready = sum(1 for p in replica_pods if pod_state(p) == "Ready")
        children.append(
            TreeNode(
                kind="Replica",
                name=f"{name}-{i}",
                status="Ready" if replica_pods and ready == len(replica_pods) else "Pending",
                ready=ready,
                total=len(replica_pods),
                children=[*standalone, *groups, *replica_gangs],
            )
        )
    st = pcs.get("status") or {}
    available = int(st.get("availableReplicas") or 0)
    return TreeNode(
        kind="PodCliqueSet",
        name=name,
        status="Available" if available >= replicas else "Progressing",
        ready=available,
        total=replicas,
        attention=attention(pcs),
        children=children,
    )


async def _pgs_tree(session: Session, pgs: Obj) -> TreeNode:
    name = _name(pgs)
    pods = [
        p
        for p in await session.list(PODS)
        if _labels(p).get(PODGANGSET_LABEL) == name and _owned_by(p, "PodGangSet", name)
    ]
    gangs = [g for g in await session.list(PODGANGS) if _owned_by(g, "PodGangSet", name)]
    st = pgs.get("status") or {}
    replicas = int((pgs.get("spec") or {}).get("replicas") or 0)
    pod_nodes = [pod_node(p) for p in sorted(pods, key=lambda p: (len(_name(p)), _name(p)))]
    gang_nodes = [_gang_node(g, pods).model_copy(update={"children": pod_nodes}) for g in gangs] or pod_nodes
    return TreeNode(
        kind="PodGangSet",
        name=name,
        status="Ready"
        if st.get("scheduled") and int(st.get("readyReplicas") or 0) >= replicas
        else "Scheduled"
        if st.get("scheduled")
        else "Pending",
        ready=int(st.get("readyReplicas") or 0),
        total=replicas,
        attention=attention(pgs),
        children=gang_nodes,
    )


async def build_tree(session: Session, rt: ResourceType, name: str) -> TreeOutput:
    """The tree of one PodCliqueSet or PodGangSet."""
    obj = await session.get(rt, name)
    root = await (_pcs_tree(session, obj) if rt == PODCLIQUESETS else _pgs_tree(session, obj))
    assert rt in (PODCLIQUESETS, PODGANGSETS)
    return TreeOutput(namespace=str(obj["metadata"].get("namespace") or ""), root=root)

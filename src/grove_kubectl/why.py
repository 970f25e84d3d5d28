"""`kubectl grove why pod/NAME|podgang/NAME|pcs/NAME|pgs/NAME`: why it is not running, in one screen.

Reasons are gathered where Grove and the scheduler leave them: `status.lastErrors` of the workload (a spec the
operator refused, a pod the API server refused); scheduling gates still on pods; the PodGang's `Scheduled`
condition and `FailedScheduling` Events (kube-scheduler's "0/N nodes are available: 4 Insufficient ..." is split
into counts); `grove-initc` init containers still waiting for the cliques a pod starts after; PodCliques whose
`MinAvailableBreached` is True, with the moment the gang is terminated (`terminationDelay` after the breach).
"""

from __future__ import annotations

import re
from collections.abc import Mapping, Sequence
from datetime import UTC, datetime, timedelta
from typing import Any

from grove_kubectl.kinds import PODCLIQUES, PODCLIQUESETS, PODGANGS
from grove_kubectl.output import Reason, ReasonCount, WhyOutput
from grove_kubectl.placement import gangs_of, members
from grove_kubectl.session import Session
from grove_kubectl.tree import pod_state
from grove_runtime.resources import EVENTS, PODS, ResourceType

__all__ = ["build_why", "lines", "node_counts"]

Obj = Mapping[str, Any]
GATE = "grove.io/podgang-pending-creation"
INITC = "grove-initc"
_AVAILABLE = re.compile(r"(\d+)/(\d+) nodes are available(?::\s*([^;]*))?")
_TERM = re.compile(r"(\d+) (.+)")
_DURATION = re.compile(r"(\d+(?:\.\d+)?)(h|m|s)")


def _name(obj: Obj) -> str:
    return str(obj["metadata"]["name"])


def node_counts(message: str) -> tuple[int | None, int | None, list[ReasonCount]]:
    """(nodes available, nodes total, counted reasons) of a "0/5 nodes are available: 4 Insufficient ..." message."""
    match = _AVAILABLE.search(message)
    if match is None:
        return None, None, []
    counts = []
    for part in (match.group(3) or "").split(", "):
        term = _TERM.match(part.strip().rstrip("."))
        if term:
            counts.append(ReasonCount(reason=term.group(2), count=int(term.group(1))))
    return int(match.group(1)), int(match.group(2)), counts


def _scheduler_reason(obj: str, message: str) -> Reason:
    available, total, counts = node_counts(message)
    return Reason(
        category="scheduler", object=obj, message=message, nodes_available=available, nodes_total=total, counts=counts
    )


def _condition(obj: Obj, type_: str) -> Obj | None:
    return next((c for c in (obj.get("status") or {}).get("conditions") or () if c.get("type") == type_), None)


def _events(events: Sequence[Obj], kind: str, name: str) -> list[Obj]:
    """FailedScheduling Events of one object, newest last."""
    found = [
        e
        for e in events
        if e.get("reason") == "FailedScheduling"
        and (e.get("involvedObject") or {}).get("kind") == kind
        and (e.get("involvedObject") or {}).get("name") == name
    ]
    return sorted(found, key=lambda e: str(e.get("lastTimestamp") or e.get("eventTime") or ""))


def _gates(pods: Sequence[Obj], where: str) -> list[Reason]:
    by_gate: dict[str, int] = {}
    for pod in pods:
        for gate in (pod.get("spec") or {}).get("schedulingGates") or ():
            by_gate[str(gate.get("name"))] = by_gate.get(str(gate.get("name")), 0) + 1
    out = []
    for gate, count in sorted(by_gate.items()):
        why = "released once the PodGang references them (and, in a scaled gang, once its base gang is scheduled)"
        message = f"{count} pod(s) wait at scheduling gate {gate}" + (f": {why}" if gate == GATE else "")
        out.append(Reason(category="gate", object=where, message=message))
    return out


def _startup(pods: Sequence[Obj]) -> list[Reason]:
    out = []
    for pod in pods:
        for status in (pod.get("status") or {}).get("initContainerStatuses") or ():
            if status.get("name") == INITC and "terminated" not in (status.get("state") or {}):
                spec: Obj = next(
                    (c for c in (pod.get("spec") or {}).get("initContainers") or () if c.get("name") == INITC), {}
                )
                parents = ", ".join(a.removeprefix("--podcliques=") for a in spec.get("args") or ())
                message = f"waits for the PodCliques it starts after (name:minAvailable): {parents}"
                out.append(Reason(category="startup", object=f"pod/{_name(pod)}", message=message))
    return out


def _pod_trouble(pods: Sequence[Obj]) -> list[Reason]:
    out = []
    for pod in pods:
        if pod_state(pod) not in ("Pending", "Running") or not (pod.get("spec") or {}).get("nodeName"):
            continue
        waiting = [
            f"{c.get('name')}: {(c.get('state') or {}).get('waiting', {}).get('reason')}"
            for c in (pod.get("status") or {}).get("containerStatuses") or ()
            if (c.get("state") or {}).get("waiting")
        ]
        if waiting:
            out.append(Reason(category="pod", object=f"pod/{_name(pod)}", message="; ".join(waiting)))
    return out


def _delay(text: str) -> timedelta:
    seconds = 0.0
    for amount, unit in _DURATION.findall(text or ""):
        seconds += float(amount) * {"h": 3600, "m": 60, "s": 1}[unit]
    return timedelta(seconds=seconds)


def _breaches(pclqs: Sequence[Obj], pcs: Obj | None, now: datetime) -> list[Reason]:
    out = []
    delay = _delay(str(((pcs or {}).get("spec") or {}).get("template", {}).get("terminationDelay") or "4h"))
    for pclq in pclqs:
        breach = _condition(pclq, "MinAvailableBreached")
        if breach is None or breach.get("status") != "True":
            continue
        where = f"podclique/{_name(pclq)}"
        out.append(Reason(category="breach", object=where, message=f"{breach.get('reason')}: {breach.get('message')}"))
        since = datetime.fromisoformat(str(breach.get("lastTransitionTime")).replace("Z", "+00:00"))
        left = since + delay - now
        when = f"in {int(left.total_seconds() // 60)}m" if left.total_seconds() > 0 else "now (the delay has passed)"
        message = f"the gang is terminated {when} ({(since + delay).strftime('%Y-%m-%dT%H:%M:%SZ')}) unless it recovers"
        out.append(Reason(category="termination", object=where, message=message))
    return out


def _last_errors(obj: Obj, where: str) -> list[Reason]:
    return [
        Reason(category="spec", object=where, message=f"{e.get('code')}: {e.get('description')}")
        for e in (obj.get("status") or {}).get("lastErrors") or ()
    ]


async def build_why(session: Session, rt: ResourceType, name: str, target: str) -> WhyOutput:
    """Everything that keeps the target from running."""
    namespace = session.namespace or "default"
    all_pods = {_name(p): p for p in await session.list(PODS)}
    events = await session.list(EVENTS)
    reasons: list[Reason] = []
    pcs: Obj | None = None
    pclqs: list[Obj] = []
    if rt == PODS:
        pod = await session.get(PODS, name)
        pods: list[Obj] = [pod]
        gang_name = ((pod.get("metadata") or {}).get("labels") or {}).get("grove.io/podgang")
        gangs: list[Obj] = [g for g in await session.list(PODGANGS) if _name(g) == gang_name]
    else:
        gangs = await gangs_of(session, rt, name)
        if rt != PODGANGS:
            reasons += _last_errors(await session.get(rt, name), target)
        names = [n for g in gangs for group in members(g).values() for n in group]
        pods = [all_pods[n] for n in names if n in all_pods]
        if rt == PODCLIQUESETS:
            pcs = await session.get(rt, name)
            pclqs = [
                p
                for p in await session.list(PODCLIQUES)
                if (p["metadata"].get("labels") or {}).get("app.kubernetes.io/part-of") == name
            ]
            pods += [
                p
                for p in all_pods.values()
                if (p["metadata"].get("labels") or {}).get("app.kubernetes.io/part-of") == name and p not in pods
            ]
    reasons += _gates(pods, target)
    for gang in gangs:
        said = _condition(gang, "Scheduled")
        if said is not None and said.get("status") == "False":
            reasons.append(_scheduler_reason(f"podgang/{_name(gang)}", f"{said.get('reason')}: {said.get('message')}"))
        elif said is None and (seen := _events(events, "PodGang", _name(gang))):
            reasons.append(_scheduler_reason(f"podgang/{_name(gang)}", str(seen[-1].get("message"))))
    if rt == PODS and not any(r.category == "scheduler" for r in reasons) and not pods[0]["spec"].get("nodeName"):
        seen = _events(events, "Pod", name)
        if seen:
            reasons.append(_scheduler_reason(f"pod/{name}", str(seen[-1].get("message"))))
    reasons += _startup(pods)
    reasons += _breaches(pclqs, pcs, datetime.now(UTC))
    reasons += _pod_trouble(pods)
    ready = sum(1 for p in pods if pod_state(p) == "Ready")
    running = bool(pods) and ready == len(pods) and not any(r.category in ("breach", "spec") for r in reasons)
    if running:
        summary = f"{target} is running: {ready}/{len(pods)} pods ready"
    elif reasons:
        summary = f"{target} is not running ({ready}/{len(pods)} pods ready): {reasons[0].message}"
    else:
        summary = f"{target} is not running ({ready}/{len(pods)} pods ready) and nothing says why yet"
    return WhyOutput(target=target, namespace=namespace, running=running, summary=summary, reasons=reasons)


def lines(output: WhyOutput, colour: Any) -> list[str]:
    """The text form: the summary, then one line per reason with its counts."""
    head = colour.status("Running") if output.running else colour.alert("Not running")
    out = [f"{head}: {output.summary}"]
    for r in output.reasons:
        out.append(f"  [{r.category}] {r.object}: {r.message}")
        if r.nodes_total is not None:
            out.append(f"      {r.nodes_available}/{r.nodes_total} nodes available")
        out += [f"      {c.count:>5}  {c.reason}" for c in r.counts]
    return out

"""Whether a pod fits a node, as kube-scheduler's filter plugins decide it, and why not in their words.

Pure functions of the pod, the node and what is already requested on it: ``NodeUnschedulable``,
``NodeAffinity`` (``nodeSelector`` and the required node affinity), ``TaintToleration`` (``NoSchedule`` and
``NoExecute``) and ``NodeResourcesFit`` (requests, including the ``pods`` slot, against allocatable minus what the
pods bound there request). ``fit_error`` renders the ``FitError`` message kube-scheduler writes into the
``PodScheduled`` condition and the ``FailedScheduling`` event.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Mapping
from fractions import Fraction
from typing import Any, Final

from grove_sim.machinery.quantity import QuantityError, parse_quantity

__all__ = ["allocatable", "fit_error", "misfits", "short_of_resources"]

AFFINITY: Final = "node(s) didn't match Pod's node affinity/selector"
UNSCHEDULABLE: Final = "node(s) were unschedulable"
_RESOURCE_PREFIXES: Final = ("Insufficient ", "Too many pods")


def allocatable(node: dict[str, Any]) -> dict[str, Fraction]:
    """The node's allocatable as numbers (an unparsable amount counts as none)."""
    out: dict[str, Fraction] = {}
    for name, value in ((node.get("status") or {}).get("allocatable") or {}).items():
        try:
            out[name] = parse_quantity(value)
        except QuantityError:
            out[name] = Fraction(0)
    return out


def _expression_matches(expression: Mapping[str, Any], values: Mapping[str, str]) -> bool:
    key = str(expression.get("key", ""))
    operator = expression.get("operator")
    wanted = [str(v) for v in expression.get("values") or []]
    present = key in values
    if operator == "In":
        return present and values[key] in wanted
    if operator == "NotIn":
        return not present or values[key] not in wanted
    if operator == "Exists":
        return present
    if operator == "DoesNotExist":
        return not present
    if operator in ("Gt", "Lt") and present and len(wanted) == 1:
        try:
            have, bound = int(values[key]), int(wanted[0])
        except ValueError:
            return False
        return have > bound if operator == "Gt" else have < bound
    return False


def _term_matches(term: Mapping[str, Any], labels: Mapping[str, str], name: str) -> bool:
    expressions = list(term.get("matchExpressions") or [])
    fields = list(term.get("matchFields") or [])
    if not expressions and not fields:
        return False
    return all(_expression_matches(e, labels) for e in expressions) and all(
        _expression_matches(f, {"metadata.name": name}) for f in fields
    )


def _affinity_matches(spec: Mapping[str, Any], node: dict[str, Any]) -> bool:
    labels: Mapping[str, str] = node["metadata"].get("labels") or {}
    for key, value in (spec.get("nodeSelector") or {}).items():
        if labels.get(key) != value:
            return False
    required = ((spec.get("affinity") or {}).get("nodeAffinity") or {}).get(
        "requiredDuringSchedulingIgnoredDuringExecution"
    )
    if not required:
        return True
    terms = required.get("nodeSelectorTerms") or []
    return any(_term_matches(term, labels, node["metadata"]["name"]) for term in terms)


def _tolerates(tolerations: list[Mapping[str, Any]], taint: Mapping[str, Any]) -> bool:
    for toleration in tolerations:
        effect = toleration.get("effect")
        if effect and effect != taint.get("effect"):
            continue
        key = toleration.get("key")
        operator = toleration.get("operator") or "Equal"
        if not key:
            if operator == "Exists":
                return True
            continue
        if key != taint.get("key"):
            continue
        if operator == "Exists" or str(toleration.get("value") or "") == str(taint.get("value") or ""):
            return True
    return False


def misfits(
    pod: dict[str, Any], node: dict[str, Any], requests: Mapping[str, Fraction], used: Mapping[str, Fraction]
) -> list[str]:
    """Why ``pod`` (with effective ``requests``) cannot go to ``node`` where ``used`` is requested already (empty:
    it fits). The first failing filter decides, as kube-scheduler stops at a node's first failure; resources
    report every resource that is short."""
    spec = pod.get("spec") or {}
    tolerations = list(spec.get("tolerations") or [])
    if (node.get("spec") or {}).get("unschedulable") and not _tolerates(
        tolerations, {"key": "node.kubernetes.io/unschedulable", "effect": "NoSchedule"}
    ):
        return [UNSCHEDULABLE]
    if not _affinity_matches(spec, node):
        return [AFFINITY]
    for taint in (node.get("spec") or {}).get("taints") or []:
        if taint.get("effect") in ("NoSchedule", "NoExecute") and not _tolerates(tolerations, taint):
            return [f"node(s) had untolerated taint {{{taint.get('key', '')}: {taint.get('value', '')}}}"]
    capacity = allocatable(node)
    short = []
    for name, amount in sorted(requests.items()):
        if used.get(name, Fraction(0)) + amount > capacity.get(name, Fraction(0)):
            short.append("Too many pods" if name == "pods" else f"Insufficient {name}")
    return short


def short_of_resources(reasons: list[str]) -> bool:
    """Whether a node's misfits are all about resources (preemption could free them)."""
    return bool(reasons) and all(reason.startswith(_RESOURCE_PREFIXES) for reason in reasons)


def fit_error(node_count: int, reasons: Counter[str], short_nodes: int) -> str:
    """``FitError.Error()`` plus the preemption post-filter's summary, as kube-scheduler 1.32 words them
    (``short_nodes``: how many nodes failed only for resources, where preemption could help)."""
    if node_count == 0:
        return "no nodes available to schedule pods"
    listed = sorted(f"{count} {reason}" for reason, count in reasons.items())
    message = f"0/{node_count} nodes are available: {', '.join(listed)}."
    helpful = short_nodes
    preemption = Counter(
        {
            "No preemption victims found for incoming pod": helpful,
            "Preemption is not helpful for scheduling": node_count - helpful,
        }
    )
    summary = sorted(f"{count} {reason}" for reason, count in preemption.items() if count)
    return f"{message} preemption: 0/{node_count} nodes are available: {', '.join(summary)}."

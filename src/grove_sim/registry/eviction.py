"""The ``pods/eviction`` subresource: a delete that respects PodDisruptionBudgets, as kube-apiserver's
``EvictionREST``.

A pod that is pending, finished or already being deleted goes at once. Otherwise the one budget selecting it must
allow a disruption: its status must be current (``observedGeneration``), and ``disruptionsAllowed`` is taken down
by one (the pod recorded in ``disruptedPods``) before the delete; a budget at zero answers 429 TooManyRequests with
the apiserver's message and a ``DisruptionBudget`` cause, which ``kubectl drain`` and schedulers' preemption retry
on. An unready pod may go without using the budget when ``unhealthyPodEvictionPolicy`` allows it. More than one
budget is a 500, as upstream.
"""

from __future__ import annotations

from typing import Any, Final

from grove_sim.machinery import errors
from grove_sim.machinery.label_selectors import SelectorError, label_selector_from_dict
from grove_sim.registry.core import Core, clone, now_rfc3339

__all__ = ["evict", "selects"]

_PDBS: Final = ("policy", "poddisruptionbudgets")
_TOO_MANY: Final = "Cannot evict pod as it would violate the pod's disruption budget."
_CREATED: Final = {"kind": "Status", "apiVersion": "v1", "metadata": {}, "status": "Success", "code": 201}


def selects(pdb: dict[str, Any], pod: dict[str, Any]) -> bool:
    """Whether the budget's selector selects the pod (``policy/v1``: an empty selector selects every pod, a
    missing one none)."""
    selector = (pdb.get("spec") or {}).get("selector")
    if selector is None:
        return False
    try:
        return label_selector_from_dict(selector).matches(pod["metadata"].get("labels") or {})
    except SelectorError:
        return False


def _ready(pod: dict[str, Any]) -> bool:
    conditions = (pod.get("status") or {}).get("conditions") or ()
    return any(c.get("type") == "Ready" and c.get("status") == "True" for c in conditions)


def _too_many(message: str, cause: str) -> errors.ApiError:
    return errors.ApiError(
        429, "TooManyRequests", message, {"causes": [{"reason": "DisruptionBudget", "message": cause}]}
    )


def _take_disruption(core: Core, pdb: dict[str, Any], pod: dict[str, Any]) -> None:
    """Check the budget and use one disruption of it, or raise the 429."""
    status = pdb.get("status") or {}
    name = pdb["metadata"]["name"]
    if int(status.get("observedGeneration") or 0) < int(pdb["metadata"].get("generation") or 0):
        raise _too_many(_TOO_MANY, f"The disruption budget {name} is still being processed by the server.")
    current, desired = int(status.get("currentHealthy") or 0), int(status.get("desiredHealthy") or 0)
    if not _ready(pod):
        policy = (pdb.get("spec") or {}).get("unhealthyPodEvictionPolicy") or "IfHealthyBudget"
        if policy == "AlwaysAllow" or current >= desired:
            return
    allowed = int(status.get("disruptionsAllowed") or 0)
    if allowed <= 0:
        raise _too_many(
            _TOO_MANY, f"The disruption budget {name} needs {desired} healthy pods and has {current} currently"
        )
    info = core.registry.get("policy", "v1", "poddisruptionbudgets")
    assert info is not None
    new = clone(pdb)
    new_status = new.setdefault("status", {})
    new_status["disruptionsAllowed"] = allowed - 1
    new_status.setdefault("disruptedPods", {})[pod["metadata"]["name"]] = now_rfc3339()
    core.replace(info, pdb, new, subresource="status")


def evict(core: Core, namespace: str, name: str, body: Any) -> dict[str, Any]:
    """POST ``pods/{name}/eviction``; returns the 201 ``Status``."""
    if not isinstance(body, dict):
        raise errors.bad_request("the body of the request must be an Eviction object")
    if body.get("kind") not in (None, "", "Eviction"):
        raise errors.bad_request(
            f"the kind in the data ({body.get('kind')}) does not match the expected kind (Eviction)"
        )
    evicted = str((body.get("metadata") or {}).get("name") or name)
    if evicted != name:
        raise errors.bad_request("name in URL does not match name in Eviction object")
    info = core.registry.get("", "v1", "pods")
    assert info is not None
    pod = core.get(info, namespace, name)
    options = body.get("deleteOptions") if isinstance(body.get("deleteOptions"), dict) else {}
    phase = (pod.get("status") or {}).get("phase")
    if not pod["metadata"].get("deletionTimestamp") and phase not in ("Pending", "Succeeded", "Failed"):
        budgets = [pdb for pdb in core.store.list(_PDBS, namespace) if selects(pdb, pod)]
        if len(budgets) > 1:
            raise errors.internal_error(
                "This pod has more than one PodDisruptionBudget, which the eviction subresource does not support."
            )
        if budgets:
            _take_disruption(core, budgets[0], pod)
    core.delete(info, namespace, name, options)
    return dict(_CREATED)

"""The HorizontalPodAutoscaler controller (``autoscaling/v2``): Resource and Pods metrics from simulated usage,
any target through its ``/scale`` subresource (a Deployment, a ReplicaSet or a custom resource declaring it).

Every ``sync_period`` seconds (and when an HPA's spec changes) each HPA reads its target's Scale (replicas and
selector), the usage of the selected pods (``grove_sim.controllers.workloads.usage``) and computes, per metric, the
replicas that bring the average to the target (``ceil(current * usage / target)``, within upstream's 10%
tolerance; pods that report no metrics yet count as at target when scaling down and as idle when scaling up); the
largest proposal wins, ``behavior`` stabilises and rate-limits it (``scaling_rules``), and a change is written to
the target's ``/scale`` with a ``SuccessfulRescale`` event. Status carries ``currentMetrics``,
``desiredReplicas`` and the AbleToScale/ScalingActive/ScalingLimited conditions. ``clock`` is replaceable so
tests drive stabilisation windows without waiting. A Pods metric named ``X`` reads the pods' ``sim.grove.io/X-usage``
annotation.
"""

from __future__ import annotations

import logging
import math
import time
from collections.abc import Callable
from fractions import Fraction
from typing import Any, Final

from grove_sim.controllers.events import EventRecorder
from grove_sim.controllers.podstatus import pod_requests
from grove_sim.controllers.workloads.metrics import usage_quantities
from grove_sim.controllers.workloads.owned import PODS, write_status
from grove_sim.controllers.workloads.scaling_rules import ScaleEvent, apply_behavior
from grove_sim.controllers.workloads.usage import measured, pod_usage
from grove_sim.controllers.workqueue import WorkQueue
from grove_sim.machinery import errors
from grove_sim.machinery.label_selectors import SelectorError, parse_label_selector
from grove_sim.machinery.quantity import QuantityError, parse_quantity
from grove_sim.registry.core import Core, now_rfc3339
from grove_sim.registry.resources import ResourceInfo
from grove_sim.registry.subresources import get_scale, update_scale
from grove_sim.storage.store import Event

__all__ = ["Autoscaler"]

HPAS: Final = ("autoscaling", "horizontalpodautoscalers")
_TOLERANCE: Final = 0.1
_HISTORY: Final = 3600.0
"""The longest stabilisation window the API accepts (one hour): older recommendations cannot matter."""
_log = logging.getLogger(__name__)
Key = tuple[str, str]


class _Failed(Exception):
    """A step that leaves a condition False: (condition type, reason, message)."""

    def __init__(self, condition: str, reason: str, message: str) -> None:
        super().__init__(message)
        self.condition, self.reason, self.message = condition, reason, message


def _first_container(pod: dict[str, Any]) -> str:
    return str(((pod.get("spec") or {}).get("containers") or [{}])[0].get("name", ""))


def _milli(value: Fraction) -> str:
    return f"{math.ceil(value * 1000)}m"


class Autoscaler:
    """Reconciles every HPA on its own queue, periodically."""

    def __init__(self, core: Core, sync_period: float = 15.0, clock: Callable[[], float] = time.monotonic) -> None:
        self._core = core
        self.sync_period = sync_period
        self.clock = clock
        self._events = EventRecorder(core, "horizontal-pod-autoscaler")
        self._recommendations: dict[str, list[tuple[float, int]]] = {}
        self._rescales: dict[str, list[ScaleEvent]] = {}
        self.queue: WorkQueue[Key] = WorkQueue("hpa", self._sync)
        core.store.add_listener(self._on_event)

    def _on_event(self, event: Event) -> None:
        if event.key != HPAS:
            return
        meta = event.obj["metadata"]
        if event.type == "DELETED":
            self._recommendations.pop(meta.get("uid", ""), None)
            self._rescales.pop(meta.get("uid", ""), None)
            return
        old_generation = ((event.old or {}).get("metadata") or {}).get("generation")
        if event.type == "ADDED" or old_generation != meta.get("generation"):
            self.queue.add((meta.get("namespace", ""), meta["name"]))

    def _sync(self, key: Key) -> None:
        hpa = self._core.store.get(HPAS, *key)
        if hpa is None:
            return
        try:
            self._reconcile(hpa)
        finally:
            if self._core.store.get(HPAS, *key) is not None:
                self.queue.add_after(key, self.sync_period)

    def _reconcile(self, hpa: dict[str, Any]) -> None:
        spec = hpa.get("spec") or {}
        uid = str(hpa["metadata"].get("uid", ""))
        status: dict[str, Any] = {"currentReplicas": 0, "desiredReplicas": 0}
        conditions: dict[str, tuple[str, str, str]] = {}
        try:
            info, target, scale = self._target(hpa)
            current = int(scale["spec"]["replicas"])
            status["currentReplicas"] = current
            conditions["AbleToScale"] = (
                "True",
                "SucceededGetScale",
                "the HPA controller was able to get the target's current scale",
            )
            minimum = int(spec.get("minReplicas") or 1)
            maximum = int(spec.get("maxReplicas") or 1)
            if current == 0 and minimum != 0:
                conditions["ScalingActive"] = (
                    "False",
                    "ScalingDisabled",
                    "scaling is disabled since the replica count of the target is zero",
                )
                status["desiredReplicas"] = 0
            else:
                proposal, metrics, describe = self._propose(hpa, scale, current)
                status["currentMetrics"] = metrics
                conditions["ScalingActive"] = (
                    "True",
                    "ValidMetricFound",
                    f"the HPA was able to successfully calculate a replica count from {describe}",
                )
                now = self.clock()
                history = [r for r in self._recommendations.get(uid, []) if r[0] > now - _HISTORY]
                events = [e for e in self._rescales.get(uid, []) if e.at > now - _HISTORY]
                result = apply_behavior(
                    current=current, desired=proposal, minimum=minimum, maximum=maximum,
                    behavior=spec.get("behavior"), now=now, history=history, events=events,
                )  # fmt: skip
                # A repeated recommendation only moves its timestamp: a window's min or max needs the latest of
                # each, so the history stays as short as the recommendations' changes, whatever the sync period.
                if history and history[-1][1] == proposal:
                    history.pop()
                self._recommendations[uid] = [*history, (now, proposal)]
                conditions["AbleToScale"] = ("True", result.able_reason, result.able_message)
                conditions["ScalingLimited"] = (
                    "True" if result.limited else "False",
                    result.limit_reason,
                    result.limit_message,
                )
                status["desiredReplicas"] = result.replicas
                if result.replicas != current:
                    self._rescale(hpa, info, target, current, result.replicas, proposal, describe)
                    self._rescales[uid] = [*events, ScaleEvent(now, result.replicas - current)]
                    status["lastScaleTime"] = now_rfc3339()
                    conditions["AbleToScale"] = (
                        "True",
                        "SucceededRescale",
                        f"the HPA controller was able to update the target scale to {result.replicas}",
                    )
        except _Failed as failure:
            conditions[failure.condition] = ("False", failure.reason, failure.message)
            self._events.emit(hpa, "Warning", failure.reason, failure.message)
        self._write_status(hpa, status, conditions)

    def _target(self, hpa: dict[str, Any]) -> tuple[ResourceInfo, dict[str, Any], dict[str, Any]]:
        ref = (hpa.get("spec") or {}).get("scaleTargetRef") or {}
        api_version, kind, name = str(ref.get("apiVersion", "")), str(ref.get("kind", "")), str(ref.get("name", ""))
        info = self._core.registry.by_kind(api_version, kind)
        group = api_version.rpartition("/")[0]
        if info is None or info.scale is None:
            raise _Failed(
                "AbleToScale",
                "FailedGetScale",
                f"the HPA controller was unable to get the target's current scale: "
                f'no matches for kind "{kind}" in group "{group}"',
            )
        namespace = hpa["metadata"].get("namespace", "")
        target = self._core.store.get(info.key, namespace, name)
        if target is None:
            qualified = f"{info.plural}.{group}" if group else info.plural
            why = f'{qualified} "{name}" not found'
            raise _Failed(
                "AbleToScale",
                "FailedGetScale",
                f"the HPA controller was unable to get the target's current scale: {why}",
            )
        return info, target, get_scale(info, target)

    def _pods(self, hpa: dict[str, Any], scale: dict[str, Any]) -> list[dict[str, Any]]:
        text = (scale.get("status") or {}).get("selector")
        if not text:
            raise _Failed("ScalingActive", "InvalidSelector", "the HPA target's scale is missing a selector")
        try:
            selector = parse_label_selector(str(text))
        except SelectorError as exc:
            raise _Failed(
                "ScalingActive",
                "InvalidSelector",
                f"couldn't convert selector into a corresponding internal selector object: {exc}",
            ) from None
        namespace = hpa["metadata"].get("namespace", "")
        return [
            p for p in self._core.store.list(PODS, namespace)
            if selector.matches(p["metadata"].get("labels") or {})
            and not p["metadata"].get("deletionTimestamp")
            and (p.get("status") or {}).get("phase") not in ("Succeeded", "Failed")
        ]  # fmt: skip

    def _propose(
        self, hpa: dict[str, Any], scale: dict[str, Any], current: int
    ) -> tuple[int, list[dict[str, Any]], str]:
        """The largest replica count any metric asks for, the status of every metric, and what decided."""
        pods = self._pods(hpa, scale)
        specs = list((hpa.get("spec") or {}).get("metrics") or []) or [
            {
                "type": "Resource",
                "resource": {"name": "cpu", "target": {"type": "Utilization", "averageUtilization": 80}},
            }
        ]
        best, statuses, describe = -1, [], ""
        for metric in specs:
            replicas, status, what = self._metric(metric, pods, current)
            statuses.append(status)
            if replicas > best:
                best, describe = replicas, what
        return best, statuses, describe

    def _metric(
        self, metric: dict[str, Any], pods: list[dict[str, Any]], current: int
    ) -> tuple[int, dict[str, Any], str]:
        kind = metric.get("type")
        if kind == "Resource":
            source = metric.get("resource") or {}
            name = str(source.get("name", ""))
        elif kind == "Pods":
            source = metric.get("pods") or {}
            name = str((source.get("metric") or {}).get("name", ""))
        else:
            raise _Failed(
                "ScalingActive",
                "InvalidMetricSourceType",
                f"invalid metrics source type {kind!r}: only Resource and Pods metrics are simulated",
            )
        target = source.get("target") or {}
        reporting = [p for p in pods if measured(p)]
        if not reporting:
            raise _Failed(
                "ScalingActive",
                "FailedGetResourceMetric",
                f"unable to get metrics for resource {name}: no metrics returned from resource metrics API",
            )
        used = sum((pod_usage(p, (name,))[name] for p in reporting), Fraction(0))
        missing = len(pods) - len(reporting)
        if kind == "Resource" and target.get("type", "Utilization") == "Utilization":
            requested = Fraction(0)
            for pod in reporting:
                amount = pod_requests(pod).get(name)
                if not amount:
                    raise _Failed(
                        "ScalingActive",
                        "FailedGetResourceMetric",
                        f"failed to get {name} utilization: missing request for {name} in container "
                        f"{_first_container(pod)} of Pod {pod['metadata']['name']}",
                    )
                requested += amount
            utilization = int(used * 100 / requested)
            goal = int(target.get("averageUtilization") or 80)
            ratio = Fraction(utilization, goal)
            per_pod_goal = Fraction(goal, 100) * requested / len(reporting)
            current_doc = {
                "averageUtilization": utilization,
                "averageValue": self._quantity(name, used / len(reporting)),
            }
            what = f"{name} resource utilization (percentage of request)"
        else:
            try:
                per_pod_goal = parse_quantity(target.get("averageValue") or target.get("value") or "0")
            except QuantityError:
                per_pod_goal = Fraction(0)
            if per_pod_goal <= 0:
                raise _Failed("ScalingActive", "FailedGetResourceMetric", f"invalid target value for metric {name}")
            ratio = used / len(reporting) / per_pod_goal
            current_doc = {"averageValue": self._quantity(name, used / len(reporting))}
            what = f"{name} resource" if kind == "Resource" else f"pods metric {name}"
        replicas = self._replicas(current, ratio, used, per_pod_goal, len(reporting), missing)
        key = "resource" if kind == "Resource" else "pods"
        ident = {"name": name} if kind == "Resource" else {"metric": {"name": name}}
        return replicas, {"type": kind, key: {**ident, "current": current_doc}}, what

    @staticmethod
    def _replicas(current: int, ratio: Fraction, used: Fraction, goal: Fraction, reporting: int, missing: int) -> int:
        """``GetResourceReplicas``: within tolerance nothing changes; pods without metrics count as at target when
        scaling down and as idle when scaling up, and may not reverse the direction."""
        if missing == 0:
            if abs(float(ratio) - 1.0) <= _TOLERANCE:
                return current
            return math.ceil(ratio * reporting)
        if abs(float(ratio) - 1.0) <= _TOLERANCE:
            return current
        total = used + (goal * missing if ratio < 1 else Fraction(0))
        new_ratio = total / ((reporting + missing) * goal)
        if abs(float(new_ratio) - 1.0) <= _TOLERANCE or (new_ratio > 1) != (ratio > 1):
            return current
        return math.ceil(new_ratio * (reporting + missing))

    @staticmethod
    def _quantity(name: str, value: Fraction) -> str:
        if name == "cpu":
            return _milli(value)
        if name == "memory":
            return usage_quantities({"memory": value})["memory"]
        return str(math.ceil(value)) if value.denominator != 1 else str(value.numerator)

    def _rescale(
        self,
        hpa: dict[str, Any],
        info: ResourceInfo,
        target: dict[str, Any],
        current: int,
        replicas: int,
        proposal: int,
        describe: str,
    ) -> None:
        meta = target["metadata"]
        try:
            update_scale(self._core, info, meta.get("namespace", ""), meta["name"], {"spec": {"replicas": replicas}})
        except errors.ApiError as exc:
            raise _Failed(
                "AbleToScale",
                "FailedUpdateScale",
                f"the HPA controller was unable to update the target scale: {exc.message}",
            ) from None
        reason = f"{describe} above target" if replicas > current else "All metrics below target"
        self._events.emit(hpa, "Normal", "SuccessfulRescale", f"New size: {replicas}; reason: {reason}")

    def _write_status(
        self, hpa: dict[str, Any], status: dict[str, Any], conditions: dict[str, tuple[str, str, str]]
    ) -> None:
        current = self._core.store.get(HPAS, hpa["metadata"].get("namespace", ""), hpa["metadata"]["name"])
        if current is None:
            return
        previous = current.get("status") or {}
        if "lastScaleTime" not in status and previous.get("lastScaleTime"):
            status["lastScaleTime"] = previous["lastScaleTime"]
        status["observedGeneration"] = int(current["metadata"].get("generation") or 0)
        old = {c.get("type"): c for c in previous.get("conditions") or []}
        status["conditions"] = []
        for type_ in ("AbleToScale", "ScalingActive", "ScalingLimited"):
            if type_ not in conditions:
                continue
            value, reason, message = conditions[type_]
            before = old.get(type_)
            stamp = (
                before.get("lastTransitionTime")
                if before is not None and before.get("status") == value
                else now_rfc3339()
            )
            status["conditions"].append(
                {"type": type_, "status": value, "lastTransitionTime": stamp, "reason": reason, "message": message}
            )
        if previous == status:
            return
        write_status(self._core, current, status)

"""Endpoints and EndpointSlices of Services with a selector, kept from their pods as kube-controller-manager does.

For each Service with a ``spec.selector`` the controller writes an ``Endpoints`` object of the same name (ready
pods' IPs under ``addresses``, the others under ``notReadyAddresses``) and one ``discovery.k8s.io/v1``
EndpointSlice labelled ``kubernetes.io/service-name`` and owned by the Service (ready, serving and terminating
conditions per endpoint). Target ports are resolved per pod, a named ``targetPort`` through the pod's container
ports. Pods without an IP, and terminal pods, are left out. A Service without a selector keeps whatever Endpoints a
user writes. As in kube-controller-manager, Endpoints hold at most 1,000 addresses (then annotated
``endpoints.kubernetes.io/over-capacity: truncated``); unlike it, one EndpointSlice holds them all.

Work is keyed by Service. Each Service's selected pods are indexed as pod events arrive (a pod event touches only the
Services of its namespace whose selector matches the pod before or after the change), so a sync costs the
Service's own pods, never a scan of the namespace. Services are found by one label pair of their selector, so a pod
event costs the Services sharing a label with the pod, not every Service of the namespace (750 Services in one
namespace made this the largest part of grove-sim's CPU per pod write).
"""

from __future__ import annotations

import hashlib
from collections import defaultdict
from typing import Any

from grove_sim.controllers.workqueue import WorkQueue
from grove_sim.machinery import errors
from grove_sim.machinery.label_selectors import LabelSelector, label_selector_from_dict
from grove_sim.registry.core import Core
from grove_sim.storage.store import Event

__all__ = ["SERVICE_NAME_LABEL", "EndpointsController"]

SERVICE_NAME_LABEL = "kubernetes.io/service-name"
_MANAGED_BY = {"endpointslice.kubernetes.io/managed-by": "endpointslice-controller.k8s.io"}
_SERVICES = ("", "services")
_PODS = ("", "pods")
_ENDPOINTS = ("", "endpoints")
_SLICES = ("discovery.k8s.io", "endpointslices")
ServiceKey = tuple[str, str]
MAX_ENDPOINTS = 1000
"""Addresses one Endpoints object holds, as kube-controller-manager's ``maxCapacity``."""


def _target_port(pod: dict[str, Any], port: dict[str, Any]) -> int | None:
    target = port.get("targetPort", port.get("port"))
    if isinstance(target, int):
        return target
    if isinstance(target, str) and target.isdigit():
        return int(target)
    for container in (pod.get("spec") or {}).get("containers") or []:
        for declared in container.get("ports") or []:
            if declared.get("name") == target:
                return int(declared.get("containerPort") or 0)
    return None


def _ready(pod: dict[str, Any]) -> bool:
    conditions = (pod.get("status") or {}).get("conditions") or []
    return any(c.get("type") == "Ready" and c.get("status") == "True" for c in conditions)


class EndpointsController:
    """Writes Endpoints and EndpointSlices of selector Services; all work happens on its queue."""

    def __init__(self, core: Core) -> None:
        self._core = core
        self._selectors: dict[ServiceKey, LabelSelector] = {}
        self._members: dict[ServiceKey, dict[str, dict[str, Any]]] = {}
        """Each selector Service's pods by name (the index a sync reads)."""
        self._by_pair: dict[str, dict[tuple[str, str], set[str]]] = defaultdict(lambda: defaultdict(set))
        """Per namespace, selector Services by one (key, value) pair of their selector: a pod can match only the
        Services filed under one of its own labels."""
        self._filed: dict[ServiceKey, tuple[str, str]] = {}
        self.queue: WorkQueue[ServiceKey] = WorkQueue("endpoints", self._sync)
        core.store.add_listener(self._on_event)

    def _on_event(self, event: Event) -> None:
        meta = event.obj.get("metadata") or {}
        namespace = str(meta.get("namespace", ""))
        if event.key == _SERVICES:
            self._on_service(event, namespace, str(meta["name"]))
        elif event.key == _PODS and namespace in self._by_pair:
            name = str(meta["name"])
            labels = meta.get("labels") or {}
            old_labels = ((event.old or {}).get("metadata") or {}).get("labels") or {}
            for service in self._candidates(namespace, labels, old_labels):
                key = (namespace, service)
                selector = self._selectors.get(key)
                if selector is None:
                    continue
                members = self._members[key]
                if event.type != "DELETED" and selector.matches(labels):
                    members[name] = event.obj
                elif members.pop(name, None) is None:
                    continue
                self.queue.add(key)

    def _candidates(self, namespace: str, *label_sets: dict[str, Any]) -> set[str]:
        """Selector Services of `namespace` filed under a label pair of any of `label_sets`."""
        index = self._by_pair[namespace]
        found: set[str] = set()
        for labels in label_sets:
            for pair in labels.items():
                if isinstance(pair[1], str):  # a pair index key must hash
                    found.update(index.get(pair, ()))
        return found

    def _file(self, namespace: str, name: str, selector: Any) -> None:
        """File a Service under the pair of its selector that the fewest Services share so far (every Grove
        selector carries the same managed-by pair; the PodCliqueSet's own label tells them apart), out of where
        it was filed before; a Service without a selector is filed nowhere."""
        key = (namespace, name)
        index = self._by_pair[namespace]
        before = self._filed.pop(key, None)
        if before is not None:
            index[before].discard(name)
            if not index[before]:
                del index[before]
        pairs = [(k, v) for k, v in selector.items() if isinstance(v, str)] if isinstance(selector, dict) else []
        if pairs:
            pair = min(pairs, key=lambda p: (len(index.get(p, ())), p))
            index[pair].add(name)
            self._filed[key] = pair
        if not index:
            del self._by_pair[namespace]

    def _on_service(self, event: Event, namespace: str, name: str) -> None:
        key = (namespace, name)
        selector = (event.obj.get("spec") or {}).get("selector") if event.type != "DELETED" else None
        old = ((event.old or {}).get("spec") or {}).get("selector")
        self._file(namespace, name, selector)
        if not selector:
            self._selectors.pop(key, None)
            self._members.pop(key, None)
        elif key not in self._selectors or selector != old:
            parsed = label_selector_from_dict({"matchLabels": selector})
            self._selectors[key] = parsed
            pods = self._core.store.list(_PODS, namespace)
            self._members[key] = {
                p["metadata"]["name"]: p for p in pods if parsed.matches(p["metadata"].get("labels") or {})
            }
        self.queue.add(key)

    def _sync(self, key: ServiceKey) -> None:
        namespace, name = key
        service = self._core.store.get(_SERVICES, namespace, name)
        if service is None:
            self._delete(_ENDPOINTS, namespace, name)
            return
        if key not in self._selectors:
            return
        pods = [
            p
            for p in self._members.get(key, {}).values()
            if (p.get("status") or {}).get("podIP")
            and (p.get("status") or {}).get("phase") not in ("Succeeded", "Failed")
        ]
        pods.sort(key=lambda p: str(p["metadata"]["name"]))
        self._write(_ENDPOINTS, key, name, self._endpoints(service, pods))
        self._write(_SLICES, key, self._slice_name(name), self._slice(service, pods))

    @staticmethod
    def _slice_name(service: str) -> str:
        return f"{service[:50]}-{hashlib.sha256(service.encode()).hexdigest()[:5]}"

    def _endpoints(self, service: dict[str, Any], pods: list[dict[str, Any]]) -> dict[str, Any]:
        meta = service["metadata"]
        metadata: dict[str, Any] = {"name": meta["name"], "namespace": meta.get("namespace")}
        if meta.get("labels"):
            metadata["labels"] = dict(meta["labels"])
        if len(pods) > MAX_ENDPOINTS:
            metadata["annotations"] = {"endpoints.kubernetes.io/over-capacity": "truncated"}
            pods = pods[:MAX_ENDPOINTS]
        groups: dict[tuple[tuple[str, int, str], ...], dict[str, list[dict[str, Any]]]] = {}
        for pod in pods:
            ports = []
            for port in (service.get("spec") or {}).get("ports") or []:
                number = _target_port(pod, port)
                if number is not None:
                    ports.append((str(port.get("name") or ""), number, str(port.get("protocol") or "TCP")))
            group = groups.setdefault(tuple(ports), {"addresses": [], "notReadyAddresses": []})
            address = {"ip": pod["status"]["podIP"], "nodeName": (pod.get("spec") or {}).get("nodeName"),
                       "targetRef": self._ref(pod)}  # fmt: skip
            terminating = bool(pod["metadata"].get("deletionTimestamp"))
            group["addresses" if _ready(pod) and not terminating else "notReadyAddresses"].append(address)
        subsets = []
        for group_ports, addresses in groups.items():
            subset: dict[str, Any] = {k: v for k, v in addresses.items() if v}
            subset["ports"] = [{"name": n, "port": p, "protocol": proto} if n else {"port": p, "protocol": proto}
                               for n, p, proto in group_ports]  # fmt: skip
            subsets.append(subset)
        return {
            "apiVersion": "v1",
            "kind": "Endpoints",
            "metadata": metadata,
            "subsets": subsets,
        }

    def _slice(self, service: dict[str, Any], pods: list[dict[str, Any]]) -> dict[str, Any]:
        meta = service["metadata"]
        ports = []
        for port in (service.get("spec") or {}).get("ports") or []:
            number = _target_port(pods[0], port) if pods else None
            entry: dict[str, Any] = {"name": str(port.get("name") or ""), "protocol": port.get("protocol") or "TCP"}
            if number is not None:
                entry["port"] = number
            ports.append(entry)
        endpoints = []
        for pod in pods:
            terminating = bool(pod["metadata"].get("deletionTimestamp"))
            ready = _ready(pod)
            endpoints.append({
                "addresses": [pod["status"]["podIP"]],
                "conditions": {"ready": ready and not terminating, "serving": ready, "terminating": terminating},
                "nodeName": (pod.get("spec") or {}).get("nodeName"),
                "targetRef": self._ref(pod),
            })  # fmt: skip
        owner = {"apiVersion": "v1", "kind": "Service", "name": meta["name"], "uid": meta.get("uid"),
                 "controller": True, "blockOwnerDeletion": True}  # fmt: skip
        return {
            "apiVersion": "discovery.k8s.io/v1",
            "kind": "EndpointSlice",
            "metadata": {
                "name": self._slice_name(meta["name"]),
                "namespace": meta.get("namespace"),
                "labels": {**(meta.get("labels") or {}), SERVICE_NAME_LABEL: meta["name"], **_MANAGED_BY},
                "ownerReferences": [owner],
            },
            "addressType": "IPv4",
            "endpoints": endpoints,
            "ports": ports,
        }

    @staticmethod
    def _ref(pod: dict[str, Any]) -> dict[str, Any]:
        meta = pod["metadata"]
        return {"kind": "Pod", "namespace": meta.get("namespace"), "name": meta["name"], "uid": meta.get("uid")}

    def _write(self, key: tuple[str, str], service: ServiceKey, name: str, desired: dict[str, Any]) -> None:
        """Create or update ``name`` to ``desired``; a conflict retries the Service's sync."""
        namespace = service[0]
        info = self._core.registry.get(key[0], "v1", key[1])
        assert info is not None
        current = self._core.store.get(key, namespace, name)
        try:
            if current is None:
                self._core.create(info, namespace, desired)
                return
            merged = {**current, **{k: v for k, v in desired.items() if k != "metadata"}}
            merged["metadata"] = {**current["metadata"], **desired["metadata"]}
            if merged != current:
                self._core.replace(info, current, merged)
        except errors.ApiError as exc:
            if exc.code not in (404, 409):
                raise
            self.queue.add_after(service, 0.1)

    def _delete(self, key: tuple[str, str], namespace: str, name: str) -> None:
        info = self._core.registry.get(key[0], "v1", key[1])
        assert info is not None
        if self._core.store.get(key, namespace, name) is not None:
            try:
                self._core.delete(info, namespace, name, {})
            except errors.ApiError as exc:
                if exc.code != 404:
                    raise

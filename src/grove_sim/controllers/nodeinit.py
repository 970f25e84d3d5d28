"""A node's status as KWOK's node-initialize stage writes it: Ready condition, capacity/allocatable, nodeInfo.

Kept apart from the kubelet, which only decides when a node is initialised (a node created without status).
"""

from __future__ import annotations

from typing import Any

from grove_sim.registry.core import clone, now_rfc3339

__all__ = ["initialised"]


def initialised(node: dict[str, Any]) -> dict[str, Any] | None:
    """``node`` with the status a simulated kubelet posts, or None when it already has one."""
    name = node["metadata"]["name"]
    status = node.get("status") or {}
    if status.get("nodeInfo") and status.get("conditions") and status.get("allocatable"):
        return None
    new = clone(node)
    st = new.setdefault("status", {})
    capacity = st.get("capacity") or {"cpu": "1k", "memory": "1Ti", "pods": "1M"}
    st["capacity"] = capacity
    st.setdefault("allocatable", dict(capacity))
    now = now_rfc3339()
    if not any(c.get("type") == "Ready" for c in st.get("conditions") or []):
        ready = {
            "type": "Ready",
            "status": "True",
            "reason": "KubeletReady",
            "message": "kubelet is posting ready status (simulated)",
        }
        st["conditions"] = [
            *(st.get("conditions") or []),
            {**ready, "lastHeartbeatTime": now, "lastTransitionTime": now},
        ]
    st.setdefault("addresses", [{"type": "Hostname", "address": name}])
    st.setdefault(
        "nodeInfo",
        {
            "kubeletVersion": "v1.32.5-grove-sim",
            "operatingSystem": "linux",
            "architecture": "amd64",
            "containerRuntimeVersion": "containerd://1.7.0-sim",
            "osImage": "Grove Simulated Linux",
            "kernelVersion": "6.1.0-grove-sim",
            "machineID": name,
            "systemUUID": name,
            "bootID": "",
            "kubeProxyVersion": "v1.32.5-grove-sim",
        },
    )
    st.setdefault("phase", "Running")
    return new

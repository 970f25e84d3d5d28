"""Pods and PodCliques as the lifecycle decisions read them, built from a few words."""

from __future__ import annotations

from typing import Any

Obj = dict[str, Any]


def pod(
    name: str,
    template_hash: str = "old",
    *,
    ready: bool = True,
    scheduled: bool = True,
    terminating: bool = False,
    created: int = 0,
    crashed_before: bool = False,
    phase: str | None = None,
    pclq: str = "p-0-a",
) -> Obj:
    """A pod of PodClique `pclq`. `crashed_before`: a container's last state is a non-zero exit although the pod
    is Ready now (the pod upstream #697 deleted); `created`: seconds after midnight, for oldest-first order."""
    container: Obj = {"name": "c", "ready": ready, "started": ready}
    if crashed_before:
        container["lastState"] = {"terminated": {"exitCode": 137}}
    meta: Obj = {
        "name": name,
        "creationTimestamp": f"2026-01-01T00:{created // 60:02d}:{created % 60:02d}Z",
        "labels": {"grove.io/pod-template-hash": template_hash, "grove.io/podclique": pclq},
    }
    if terminating:
        meta["deletionTimestamp"] = "2026-01-01T01:00:00Z"
    return {
        "metadata": meta,
        "spec": {"nodeName": "node-0"} if scheduled else {},
        "status": {
            "phase": phase or ("Running" if scheduled else "Pending"),
            "conditions": [{"type": "Ready", "status": "True" if ready else "False"}],
            "containerStatuses": [container],
        },
    }

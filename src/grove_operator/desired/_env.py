"""Injecting Grove's environment variables into a pod spec (grove-reference §2.4).

Grove prepends its variables to every container and init container and drops template variables of the same name,
so later user variables can still refer to them with `$(GROVE_...)`. PodClique specs (scaling-group variables) and
pods (the five common variables) both go through this one function, which is what fixes the final order.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

from grove_runtime.jsoncopy import json_copy

__all__ = ["field_ref_env", "prepend_env", "value_env"]


def value_env(name: str, value: str) -> dict[str, Any]:
    """A literal env var."""
    return {"name": name, "value": value}


def field_ref_env(name: str, field_path: str) -> dict[str, Any]:
    """A downward-API env var read from the pod's own metadata."""
    return {"name": name, "valueFrom": {"fieldRef": {"fieldPath": field_path}}}


def prepend_env(pod_spec: Mapping[str, Any], env: Sequence[Mapping[str, Any]]) -> dict[str, Any]:
    """A copy of `pod_spec` whose containers and init containers start with `env` (same-named vars replaced)."""
    result = json_copy(dict(pod_spec))
    injected = [dict(e) for e in env]
    names = {e["name"] for e in injected}
    for key in ("initContainers", "containers"):
        containers = result.get(key)
        if not containers:
            continue
        for container in containers:
            user_env = [e for e in container.get("env") or () if e.get("name") not in names]
            container["env"] = json_copy(injected) + user_env
    return result

"""Which address answers for a Service's port: the one rule the service proxy, port-forward and webhook calls share.

kube-apiserver reaches a Service through its Endpoints: the Service port (named, or numbered, or the only one) names
the Endpoints port of the same name, and any ready address of a subset carrying that port will do (the first here).
Pure: the caller reads the Service and Endpoints objects.
"""

from __future__ import annotations

from typing import Any

__all__ = ["ready_endpoint", "service_port"]


def service_port(service: dict[str, Any], port: str) -> dict[str, Any] | None:
    """The Service port named or numbered ``port`` (the only one when ``port`` is empty)."""
    ports = list((service.get("spec") or {}).get("ports") or [])
    if not port:
        return ports[0] if len(ports) == 1 else next((p for p in ports if not p.get("name")), None)
    return next((p for p in ports if p.get("name") == port or str(p.get("port")) == port), None)


def ready_endpoint(service: dict[str, Any], endpoints: dict[str, Any] | None, port: str) -> tuple[str, int, str] | None:
    """A ready (ip, target port, pod name) behind ``port`` of ``service``, or None when there is none."""
    wanted = service_port(service, port)
    if wanted is None:
        return None
    name = str(wanted.get("name") or "")
    for subset in (endpoints or {}).get("subsets") or []:
        for candidate in subset.get("ports") or []:
            if str(candidate.get("name") or "") != name:
                continue
            for address in subset.get("addresses") or []:
                pod = str((address.get("targetRef") or {}).get("name") or "")
                return str(address["ip"]), int(candidate["port"]), pod
    return None

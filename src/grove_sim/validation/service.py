"""Service validation, as ``ValidateService`` does it for what users write: type, ports, selector, affinity.

Ports need a name when there are several (unique DNS-1123 labels), a port number and a supported protocol, and a
``targetPort`` that is a port number or a port name; (protocol, port) pairs are unique. A headless service
(``clusterIP: None``) and an ``ExternalName`` one may have no ports.
"""

from __future__ import annotations

import json
from typing import Any, Final

from grove_sim.validation.field import (
    Cause,
    duplicate,
    enum_causes,
    get_int,
    get_list,
    get_map,
    get_str,
    get_str_map,
    invalid,
    required,
)
from grove_sim.validation.meta import validate_labels
from grove_sim.validation.names import DNS1123_LABEL, DNS1123_SUBDOMAIN, PORT_NAME, PROTOCOLS, port_number_errors

__all__ = ["validate_service"]

_TYPES: Final = ("ClusterIP", "ExternalName", "LoadBalancer", "NodePort")
_AFFINITIES: Final = ("ClientIP", "None")


def _target_port(value: Any, path: str) -> list[Cause]:
    """``ValidatePortNumOrName``."""
    if isinstance(value, str):
        return [invalid(path, value, m) for m in PORT_NAME.errors(value)]
    number = value if isinstance(value, int) and not isinstance(value, bool) else 0
    return [invalid(path, number, m) for m in port_number_errors(number)]


def _port(port: dict[str, Any], require_name: bool, names: set[str], path: str) -> list[Cause]:
    """``validateServicePort``."""
    causes: list[Cause] = []
    name = get_str(port, "name", path)
    if require_name and not name:
        causes.append(required(f"{path}.name"))
    elif name:
        causes += [invalid(f"{path}.name", name, m) for m in DNS1123_LABEL.errors(name)]
        if name in names:
            causes.append(duplicate(f"{path}.name", name))
        names.add(name)
    number = get_int(port, "port", path) or 0
    causes += [invalid(f"{path}.port", number, m) for m in port_number_errors(number)]
    causes += enum_causes(port, "protocol", path, PROTOCOLS)
    causes += _target_port(port.get("targetPort"), f"{path}.targetPort")
    return causes


def _go_service_port(port: dict[str, Any]) -> dict[str, Any]:
    """The internal ``core.ServicePort`` key upstream reports for a duplicate (Go field names, no JSON tags)."""
    return {
        "Name": "",
        "Protocol": port.get("protocol") or "",
        "AppProtocol": None,
        "Port": port.get("port") or 0,
        "TargetPort": 0,
        "NodePort": 0,
    }


def validate_service(service: dict[str, Any]) -> list[Cause]:
    """The ``spec`` causes of a Service (metadata is validated for every kind by the caller)."""
    spec = get_map(service, "spec", "")
    kind = get_str(spec, "type", "spec")
    ports = get_list(spec, "ports", "spec")
    cluster_ips = get_list(spec, "clusterIPs", "spec", str)
    headless = kind == "ClusterIP" and bool(cluster_ips) and cluster_ips[0] == "None"
    causes: list[Cause] = []
    if not ports and not headless and kind != "ExternalName":
        causes.append(required("spec.ports"))
    if kind == "ExternalName":
        external = get_str(spec, "externalName", "spec")
        if not external:
            causes.append(required("spec.externalName"))
        else:
            causes += [invalid("spec.externalName", external, m) for m in DNS1123_SUBDOMAIN.errors(external)]
    names: set[str] = set()
    for index, port in enumerate(ports):
        causes += _port(port, len(ports) > 1, names, f"spec.ports[{index}]")
    selector = get_str_map(spec, "selector", "spec")
    if selector:
        causes += validate_labels(selector, "spec.selector")
    causes += enum_causes(spec, "sessionAffinity", "spec", _AFFINITIES)
    causes += enum_causes(spec, "type", "spec", _TYPES)
    seen: set[str] = set()
    for index, port in enumerate(ports):
        key = _go_service_port(port)
        text = json.dumps(key, sort_keys=True)
        if text in seen:
            causes.append(duplicate(f"spec.ports[{index}]", key))
        seen.add(text)
    return causes

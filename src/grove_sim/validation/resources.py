"""Container resource requirements: resource names, quantities, and requests against limits.

As ``validateResourceRequirements`` does it: a name is a standard container resource (``cpu``, ``memory``,
``ephemeral-storage``, ``hugepages-*``) or a qualified extended resource (``nvidia.com/gpu``); quantities are not
negative, and extended resources are whole numbers; a request never exceeds its limit, and resources that cannot be
overcommitted (extended resources, huge pages) need a limit equal to the request. Quantities appear in messages as
Go prints them (``0.5`` as ``500m``); a string that is not a quantity fails decoding (400), as upstream.
"""

from __future__ import annotations

import functools
import math
from dataclasses import dataclass
from typing import Any, Final

from grove_sim.machinery.quantity import QuantityError, canonical_quantity, parse_quantity
from grove_sim.validation.field import Cause, DecodeError, forbidden, get_map, invalid, required
from grove_sim.validation.names import QUALIFIED_NAME

__all__ = ["validate_resource_requirements"]

_CONTAINER_RESOURCES: Final = frozenset({"cpu", "memory", "ephemeral-storage"})
_INTEGER_RESOURCES: Final = frozenset(
    {
        "pods",
        "services",
        "replicationcontrollers",
        "resourcequotas",
        "secrets",
        "configmaps",
        "persistentvolumeclaims",
        "services.nodeports",
        "services.loadbalancers",
    }
)
_STANDARD_RESOURCES: Final = _INTEGER_RESOURCES | {
    "cpu",
    "memory",
    "ephemeral-storage",
    "requests.cpu",
    "requests.memory",
    "requests.ephemeral-storage",
    "limits.cpu",
    "limits.memory",
    "limits.ephemeral-storage",
    "requests.storage",
}
_HUGEPAGES: Final = "hugepages-"
_QUANTITY_REGEX: Final = "^([+-]?[0-9.]+)([eEinumkKMGTP]*[-+]?[0-9]*)$"
_NANO: Final = 1_000_000_000


@dataclass(frozen=True, slots=True)
class _Resource:
    """What the requirement rules need to know of a resource name."""

    integer: bool
    overcommit: bool
    huge: bool
    compute: bool


_known: dict[str, _Resource] = {}
"""Valid resource names seen so far, classified once."""
_valid_requirements: set[tuple[tuple[tuple[str, Any], ...], tuple[tuple[str, Any], ...]]] = set()
_CACHE_LIMIT: Final = 16_384


def _native(name: str) -> bool:
    """``IsNativeResource``: no domain, or a ``kubernetes.io/`` one."""
    return "/" not in name or "kubernetes.io/" in name


def _extended(name: str) -> bool:
    """``IsExtendedResourceName``: a non-native name that is still a qualified name as a quota key."""
    return not _native(name) and not name.startswith("requests.") and not QUALIFIED_NAME.errors(f"requests.{name}")


def _classify(name: str) -> _Resource:
    huge = name.startswith(_HUGEPAGES)
    return _Resource(
        integer=name in _INTEGER_RESOURCES or _extended(name),
        overcommit=_native(name) and not huge,
        huge=huge,
        compute=name in ("cpu", "memory"),
    )


def _name_causes(name: str, path: str) -> list[Cause]:
    """``validateContainerResourceName``; a valid name is classified and remembered."""
    causes = [invalid(path, name, m) for m in QUALIFIED_NAME.errors(name)]
    if causes:
        return causes
    if "/" not in name:
        if name not in _STANDARD_RESOURCES and not name.startswith(_HUGEPAGES):
            causes.append(invalid(path, name, "must be a standard resource type or fully qualified"))
        if name not in _CONTAINER_RESOURCES and not name.startswith(_HUGEPAGES):
            causes.append(invalid(path, name, "must be a standard resource for containers"))
    elif not _native(name) and not _extended(name):
        causes.append(invalid(path, name, "doesn't follow extended resource name standard"))
    if not causes:
        _known[name] = _classify(name)
    return causes


@functools.lru_cache(maxsize=4096)
def _nanos_of(value: str | int | float) -> int:
    """A quantity in nano units, rounded up as Go's parser rounds (exact below that precision)."""
    try:
        return math.ceil(parse_quantity(value) * 1_000_000_000)
    except QuantityError:
        raise DecodeError(f"quantities must match the regular expression '{_QUANTITY_REGEX}'") from None


def _nanos(value: Any) -> int:
    if value is None:
        return 0
    if value.__class__ not in (str, int, float):
        raise DecodeError(f"quantities must match the regular expression '{_QUANTITY_REGEX}'")
    return _nanos_of(value)


def _entry_causes(name: str, raw: Any, nanos: int, path: str) -> list[Cause]:
    """``validateContainerResourceName`` and ``ValidateResourceQuantityValue`` for one entry: a valid name, not
    negative, and a whole number for integer resources."""
    causes = _name_causes(name, path)
    shown = canonical_quantity("0" if raw is None else raw)
    if nanos < 0:
        causes.append(invalid(path, shown, "must be greater than or equal to 0"))
    if nanos % _NANO and _classify(name).integer:
        causes.append(invalid(path, shown, "must be an integer"))
    return causes


def _fine(resource: _Resource | None, nanos: int) -> bool:
    """True for a known name with an acceptable amount (the common case, decided without building a path)."""
    return resource is not None and nanos >= 0 and not (nanos % _NANO and resource.integer)


def _shown(value: Any) -> str:
    return canonical_quantity("0" if value is None else value)


def validate_resource_requirements(resources: dict[str, Any], path: str) -> list[Cause]:
    """The causes for one container's ``resources`` at ``path`` (``spec.containers[0].resources``).

    Containers made from one template repeat the same requirements, so requirements found valid are remembered
    (as their (limits, requests) items) and not examined again.
    """
    limits = get_map(resources, "limits", path)
    requests = get_map(resources, "requests", path)
    seen = None
    if not any(v.__class__ is bool for v in (*limits.values(), *requests.values())):  # True == 1 in a tuple
        try:
            seen = (tuple(limits.items()), tuple(requests.items()))
            if seen in _valid_requirements:
                return []
        except TypeError:  # an unhashable value: not a quantity, examined below
            seen = None
    causes = _requirement_causes(limits, requests, path)
    if not causes and seen is not None:
        if len(_valid_requirements) >= _CACHE_LIMIT:
            _valid_requirements.clear()
        _valid_requirements.add(seen)
    return causes


def _requirement_causes(limits: dict[str, Any], requests: dict[str, Any], path: str) -> list[Cause]:
    causes: list[Cause] = []
    limit_nanos: dict[str, int] = {}
    huge = compute = False
    for name, raw in limits.items():
        nanos = limit_nanos[name] = _nanos(raw)
        resource = _known.get(name)
        if not _fine(resource, nanos):
            causes += _entry_causes(name, raw, nanos, f"{path}.limits[{name}]")
        resource = resource or _classify(name)
        huge, compute = huge or resource.huge, compute or resource.compute
    for name, raw in requests.items():
        nanos = _nanos(raw)
        resource = _known.get(name)
        if not _fine(resource, nanos):
            causes += _entry_causes(name, raw, nanos, f"{path}.requests[{name}]")
        resource = resource or _classify(name)
        huge, compute = huge or resource.huge, compute or resource.compute
        limit = limit_nanos.get(name)
        if limit is not None:
            if nanos != limit and not resource.overcommit:
                detail = f"must be equal to {name} limit of {_shown(limits[name])}"
                causes.append(invalid(f"{path}.requests", _shown(raw), detail))
            elif nanos > limit:
                detail = f"must be less than or equal to {name} limit of {_shown(limits[name])}"
                causes.append(invalid(f"{path}.requests", _shown(raw), detail))
        elif not resource.overcommit:
            causes.append(required(f"{path}.limits", "Limit must be set for non overcommitable resources"))
    if huge and not compute:
        causes.append(forbidden(path, "HugePages require cpu or memory"))
    return causes

"""Pod specs admitted before, so that the replicas of one workload are copied, defaulted and validated once.

Controllers create pods from a template: the replicas of a workload differ only in ``PER_POD_FIELDS`` (hostname,
subdomain, nodeName). For a pod spec it admitted, the registry remembers the spec as written (without those
fields) and the spec it stored (defaulted, validated, without them). A later pod whose written spec equals a
remembered one gets the stored spec, shared, with its own per-pod fields: no copy, no defaulting, and only the
per-pod fields left to validate. Sharing is safe because stored objects are immutable (``grove_sim.storage.store``)
and every write replaces what it changes; it also keeps one copy of a workload's containers in memory.

Specs are compared with Python's ``==``, under which ``1``, ``1.0`` and ``true`` are equal: a spec that differs from
an admitted one only by such a value is stored as the admitted one.
"""

from __future__ import annotations

from typing import Any, Final

from grove_sim.machinery.patch import copy_json
from grove_sim.validation.pod import PER_POD_FIELDS

__all__ = ["PodTemplates"]

Spec = dict[str, Any]


def _shared_part(spec: Spec) -> Spec:
    """A shallow copy of ``spec`` without its per-pod fields."""
    shared = dict(spec)
    for field in PER_POD_FIELDS:
        shared.pop(field, None)
    return shared


def _key(shared: Spec) -> tuple[Any, ...]:
    """A cheap summary that tells most templates apart: size, first image, and the first container's env values."""
    containers = shared.get("containers")
    first = containers[0] if containers.__class__ is list and containers else None
    if first.__class__ is not dict:
        return (len(shared),)
    assert isinstance(first, dict)
    env = first.get("env")
    values = tuple(v.get("value") for v in env if v.__class__ is dict) if env.__class__ is list else ()
    image = first.get("image")
    try:
        hash(values)
    except TypeError:
        values = ()
    return len(shared), image if image.__class__ is str else None, values


class PodTemplates:
    """Written pod specs admitted before, with the specs stored for them; bounded."""

    LIMIT: Final = 4096
    PER_KEY: Final = 8

    def __init__(self) -> None:
        self._known: dict[tuple[Any, ...], list[tuple[Spec, Spec]]] = {}

    def lookup(self, written: Any) -> tuple[Spec | None, tuple[Any, ...] | None]:
        """For a pod written with ``written``: the spec to store when an equal spec (per-pod fields aside) was
        admitted before (the admitted one with this pod's per-pod fields copied in), else None; and the key under
        which to ``remember`` it once admitted (None when ``written`` is no object)."""
        if written.__class__ is not dict:
            return None, None
        shared = _shared_part(written)
        key = _key(shared)
        for before, admitted in self._known.get(key, ()):
            if before == shared:
                spec = dict(admitted)
                for field in PER_POD_FIELDS:
                    if field in written:
                        spec[field] = copy_json(written[field])
                return spec, key
        return None, key

    def remember(self, key: tuple[Any, ...], written: Spec, stored: Spec) -> None:
        """A pod written with ``written`` (its spec as copied, before defaulting; ``key`` from ``lookup``) was
        admitted as ``stored``."""
        known = self._known.get(key)
        if known is None:
            if len(self._known) >= self.LIMIT:
                self._known.clear()
            known = self._known[key] = []
        if len(known) >= self.PER_KEY:
            known.pop(0)
        known.append((_shared_part(written), _shared_part(stored)))

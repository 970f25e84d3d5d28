"""Strategic merge patch: JSON merge patch that merges lists by the upstream merge keys of the built-in kinds.

kubectl apply and kubernetes-asyncio send strategic merge patches for built-in kinds, so lists such as
``status.conditions`` or ``spec.containers`` must merge by their upstream merge keys, or a kubelet's status patch
would wipe every other condition. Like ``grove_sim.machinery.patch``, the function is pure; with
``copy_target=False`` the result shares every subtree the patch does not touch with ``target``.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any, Final

from grove_sim.machinery.patch import PatchError, copy_json, json_equal, json_merge_patch

__all__ = ["FieldMeta", "Schema", "schema_for_kind", "strategic_merge_patch"]


# ---------------------------------------------------------------------------------------------------------------------
# Strategic merge patch metadata: the upstream ``patchStrategy``/``patchMergeKey`` tags of the built-in types


@dataclass(frozen=True, slots=True)
class FieldMeta:
    """Patch metadata of one field: whether its list merges (and by which key) and the metadata of its children."""

    merge: bool = False
    merge_key: str | None = None
    children: Schema = field(default_factory=dict)


Schema = dict[str, FieldMeta]
_PLAIN: Final = FieldMeta()


def _obj(**children: FieldMeta) -> FieldMeta:
    """A nested object (or list of objects replaced wholesale) whose own fields have patch metadata."""
    return FieldMeta(children=children)


def _merged(key: str | None = None, **children: FieldMeta) -> FieldMeta:
    """A list with ``patchStrategy: merge``: by ``key`` for objects, as a set when ``key`` is None (primitives)."""
    return FieldMeta(merge=True, merge_key=key, children=children)


_METADATA: Final = _obj(ownerReferences=_merged("uid"), finalizers=_merged())
_CONDITIONS: Final = _merged("type")
_CONTAINER: Final[Schema] = {
    "ports": _merged("containerPort"),
    "env": _merged("name"),
    "volumeMounts": _merged("mountPath"),
    "volumeDevices": _merged("devicePath"),
}
_POD_SPEC: Final = _obj(
    volumes=_merged("name"),
    initContainers=_merged("name", **_CONTAINER),
    containers=_merged("name", **_CONTAINER),
    ephemeralContainers=_merged("name", **_CONTAINER),
    imagePullSecrets=_merged("name"),
    hostAliases=_merged("ip"),
    topologySpreadConstraints=_merged("topologyKey"),
    schedulingGates=_merged("name"),
    resourceClaims=_merged("name"),
)
_POD_STATUS: Final = _obj(
    conditions=_CONDITIONS, podIPs=_merged("ip"), hostIPs=_merged("ip"), resourceClaimStatuses=_merged("name")
)
_TEMPLATE: Final = _obj(metadata=_METADATA, spec=_POD_SPEC)
_WORKLOAD: Final[Schema] = {"spec": _obj(template=_TEMPLATE), "status": _obj(conditions=_CONDITIONS)}
_CONDITIONS_ONLY: Final[Schema] = {"status": _obj(conditions=_CONDITIONS)}

_KIND_SCHEMAS: Final[dict[str, Schema]] = {
    "Pod": {"spec": _POD_SPEC, "status": _POD_STATUS},
    "PodTemplate": {"template": _TEMPLATE},
    "Node": {"spec": _obj(podCIDRs=_merged()), "status": _obj(conditions=_CONDITIONS, addresses=_merged("type"))},
    "Service": {"spec": _obj(ports=_merged("port")), "status": _obj(conditions=_CONDITIONS)},
    "Namespace": _CONDITIONS_ONLY,
    "PersistentVolumeClaim": _CONDITIONS_ONLY,
    "ServiceAccount": {"secrets": _merged("name")},
    "HorizontalPodAutoscaler": _CONDITIONS_ONLY,
    "Deployment": _WORKLOAD,
    "ReplicaSet": _WORKLOAD,
    "StatefulSet": _WORKLOAD,
    "DaemonSet": _WORKLOAD,
    "ReplicationController": _WORKLOAD,
    "Job": _WORKLOAD,
    "CronJob": {"spec": _obj(jobTemplate=_obj(metadata=_METADATA, spec=_obj(template=_TEMPLATE)))},
    "MutatingWebhookConfiguration": {"webhooks": _merged("name")},
    "ValidatingWebhookConfiguration": {"webhooks": _merged("name")},
    **{
        kind: {}
        for kind in (
            "ConfigMap",
            "Secret",
            "Event",
            "Lease",
            "Role",
            "RoleBinding",
            "ClusterRole",
            "ClusterRoleBinding",
            "PriorityClass",
            "Binding",
            "Endpoints",
            "LimitRange",
            "ResourceQuota",
            "PodDisruptionBudget",
        )
    },
}


def schema_for_kind(kind: str) -> Schema | None:
    """Patch metadata of a built-in kind (``metadata`` included), or None for kinds without any (custom resources)."""
    schema = _KIND_SCHEMAS.get(kind)
    if schema is None:
        return None
    return {"metadata": _METADATA, **schema}


# ---------------------------------------------------------------------------------------------------------------------
# Strategic merge patch

_DIRECTIVE: Final = "$patch"
_RETAIN_KEYS: Final = "$retainKeys"
_SET_ORDER: Final = "$setElementOrder/"
_DELETE_PRIMITIVES: Final = "$deleteFromPrimitiveList/"


def strategic_merge_patch(
    target: dict[str, Any], patch: dict[str, Any], kind: str, *, copy_target: bool = True
) -> dict[str, Any]:
    """Apply a strategic merge patch using the upstream patch strategies and merge keys of ``kind``.

    A kind without built-in patch metadata (a custom resource) gets plain JSON merge patch semantics.
    ``copy_target=False`` shares untouched subtrees with ``target`` (see module doc).
    """
    if not isinstance(patch, dict):
        raise PatchError("strategic merge patch must be a JSON object")
    schema = schema_for_kind(kind)
    if schema is None:
        result = json_merge_patch(target, patch, copy_target=copy_target)
        assert isinstance(result, dict)
        return result
    base = target if isinstance(target, dict) else {}
    merged = _merge_map(copy_json(base) if copy_target else base, patch, schema)
    return merged if merged is not None else {}


def _merge_map(original: dict[str, Any], patch: Mapping[str, Any], schema: Schema) -> dict[str, Any] | None:
    """A new dict: ``original`` (never mutated) with ``patch`` merged in; ``None`` means the map is deleted.

    Values the patch does not touch are shared with ``original``; containers on patched paths are new.
    """
    original = dict(original)
    directive = patch.get(_DIRECTIVE)
    if directive is not None:
        if directive == "delete":
            return None
        if directive == "replace":
            return _merge_map({}, {k: v for k, v in patch.items() if k != _DIRECTIVE}, schema)
        if directive != "merge":
            raise PatchError(f"unknown patch type: {directive} in map")
    retain = patch.get(_RETAIN_KEYS)
    if retain is not None:
        if not isinstance(retain, list):
            raise PatchError("$retainKeys must be a list of field names")
        for key in [k for k in original if k not in retain]:
            del original[key]
    orders: dict[str, tuple[list[Any], list[Any]]] = {}
    for key, value in patch.items():
        if not key.startswith("$"):
            continue
        if key.startswith((_SET_ORDER, _DELETE_PRIMITIVES)) and not isinstance(value, list):
            raise PatchError(f"{key} must be a list")
        if key.startswith(_SET_ORDER):
            name = key[len(_SET_ORDER) :]
            current = original.get(name)
            orders[name] = (value, list(current) if isinstance(current, list) else [])
        elif key.startswith(_DELETE_PRIMITIVES):
            name = key[len(_DELETE_PRIMITIVES) :]
            current = original.get(name)
            if isinstance(current, list):
                original[name] = [item for item in current if not any(json_equal(item, d) for d in value)]
    for key, value in patch.items():
        if key.startswith("$"):
            continue
        meta = schema.get(key, _PLAIN)
        current = original.get(key)
        if value is None:
            original.pop(key, None)
        elif isinstance(value, dict):
            merged = _merge_map(current if isinstance(current, dict) else {}, value, meta.children)
            if merged is None:
                original.pop(key, None)
            else:
                original[key] = merged
        elif isinstance(value, list):
            original[key] = _merge_list(current if isinstance(current, list) else [], value, meta, key)
        else:
            original[key] = copy_json(value)
    for name, (order, server) in orders.items():
        current = original.get(name)
        if isinstance(current, list):
            original[name] = _apply_order(current, order, server, schema.get(name, _PLAIN).merge_key)
    return original


def _merge_list(original: list[Any], patch: list[Any], meta: FieldMeta, name: str) -> list[Any]:
    """Merge a list by its strategy: by merge key, as a set of primitives, or replaced wholesale."""
    directives = [item for item in patch if isinstance(item, dict) and len(item) == 1 and _DIRECTIVE in item]
    if directives:
        directive = directives[0][_DIRECTIVE]
        patch = [item for item in patch if not (isinstance(item, dict) and len(item) == 1 and _DIRECTIVE in item)]
        if directive == "replace":
            return _merge_list([], patch, meta, name)
        if directive != "merge":
            raise PatchError(f"unknown patch type: {directive} in list {name}")
    if not meta.merge:
        return [_fresh(item, meta) for item in patch]
    key = meta.merge_key
    result = list(original)
    if key is None:
        for item in patch:
            if not any(json_equal(item, existing) for existing in result):
                result.append(copy_json(item))
        return result
    for item in patch:
        if not isinstance(item, dict) or key not in item:
            raise PatchError(f"map: {item} does not contain declared merge key: {key}")
        position = next(
            (i for i, old in enumerate(result) if isinstance(old, dict) and json_equal(old.get(key), item[key])), None
        )
        if item.get(_DIRECTIVE) == "delete":
            if position is not None:
                del result[position]
            continue
        merged = _merge_map({} if position is None else result[position], item, meta.children)
        if position is None:
            if merged is not None:
                result.append(merged)
        elif merged is None:
            del result[position]
        else:
            result[position] = merged
    return result


def _fresh(item: Any, meta: FieldMeta) -> Any:
    """A patch list element copied into the result with its directives and nulls stripped."""
    if isinstance(item, dict):
        return _merge_map({}, item, meta.children) or {}
    return copy_json(item)


def _apply_order(merged: list[Any], order: list[Any], server: list[Any], key: str | None) -> list[Any]:
    """Reorder a merged list by ``$setElementOrder``: listed items in that order, interleaved with server-only items
    by their position in the server's list, as upstream's ``normalizeElementOrder`` does."""

    def ident(item: Any) -> Any:
        """The hashable identity of an element: its merge key value, or itself for primitives."""
        value = item.get(key) if key is not None and isinstance(item, dict) else item
        return repr(value) if isinstance(value, dict | list) else (type(value).__name__, value)

    rank = {ident(o): i for i, o in enumerate(order)}
    server_rank = {ident(item): i for i, item in enumerate(server)}
    listed = sorted((m for m in merged if ident(m) in rank), key=lambda m: rank[ident(m)])
    server_only = [m for m in merged if ident(m) not in rank]
    result: list[Any] = []
    i = j = 0
    while i < len(server_only) or j < len(listed):
        if j >= len(listed):
            result.append(server_only[i])
            i += 1
        elif i < len(server_only):
            left, right = server_rank.get(ident(server_only[i])), server_rank.get(ident(listed[j]))
            if left is not None and right is not None and left < right:
                result.append(server_only[i])
                i += 1
            else:
                result.append(listed[j])
                j += 1
        else:
            result.append(listed[j])
            j += 1
    return result

"""The three PATCH body formats the API server accepts: JSON merge patch, JSON patch and strategic merge patch.

Clients pick the format with the request Content-Type (apiserver-notes §2.5). kubectl apply and kubernetes-asyncio
send strategic merge patches for built-in kinds, so lists such as ``status.conditions`` or ``spec.containers`` must
merge by their upstream merge keys, or a kubelet's status patch would wipe every other condition. All functions
here are pure: they never mutate their inputs and return a new document.

By default a result shares no containers with either input. The merge patches also take ``copy_target=False``,
for the server's write path: the result is then built copy-on-write, sharing every subtree the patch does not touch
with ``target`` (never anything with the patch). That is safe only because stored objects are immutable by
convention, and it turns an O(object) deep copy per status patch into O(patched paths).
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any, Final

__all__ = [
    "PatchError",
    "PatchTestFailed",
    "copy_json",
    "json_merge_patch",
    "json_patch",
    "strategic_merge_patch",
]


class PatchError(ValueError):
    """A malformed patch or one that cannot apply to the target (the server answers 400 or 422)."""


class PatchTestFailed(PatchError):
    """A JSON patch ``test`` operation found a different value (the server answers 422)."""


# ---------------------------------------------------------------------------------------------------------------------
# RFC 7386 JSON merge patch


_CANONICAL: dict[str, str] = {}
_CANONICAL_LIMIT: Final = 1 << 16
_CANONICAL_MAX_LEN: Final = 64


def _canonical(text: str) -> str:
    """One shared instance per distinct short string (keys such as ``"containerPort"``, values such as ``"True"``).

    A bounded table rather than ``sys.intern``: unique values (uids, names) pass through it too, and interned
    strings are immortal on some Python versions. When the table fills up it starts over; objects already stored
    keep their strings, and common ones are shared again from their next occurrence.
    """
    if len(text) > _CANONICAL_MAX_LEN:
        return text
    if len(_CANONICAL) >= _CANONICAL_LIMIT:
        _CANONICAL.clear()
    _CANONICAL[text] = text
    return text


def copy_json(value: Any) -> Any:
    """A deep copy of a JSON value: new dicts and lists, scalars shared, short strings canonicalised.

    Several times faster than ``copy.deepcopy`` and faster than a JSON round trip. Canonical strings matter for
    memory: every decoded request body brings its own copies of ``"metadata"``, ``"containerPort"``, ``"True"``
    and the like, and at 50,000 stored pods those duplicates would be a third of the objects' size.
    """
    kind = type(value)
    if kind is dict:
        out: dict[Any, Any] = {}
        canon = _CANONICAL.get
        for key, item in value.items():
            kind = type(item)
            if kind is str:
                item = canon(item) or _canonical(item)
            elif kind is dict or kind is list:
                item = copy_json(item)
            out[(canon(key) or _canonical(key)) if type(key) is str else key] = item
        return out
    if kind is list:
        result: list[Any] = []
        canon = _CANONICAL.get
        for item in value:
            kind = type(item)
            if kind is str:
                item = canon(item) or _canonical(item)
            elif kind is dict or kind is list:
                item = copy_json(item)
            result.append(item)
        return result
    if kind is str:
        return _CANONICAL.get(value) or _canonical(value)
    return value


def json_merge_patch(target: Any, patch: Any, *, copy_target: bool = True) -> Any:
    """Apply an RFC 7386 merge patch: objects merge recursively, ``null`` deletes a key, anything else replaces.

    The result shares no containers with either input, so callers may mutate it freely; with
    ``copy_target=False`` it shares the subtrees the patch leaves untouched with ``target`` (see module doc).
    """
    if not isinstance(patch, dict):
        return copy_json(patch)
    base = target if isinstance(target, dict) else {}
    return _merge_into(copy_json(base) if copy_target else base, patch)


def _merge_into(original: dict[str, Any], patch: dict[str, Any]) -> dict[str, Any]:
    """A new dict: ``original`` (never mutated) with ``patch`` merged in; untouched values are shared."""
    result = dict(original)
    for key, value in patch.items():
        if value is None:
            result.pop(key, None)
        elif isinstance(value, dict):
            current = result.get(key)
            result[key] = _merge_into(current if isinstance(current, dict) else {}, value)
        else:
            result[key] = copy_json(value)
    return result


# ---------------------------------------------------------------------------------------------------------------------
# RFC 6902 JSON patch


def _parse_pointer(pointer: Any) -> list[str]:
    """Split an RFC 6901 JSON pointer into unescaped reference tokens."""
    if not isinstance(pointer, str):
        raise PatchError(f"invalid JSON pointer: {pointer!r}")
    if pointer == "":
        return []
    if not pointer.startswith("/"):
        raise PatchError(f'invalid JSON pointer "{pointer}": must start with "/"')
    return [token.replace("~1", "/").replace("~0", "~") for token in pointer[1:].split("/")]


def _array_index(token: str, length: int, *, allow_end: bool) -> int:
    """Resolve an array reference token; ``-`` means the end (only where adding)."""
    if token == "-" and allow_end:
        return length
    if not token.isdigit() or (len(token) > 1 and token[0] == "0"):
        raise PatchError(f"invalid array index: {token!r}")
    index = int(token)
    if index > length or (index == length and not allow_end):
        raise PatchError(f"array index out of bounds: {index}")
    return index


def _resolve_parent(doc: Any, tokens: list[str], pointer: str) -> Any:
    """The container holding the last token of ``pointer``; every step must exist."""
    node = doc
    for token in tokens[:-1]:
        if isinstance(node, dict):
            if token not in node:
                raise PatchError(f'path "{pointer}" does not exist')
            node = node[token]
        elif isinstance(node, list):
            node = node[_array_index(token, len(node), allow_end=False)]
        else:
            raise PatchError(f'path "{pointer}" does not exist')
    return node


def _get(doc: Any, pointer: str) -> Any:
    """The value at ``pointer``; missing paths are errors."""
    tokens = _parse_pointer(pointer)
    if not tokens:
        return doc
    parent = _resolve_parent(doc, tokens, pointer)
    last = tokens[-1]
    if isinstance(parent, dict):
        if last not in parent:
            raise PatchError(f'path "{pointer}" does not exist')
        return parent[last]
    if isinstance(parent, list):
        return parent[_array_index(last, len(parent), allow_end=False)]
    raise PatchError(f'path "{pointer}" does not exist')


def _add(doc: Any, pointer: str, value: Any) -> Any:
    """Insert ``value`` at ``pointer`` (replacing an object member, shifting array elements)."""
    tokens = _parse_pointer(pointer)
    if not tokens:
        return value
    parent = _resolve_parent(doc, tokens, pointer)
    last = tokens[-1]
    if isinstance(parent, dict):
        parent[last] = value
    elif isinstance(parent, list):
        parent.insert(_array_index(last, len(parent), allow_end=True), value)
    else:
        raise PatchError(f'path "{pointer}" does not exist')
    return doc


def _remove(doc: Any, pointer: str) -> tuple[Any, Any]:
    """Remove the value at ``pointer``; returns the new document and the removed value."""
    tokens = _parse_pointer(pointer)
    if not tokens:
        return None, doc
    parent = _resolve_parent(doc, tokens, pointer)
    last = tokens[-1]
    if isinstance(parent, dict):
        if last not in parent:
            raise PatchError(f'path "{pointer}" does not exist')
        return doc, parent.pop(last)
    if isinstance(parent, list):
        return doc, parent.pop(_array_index(last, len(parent), allow_end=False))
    raise PatchError(f'path "{pointer}" does not exist')


def _json_equal(left: Any, right: Any) -> bool:
    """JSON value equality, which (unlike Python's) keeps booleans apart from numbers."""
    if isinstance(left, bool) or isinstance(right, bool):
        return isinstance(left, bool) and isinstance(right, bool) and left == right
    if isinstance(left, dict) and isinstance(right, dict):
        return left.keys() == right.keys() and all(_json_equal(v, right[k]) for k, v in left.items())
    if isinstance(left, list) and isinstance(right, list):
        return len(left) == len(right) and all(_json_equal(a, b) for a, b in zip(left, right, strict=True))
    if isinstance(left, int | float) and isinstance(right, int | float):
        return left == right
    return type(left) is type(right) and bool(left == right)


def _member(op: Mapping[str, Any], name: str) -> Any:
    """A required member of an operation object."""
    if name not in op:
        raise PatchError(f'operation "{op.get("op")}" is missing required member "{name}"')
    return op[name]


def json_patch(target: Any, ops: Any) -> Any:
    """Apply an RFC 6902 JSON patch atomically: either every operation applies or a ``PatchError`` is raised."""
    if not isinstance(ops, list):
        raise PatchError("json patch must be a JSON array of operations")
    doc = copy_json(target)
    for op in ops:
        if not isinstance(op, dict):
            raise PatchError("json patch operations must be JSON objects")
        kind = op.get("op")
        path = _member(op, "path")
        if kind == "add":
            doc = _add(doc, path, copy_json(_member(op, "value")))
        elif kind == "remove":
            doc, _ = _remove(doc, path)
        elif kind == "replace":
            _get(doc, path)
            doc, _ = _remove(doc, path)
            doc = _add(doc, path, copy_json(_member(op, "value")))
        elif kind == "move":
            source = _member(op, "from")
            if path != source and path.startswith(source + "/"):
                raise PatchError(f'cannot move "{source}" into its own child "{path}"')
            doc, value = _remove(doc, source)
            doc = _add(doc, path, value)
        elif kind == "copy":
            doc = _add(doc, path, copy_json(_get(doc, _member(op, "from"))))
        elif kind == "test":
            expected = _member(op, "value")
            if not _json_equal(_get(doc, path), expected):
                raise PatchTestFailed(f'testing value at "{path}" failed')
        else:
            raise PatchError(f"unexpected json patch operation: {kind!r}")
    return doc


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
                original[name] = [item for item in current if not any(_json_equal(item, d) for d in value)]
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
            if not any(_json_equal(item, existing) for existing in result):
                result.append(copy_json(item))
        return result
    for item in patch:
        if not isinstance(item, dict) or key not in item:
            raise PatchError(f"map: {item} does not contain declared merge key: {key}")
        position = next(
            (i for i, old in enumerate(result) if isinstance(old, dict) and _json_equal(old.get(key), item[key])), None
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

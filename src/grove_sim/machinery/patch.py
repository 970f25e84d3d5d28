"""JSON merge patch and JSON patch (strategic merge patch is ``grove_sim.machinery.strategic_patch``), and the
canonical deep copy of JSON documents the server stores.

Clients pick the PATCH format with the request Content-Type (apiserver-notes §2.5). All functions here are pure:
they never mutate their inputs and return a new document.

By default a result shares no containers with either input. The merge patches also take ``copy_target=False``,
for the server's write path: the result is then built copy-on-write, sharing every subtree the patch does not touch
with ``target`` (never anything with the patch). That is safe only because stored objects are immutable by
convention, and it turns an O(object) deep copy per status patch into O(patched paths).
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any, Final

__all__ = ["PatchError", "PatchTestFailed", "copy_json", "json_equal", "json_merge_patch", "json_patch"]


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


def json_equal(left: Any, right: Any) -> bool:
    """JSON value equality, which (unlike Python's) keeps booleans apart from numbers."""
    if isinstance(left, bool) or isinstance(right, bool):
        return isinstance(left, bool) and isinstance(right, bool) and left == right
    if isinstance(left, dict) and isinstance(right, dict):
        return left.keys() == right.keys() and all(json_equal(v, right[k]) for k, v in left.items())
    if isinstance(left, list) and isinstance(right, list):
        return len(left) == len(right) and all(json_equal(a, b) for a, b in zip(left, right, strict=True))
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
            if not json_equal(_get(doc, path), expected):
                raise PatchTestFailed(f'testing value at "{path}" failed')
        else:
            raise PatchError(f"unexpected json patch operation: {kind!r}")
    return doc

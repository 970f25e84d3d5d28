"""``ObjectMeta`` validation, as ``apimachinery/pkg/api/validation`` and core's ``ValidateObjectMeta`` do it.

Every object a client writes goes through this: ``generateName`` and ``name`` against the kind's name rule (a
DNS-1123 subdomain for most kinds, a DNS-1123 label for namespaces, a DNS-1035 label for services, a path segment
for RBAC objects), label keys and values, annotation keys and their total size, owner references and finalizers.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any, Final

from grove_sim.validation.field import (
    Cause,
    changed_keys,
    get_list,
    get_str,
    get_str_map,
    invalid,
    required,
    too_long,
    type_error,
)
from grove_sim.validation.names import (
    DNS1035_LABEL,
    DNS1123_LABEL,
    DNS1123_SUBDOMAIN,
    LABEL_VALUE,
    QUALIFIED_NAME,
    StringFormat,
)

__all__ = [
    "ANNOTATIONS_SIZE_LIMIT",
    "DNS1035_NAMES",
    "LABEL_NAMES",
    "PATH_SEGMENT_NAMES",
    "SUBDOMAIN_NAMES",
    "NameRule",
    "validate_labels",
    "validate_object_meta",
]

ANNOTATIONS_SIZE_LIMIT: Final = 256 * 1024
"""``TotalAnnotationSizeLimitB``: keys and values together, in bytes."""

_STANDARD_FINALIZERS: Final = frozenset({"kubernetes", "orphan", "foregroundDeletion"})
_BANNED_OWNERS: Final = frozenset({("", "v1", "Event")})


def _mask_trailing_dash(name: str) -> str:
    """Upstream's ``maskTrailingDash``: a generateName may end in '-' (its last two characters become 'a')."""
    return name[:-2] + "a" if len(name) > 1 and name.endswith("-") else name


class NameRule:
    """A kind's rule for object names (upstream's ``ValidateNameFunc``): ``errors(name, prefix)`` and, for the
    create path, ``valid``: names already known to pass (a subset, so a miss only means "ask ``errors``")."""

    __slots__ = ("_explain", "valid")

    def __init__(self, valid: set[str], explain: Callable[[str, bool], list[str]]) -> None:
        self.valid = valid
        self._explain = explain

    def errors(self, name: str, prefix: bool) -> list[str]:
        """Upstream's messages for a name, or for a ``generateName`` prefix."""
        return self._explain(name, prefix)


def _format_rule(format_: StringFormat) -> NameRule:
    return NameRule(format_.valid, lambda name, prefix: format_.errors(_mask_trailing_dash(name) if prefix else name))


def _path_segment(name: str, prefix: bool) -> list[str]:
    if not prefix and name in (".", ".."):
        return [f"may not be '{name}'"]
    return [f"may not contain '{bad}'" for bad in ("/", "%") if bad in name]


SUBDOMAIN_NAMES: Final = _format_rule(DNS1123_SUBDOMAIN)
"""``NameIsDNSSubdomain``: pods, configmaps, secrets, nodes and most other kinds."""
LABEL_NAMES: Final = _format_rule(DNS1123_LABEL)
"""``NameIsDNSLabel``: namespaces."""
DNS1035_NAMES: Final = _format_rule(DNS1035_LABEL)
"""``NameIsDNS1035Label``: services."""
PATH_SEGMENT_NAMES: Final = NameRule(DNS1123_SUBDOMAIN.valid, _path_segment)
"""``path.IsValidPathSegmentName``: RBAC names, where ``system:node`` is fine (every subdomain is a fine segment)."""


def validate_labels(labels: dict[str, str], path: str) -> list[Cause]:
    """``ValidateLabels``: every key a qualified name, every value a label value (errors name the map's path)."""
    causes: list[Cause] = []
    keys, values = QUALIFIED_NAME.valid, LABEL_VALUE.valid
    for key, value in labels.items():
        if key.__class__ is not str or key not in keys:
            causes += [invalid(path, key, m) for m in QUALIFIED_NAME.errors(str(key))]
        if value.__class__ is not str or value not in values:
            if value is not None and value.__class__ is not str:
                raise type_error(path, value, "string")
            causes += [invalid(path, value or "", m) for m in LABEL_VALUE.errors(value or "")]
    return causes


def _annotations(annotations: dict[str, str], path: str) -> list[Cause]:
    causes: list[Cause] = []
    size = 0
    keys = QUALIFIED_NAME.valid
    for key, value in annotations.items():
        if key not in keys:
            causes += [invalid(path, key, m) for m in QUALIFIED_NAME.errors(key.lower())]
        size += len(key) + len(value or "")
    if size > ANNOTATIONS_SIZE_LIMIT // 4:
        size = sum(len(k.encode()) + len((v or "").encode()) for k, v in annotations.items())
        if size > ANNOTATIONS_SIZE_LIMIT:
            causes.append(too_long(path, ANNOTATIONS_SIZE_LIMIT))
    return causes


def _group_version(api_version: str) -> tuple[str, str] | None:
    """``schema.ParseGroupVersion``: ("", "v1"), ("apps", "v1"); None when malformed."""
    if not api_version:
        return ("", "")
    parts = api_version.split("/")
    if len(parts) == 1:
        return ("", parts[0])
    return (parts[0], parts[1]) if len(parts) == 2 else None


def _go_owner_reference(ref: dict[str, Any]) -> dict[str, Any]:
    """An owner reference in ``metav1.OwnerReference`` field order, empty optional fields left out."""
    keys = ("apiVersion", "kind", "name", "uid", "controller", "blockOwnerDeletion")
    return {k: ref.get(k, "") for k in keys[:4]} | {k: ref[k] for k in keys[4:] if ref.get(k) is not None}


def _plain_owner_reference(ref: dict[str, Any]) -> bool:
    """A reference with every required field set, a ``group/version`` or ``version``, and no banned kind."""
    api_version, kind = ref.get("apiVersion"), ref.get("kind")
    return (
        api_version.__class__ is str
        and api_version.count("/") <= 1
        and not api_version.endswith("/")
        and kind.__class__ is str
        and kind not in ("", "Event")
        and ref.get("name").__class__ is str
        and ref.get("uid").__class__ is str
        and bool(api_version and ref["name"] and ref["uid"])
    )


def _owner_references(refs: list[dict[str, Any]], path: str) -> list[Cause]:
    if sum(1 for r in refs if r.get("controller") is True) <= 1 and all(_plain_owner_reference(r) for r in refs):
        return []
    causes: list[Cause] = []
    controller = ""
    for ref in refs:
        api_version = get_str(ref, "apiVersion", path)
        kind = get_str(ref, "kind", path)
        group, version = _group_version(api_version) or ("", "")
        if not version:
            causes.append(invalid(f"{path}.apiVersion", api_version, "version must not be empty"))
        if not kind:
            causes.append(invalid(f"{path}.kind", kind, "must not be empty"))
        for key in ("name", "uid"):
            if not get_str(ref, key, path):
                causes.append(invalid(f"{path}.{key}", "", "must not be empty"))
        if (group, version, kind) in _BANNED_OWNERS:
            detail = f"{group}/{version}, Kind={kind} is disallowed from being an owner"
            causes.append(invalid(path, _go_owner_reference(ref), detail))
        if ref.get("controller") is True:
            current = f"{kind}/{ref.get('name', '')}"
            if controller:
                detail = (
                    'Only one reference can have Controller set to true. Found "true" in references for '
                    f"{controller} and {current}"
                )
                causes.append(invalid(path, [_go_owner_reference(r) for r in refs], detail))
            else:
                controller = current
    return causes


def _finalizers(finalizers: list[str], path: str, *, builtin: bool) -> list[Cause]:
    causes: list[Cause] = []
    for index, name in enumerate(finalizers):
        causes += [invalid(path, name, m) for m in QUALIFIED_NAME.errors(name)]
        if builtin and "/" not in name and name not in _STANDARD_FINALIZERS:
            detail = "name is neither a standard finalizer name nor is it fully qualified"
            causes.append(invalid(f"{path}[{index}]", name, detail))
    if "orphan" in finalizers and "foregroundDeletion" in finalizers:
        causes.append(invalid(path, finalizers, "finalizer orphan and foregroundDeletion cannot be both set"))
    return causes


def validate_object_meta(
    meta: dict[str, Any], names: NameRule, *, builtin: bool, old: dict[str, Any] | None = None
) -> list[Cause]:
    """``ValidateObjectMeta`` after name generation; ``builtin`` adds core's finalizer-name rule. On update (``old``
    the stored metadata, valid when stored) only what changed is checked again."""
    if old is not None and not (
        {"generateName", "name", "labels", "annotations", "ownerReferences", "finalizers"} & changed_keys(meta, old)
    ):
        return []
    causes: list[Cause] = []
    generate_name = get_str(meta, "generateName", "metadata")
    if generate_name:
        causes += [invalid("metadata.generateName", generate_name, m) for m in names.errors(generate_name, True)]
    name = meta.get("name")
    if name.__class__ is not str or name not in names.valid:
        name = get_str(meta, "name", "metadata")
        if not name:
            causes.append(required("metadata.name", "name or generateName is required"))
        else:
            causes += [invalid("metadata.name", name, m) for m in names.errors(name, False)]
    labels = meta.get("labels")
    if labels:
        if labels.__class__ is not dict:
            raise type_error("metadata.labels", labels, "map[string]string")
        causes += validate_labels(labels, "metadata.labels")
    annotations = meta.get("annotations")
    if annotations:
        causes += _annotations(get_str_map(meta, "annotations", "metadata"), "metadata.annotations")
    refs = meta.get("ownerReferences")
    if refs:
        causes += _owner_references(get_list(meta, "ownerReferences", "metadata"), "metadata.ownerReferences")
    finalizers = meta.get("finalizers")
    if finalizers:
        causes += _finalizers(get_list(meta, "finalizers", "metadata", str), "metadata.finalizers", builtin=builtin)
    return causes

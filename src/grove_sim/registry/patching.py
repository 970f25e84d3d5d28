"""The PATCH media types the server accepts and the document a patch of each type produces.

Clients pick the format with the request Content-Type (apiserver-notes §2.5): JSON patch for any kind, merge patch
and server-side apply (treated as a merge) for any kind, strategic merge patch for built-in kinds only (custom
resources answer 415). A patch that carries ``metadata.resourceVersion`` is a precondition (409 when stale).
"""

from __future__ import annotations

from typing import Any, Final

from grove_sim.machinery import errors
from grove_sim.machinery.patch import (
    PatchError,
    PatchTestFailed,
    json_merge_patch,
    json_patch,
)
from grove_sim.machinery.strategic_patch import strategic_merge_patch
from grove_sim.registry.resources import ResourceInfo

__all__ = [
    "APPLY",
    "CUSTOM_RESOURCE_PATCH_TYPES",
    "JSON_PATCH",
    "MERGE_PATCH",
    "PATCH_TYPES",
    "STRATEGIC_PATCH",
    "patched_object",
]

MERGE_PATCH: Final = "application/merge-patch+json"
STRATEGIC_PATCH: Final = "application/strategic-merge-patch+json"
JSON_PATCH: Final = "application/json-patch+json"
APPLY: Final = "application/apply-patch+yaml"
PATCH_TYPES: Final = (JSON_PATCH, MERGE_PATCH, APPLY, STRATEGIC_PATCH)
CUSTOM_RESOURCE_PATCH_TYPES: Final = (JSON_PATCH, MERGE_PATCH, APPLY)


def patched_object(info: ResourceInfo, current: dict[str, Any], content_type: str, patch: Any) -> dict[str, Any]:
    """``current`` with ``patch`` applied (not stored), the patch's resourceVersion precondition checked.

    Built-in kinds share untouched subtrees with ``current`` (copy-on-write); custom resources get a full copy,
    because their schema defaults and prunes in place.
    """
    name = str(current["metadata"]["name"])
    try:
        if content_type == JSON_PATCH:
            patched = json_patch(current, patch)
        elif not isinstance(patch, dict):
            raise errors.bad_request("the body of the request must be a JSON object")
        elif content_type == STRATEGIC_PATCH or (content_type == APPLY and not info.custom):
            patched = strategic_merge_patch(current, patch, info.kind, copy_target=info.custom)
        else:
            patched = json_merge_patch(current, patch, copy_target=info.custom)
    except PatchTestFailed as exc:
        raise errors.invalid(info.kind, info.group, name, [("", "FieldValueInvalid", str(exc))]) from exc
    except PatchError as exc:
        raise errors.ApiError(422, "Invalid", str(exc)) from exc
    if not isinstance(patched, dict):
        raise errors.bad_request("the patched object must be a JSON object")
    meta = patched.get("metadata")
    if not isinstance(meta, dict):
        raise errors.bad_request("metadata must be an object")
    rv = meta.get("resourceVersion")
    if rv and rv != current["metadata"]["resourceVersion"]:
        raise errors.conflict(info.group, info.plural, name)
    return patched

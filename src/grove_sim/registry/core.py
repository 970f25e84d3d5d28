"""The write pipeline of the simulated apiserver: create, update, patch and delete with the real semantics.

HTTP handlers and the in-process controllers (garbage collector, namespace controller, kubelet, token controller)
both call ``Core``, so an object changes the same way whoever changes it: optimistic concurrency on
resourceVersion, generation bumps only on spec changes, status and main resource separated, no-op writes that
neither bump the resourceVersion nor emit events, finalizers and ``deletionTimestamp``, graceful pod deletion, and
CRDs that register their kinds the moment they are stored. Subresources (binding, scale, finalize) live in
``grove_sim.registry.subresources``; this module owns only the generic verbs.

Each verb is written once, as a generator (``*_steps``) that stops at the admission points
(``grove_sim.registry.steps``) for the HTTP layer to call admission webhooks there; ``create``/``update``/
``replace``/``patch``/``delete`` run it to the end at once (controllers, subresources).
"""

from __future__ import annotations

import random
import string
import time
from collections.abc import Callable, Iterator
from typing import Any, TypeVar, cast

from grove_sim.machinery import errors
from grove_sim.machinery.patch import copy_json
from grove_sim.registry import admission
from grove_sim.registry.patching import APPLY, CUSTOM_RESOURCE_PATCH_TYPES, patched_object
from grove_sim.registry.resources import Registry, ResourceInfo, infos_from_crd
from grove_sim.registry.steps import CREATE, DELETE, MUTATING, UPDATE, VALIDATING, AdmissionPoint, Stale, Steps, ran
from grove_sim.registry.templates import PodTemplates
from grove_sim.schema.structural import SchemaError
from grove_sim.storage.store import ResourceKey, Store

__all__ = ["Core", "clone", "now_rfc3339"]

_SERVER_META = (
    "uid",
    "resourceVersion",
    "creationTimestamp",
    "deletionTimestamp",
    "deletionGracePeriodSeconds",
    "generation",
    "selfLink",
)
_NAMESPACES = ("", "namespaces")
_PODS = ("", "pods")
_CRDS = ("apiextensions.k8s.io", "customresourcedefinitions")


T = TypeVar("T")


def clone(obj: T) -> T:
    """A deep copy of a JSON document with canonical short strings (see ``grove_sim.machinery.patch.copy_json``)."""
    return cast(T, copy_json(obj))


def now_rfc3339(offset: float = 0.0) -> str:
    """UTC time with seconds precision, as metav1.Time serialises."""
    return time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime(time.time() + offset))


def _meta(obj: dict[str, Any]) -> dict[str, Any]:
    meta = obj.get("metadata")
    if not isinstance(meta, dict):
        raise errors.bad_request("metadata must be an object")
    return meta


def _spec_changed(old: dict[str, Any], new: dict[str, Any], *, status_counts: bool) -> bool:
    skip = {"metadata"} if status_counts else {"metadata", "status"}
    return {k: v for k, v in old.items() if k not in skip} != {k: v for k, v in new.items() if k not in skip}


class Core:
    """Generic verbs over the store for every served resource."""

    def __init__(self, store: Store, registry: Registry) -> None:
        self.store = store
        self.registry = registry
        self._service_ips = [0]
        self._templates = PodTemplates()
        self.computed: dict[ResourceKey, Callable[[str | None], list[dict[str, Any]]]] = {}
        """Read-only resources whose objects are computed on read, never stored (the metrics API)."""

    # ----------------------------------------------------------------------------------------------------- reads

    def get(self, info: ResourceInfo, namespace: str, name: str) -> dict[str, Any]:
        """The stored (or computed) object or 404."""
        obj = self.store.get(info.key, namespace if info.namespaced else "", name)
        if obj is None:
            source = self.computed.get(info.key)
            found = [o for o in source(namespace or None) if o["metadata"]["name"] == name] if source else []
            if not found:
                raise errors.not_found(info.group, info.plural, name)
            obj = found[0]
        return obj

    def list_objects(self, info: ResourceInfo, namespace: str | None) -> list[dict[str, Any]]:
        """The objects of a collection (``namespace=None``: all), stored or computed, by (namespace, name)."""
        source = self.computed.get(info.key)
        return source(namespace) if source is not None else self.store.list(info.key, namespace)

    def objects_after(
        self, info: ResourceInfo, namespace: str | None, start: tuple[str, str] | None
    ) -> tuple[Iterator[dict[str, Any]], int]:
        """`list_objects` from just after `start` (a continue token's last key), lazily, and how many: a page of a
        stored collection costs its own objects, not the collection's."""
        source = self.computed.get(info.key)
        if source is None:
            return self.store.after(info.key, namespace, start)
        rest = [o for o in source(namespace) if start is None or _key_of(o) > start]
        return iter(rest), len(rest)

    def check_namespace(self, info: ResourceInfo, namespace: str, name: str) -> None:
        """404 when the namespace is missing, 403 when it is terminating (for creates)."""
        ns = self.store.get(_NAMESPACES, "", namespace)
        if ns is None:
            raise errors.not_found("", "namespaces", namespace)
        if (ns.get("status") or {}).get("phase") == "Terminating" or ns["metadata"].get("deletionTimestamp"):
            why = f"unable to create new content in namespace {namespace} because it is being terminated"
            raise errors.forbidden(info.group, info.plural, name, why)

    # ---------------------------------------------------------------------------------------------------- create

    def create_steps(
        self, info: ResourceInfo, namespace: str, body: Any, *, dry_run: bool = False, strict: bool = False
    ) -> Steps[dict[str, Any]]:
        """Create an object (POST); returns the stored object (a copy of ``body``, never ``body`` itself)."""
        if not isinstance(body, dict):
            raise errors.bad_request("the body of the request must be a JSON object")
        template, template_key = self._templates.lookup(body.get("spec")) if info.key == _PODS else (None, None)
        if template is None:
            obj = clone(body)
        else:
            obj = {key: template if key == "spec" else clone(value) for key, value in body.items()}
        self._check_type(info, obj)
        meta = obj.setdefault("metadata", {})
        if not isinstance(meta, dict):
            raise errors.bad_request("metadata must be an object")
        if info.namespaced:
            if meta.get("namespace") and meta["namespace"] != namespace:
                raise errors.bad_request(
                    "the namespace of the provided object does not match the namespace sent on the request"
                )
            meta["namespace"] = namespace
        else:
            meta.pop("namespace", None)
        generated = not meta.get("name") and bool(meta.get("generateName"))
        if generated:
            meta["name"] = self._generate_name(info, namespace, str(meta["generateName"]))
        name = str(meta.get("name") or "")
        if info.namespaced:
            self.check_namespace(info, namespace, name)
        if template is None:
            admission.apply_defaults(info.key, obj)
        mutated = yield AdmissionPoint(
            MUTATING, CREATE, info, namespace, "" if generated else name, None, obj, None, dry_run
        )
        if mutated is not None:
            # A webhook changed the object: it is validated in full and its spec is never shared as a template.
            obj, template, template_key = mutated, None, None
            admission.apply_defaults(info.key, obj)
        written = obj.get("spec") if template is None and template_key is not None else None
        meta = _meta(obj)
        meta["name"] = name
        if info.namespaced:
            meta["namespace"] = namespace
        for field in _SERVER_META:
            meta.pop(field, None)
        meta["uid"] = admission.new_uid()
        meta["creationTimestamp"] = now_rfc3339()
        if info.has_generation:
            meta["generation"] = 1
        if info.custom and info.has_status:
            obj.pop("status", None)
        admission.prepare_create(info, obj, meta["creationTimestamp"], self._service_ips)
        self._validate(info, obj, None, strict=strict, admitted_spec=template is not None)
        yield AdmissionPoint(VALIDATING, CREATE, info, namespace, name, None, obj, None, dry_run)
        if isinstance(written, dict) and template_key is not None:
            self._templates.remember(template_key, written, obj["spec"])
        if self.store.get(info.key, meta.get("namespace", ""), name) is not None:
            raise errors.already_exists(info.group, info.plural, name)
        if dry_run:
            return obj
        self.store.put(info.key, obj, None)
        if info.key == _CRDS:
            self.registry.register_crd(obj)
        return obj

    def _generate_name(self, info: ResourceInfo, namespace: str, base: str) -> str:
        alphabet = string.ascii_lowercase + string.digits
        base = base[:58]
        for _ in range(8):
            name = base + "".join(random.choices(alphabet, k=5))
            if self.store.get(info.key, namespace if info.namespaced else "", name) is None:
                return name
        raise errors.already_exists(info.group, info.plural, base)

    def _check_type(self, info: ResourceInfo, obj: dict[str, Any]) -> None:
        kind = obj.get("kind")
        if kind and kind != info.kind:
            raise errors.bad_request(f"the kind in the data ({kind}) does not match the expected kind ({info.kind})")
        obj["kind"] = info.kind
        obj["apiVersion"] = info.group_version

    def _validate(
        self,
        info: ResourceInfo,
        obj: dict[str, Any],
        old: dict[str, Any] | None,
        *,
        strict: bool,
        causes: list[admission.Cause] | None = None,
        admitted_spec: bool = False,
    ) -> None:
        """Raise the 422 (or 400) kube-apiserver would answer for ``obj``, after any ``causes`` found already."""
        name = str(obj["metadata"].get("name", ""))
        causes = (causes or []) + admission.validation_causes(info, obj, old, admitted_spec=admitted_spec)
        if info.custom:
            cr_causes, pruned = admission.custom_resource_causes(info, obj, old)
            if pruned and strict:
                fields = ", ".join(f'unknown field "{p}"' for p in pruned)
                raise errors.bad_request(f"strict decoding error: {fields}")
            causes += cr_causes
        if info.key == _CRDS and not causes:
            try:
                infos_from_crd(obj)
            except (SchemaError, ValueError) as exc:
                causes.append(("spec.versions[0].schema.openAPIV3Schema", "FieldValueInvalid", f"Invalid value: {exc}"))
        if causes:
            raise errors.invalid(info.kind, info.group, name, causes)

    # ---------------------------------------------------------------------------------------------------- update

    def update_steps(
        self,
        info: ResourceInfo,
        namespace: str,
        name: str,
        body: Any,
        *,
        subresource: str | None = None,
        dry_run: bool = False,
        strict: bool = False,
    ) -> Steps[dict[str, Any]]:
        """Replace an object (PUT), honouring a ``metadata.resourceVersion`` precondition (409 when stale)."""
        if not isinstance(body, dict):
            raise errors.bad_request("the body of the request must be a JSON object")
        old = self.get(info, namespace, name)
        new = clone(body)
        meta = new.setdefault("metadata", {})
        if meta.get("name") and meta["name"] != name:
            raise errors.bad_request(
                f"the name of the object ({meta['name']}) does not match the name on the URL ({name})"
            )
        rv = meta.get("resourceVersion")
        if rv and rv != old["metadata"]["resourceVersion"]:
            raise errors.conflict(info.group, info.plural, name)
        return (yield from self.replace_steps(info, old, new, subresource=subresource, dry_run=dry_run, strict=strict))

    @staticmethod
    def _keep_server_fields(
        info: ResourceInfo, old: dict[str, Any], new: dict[str, Any], subresource: str | None
    ) -> None:
        """What a write may not change: identity, server-owned metadata and, on the main resource, the status."""
        old_meta = old["metadata"]
        new["kind"], new["apiVersion"] = old["kind"], old["apiVersion"]
        meta = new["metadata"] = dict(_meta(new))
        for field in (
            "name", "namespace", "uid", "creationTimestamp", "deletionTimestamp", "deletionGracePeriodSeconds",
            "generation",
        ):  # fmt: skip
            if field in old_meta:
                meta[field] = old_meta[field]
            else:
                meta.pop(field, None)
        meta["resourceVersion"] = old_meta["resourceVersion"]
        if subresource is None and info.has_status:
            if "status" in old:
                new["status"] = old["status"]
            else:
                new.pop("status", None)
        if info.key == _NAMESPACES and subresource != "finalize":
            new["spec"] = old.get("spec", {})

    def replace_steps(
        self,
        info: ResourceInfo,
        old: dict[str, Any],
        new: dict[str, Any],
        *,
        subresource: str | None = None,
        dry_run: bool = False,
        strict: bool = False,
    ) -> Steps[dict[str, Any]]:
        """Store ``new`` in place of ``old`` with every update rule applied.

        ``new``'s top-level dict is owned by the caller; its subtrees may be shared with ``old`` (copy-on-write
        patches), so only the top level and a fresh copy of ``metadata`` are ever modified here.
        """
        written_before = self.store.rv
        old_meta = old["metadata"]
        if subresource == "status":
            # Stored objects are never mutated, so built-ins may share everything but metadata and status with
            # ``old``; custom resources are defaulted and pruned in place by the schema, so they get a full copy.
            result = clone(old) if info.custom else {**old, "metadata": dict(old_meta)}
            result["status"] = new.get("status")
            if result["status"] is None:
                result.pop("status")
            new = result
        self._keep_server_fields(info, old, new, subresource)
        name = str(old_meta["name"])
        namespace = str(old_meta.get("namespace") or "")
        if subresource is None:
            admission.apply_defaults(info.key, new, old)
        mutated = yield AdmissionPoint(MUTATING, UPDATE, info, namespace, name, subresource, new, old, dry_run)
        if mutated is not None:
            new = mutated
            self._keep_server_fields(info, old, new, subresource)
            if subresource is None:
                admission.apply_defaults(info.key, new, old)
        meta = new["metadata"]
        causes = admission.metadata_update_causes(meta, old_meta)
        if subresource != "status" or info.custom:
            self._validate(info, new, old, strict=strict, causes=causes)
        elif causes:
            raise errors.invalid(info.kind, info.group, name, causes)
        yield AdmissionPoint(VALIDATING, UPDATE, info, namespace, name, subresource, new, old, dry_run)
        if self.store.rv != written_before and self.store.get(info.key, namespace, name) is not old:
            raise Stale(name)
        if new == old:
            return old
        if info.has_generation and _spec_changed(old, new, status_counts=not info.has_status):
            meta["generation"] = int(old_meta.get("generation", 0)) + 1
        if dry_run:
            return new
        if meta.get("deletionTimestamp") and self._removable(info, new):
            return self._remove(info, new)
        self.store.put(info.key, new, old)
        if info.key == _CRDS:
            self.registry.register_crd(new)
        return new

    @staticmethod
    def _removable(info: ResourceInfo, obj: dict[str, Any]) -> bool:
        meta = obj["metadata"]
        if meta.get("finalizers"):
            return False
        if info.key == _NAMESPACES:
            return not (obj.get("spec") or {}).get("finalizers")
        if info.key == _PODS and (obj.get("spec") or {}).get("nodeName"):
            return not meta.get("deletionGracePeriodSeconds")
        return True

    # ----------------------------------------------------------------------------------------------------- patch

    def patch_steps(
        self,
        info: ResourceInfo,
        namespace: str,
        name: str,
        content_type: str,
        patch: Any,
        *,
        subresource: str | None = None,
        dry_run: bool = False,
        strict: bool = False,
    ) -> Steps[tuple[dict[str, Any], int]]:
        """Apply a patch of ``content_type``; server-side apply creates a missing object (returns 201 then)."""
        if info.custom and content_type not in CUSTOM_RESOURCE_PATCH_TYPES:
            raise errors.unsupported_media_type(content_type, CUSTOM_RESOURCE_PATCH_TYPES)
        current = self.store.get(info.key, namespace if info.namespaced else "", name)
        if current is None:
            if content_type == APPLY and subresource is None:
                if isinstance(patch, dict):
                    patch.setdefault("metadata", {}).setdefault("name", name)
                created = yield from self.create_steps(info, namespace, patch, dry_run=dry_run, strict=strict)
                return created, 201
            raise errors.not_found(info.group, info.plural, name)
        patched = self.apply_patch(info, current, content_type, patch)
        stored = yield from self.replace_steps(
            info, current, patched, subresource=subresource, dry_run=dry_run, strict=strict
        )
        return stored, 200

    def apply_patch(self, info: ResourceInfo, current: dict[str, Any], content_type: str, patch: Any) -> dict[str, Any]:
        """The patched document (not stored), with the patch's resourceVersion precondition checked."""
        return patched_object(info, current, content_type, patch)

    # ---------------------------------------------------------------------------------------------------- delete

    def delete_steps(
        self,
        info: ResourceInfo,
        namespace: str,
        name: str,
        options: dict[str, Any] | None = None,
        *,
        dry_run: bool = False,
    ) -> Steps[tuple[dict[str, Any], int]]:
        """DELETE with DeleteOptions; returns (object, HTTP status): the last state if removed, else marked
        (webhooks see the stored object as ``oldObject``)."""
        options = options or {}
        old = self.get(info, namespace, name)
        meta = old["metadata"]
        pre = options.get("preconditions") or {}
        if (pre.get("uid") and pre["uid"] != meta.get("uid")) or (
            pre.get("resourceVersion") and pre["resourceVersion"] != meta.get("resourceVersion")
        ):
            detail = (
                "the UID in the precondition does not match the UID in record"
                if pre.get("uid") and pre["uid"] != meta.get("uid")
                else "the ResourceVersion in the precondition does not match the ResourceVersion in record"
            )
            raise errors.conflict(info.group, info.plural, name, detail)
        ns = namespace if info.namespaced else ""
        written_before = self.store.rv
        for stage in (MUTATING, VALIDATING):
            yield AdmissionPoint(stage, DELETE, info, ns, name, None, None, old, dry_run, options)
        if self.store.rv != written_before and self.store.get(info.key, ns, name) is not old:
            raise Stale(name)
        grace = options.get("gracePeriodSeconds")
        if meta.get("deletionTimestamp"):
            if info.key == _PODS and grace == 0 and not dry_run:
                if not meta.get("finalizers"):
                    return self._remove(info, old), 200
                if meta.get("deletionGracePeriodSeconds"):
                    marked = clone(old)
                    marked["metadata"]["deletionGracePeriodSeconds"] = 0
                    self.store.put(info.key, marked, old)
                    return marked, 200
            return old, 200
        policy = options.get("propagationPolicy")
        if policy is None and options.get("orphanDependents") is not None:
            policy = "Orphan" if options["orphanDependents"] else "Background"
        new = clone(old)
        new_meta = new["metadata"]
        finalizers = list(new_meta.get("finalizers") or [])
        if policy == "Foreground" and "foregroundDeletion" not in finalizers:
            finalizers.append("foregroundDeletion")
        elif policy == "Orphan" and "orphan" not in finalizers:
            finalizers.append("orphan")
        if finalizers:
            new_meta["finalizers"] = finalizers
        pod_grace = 0
        if info.key == _PODS and (old.get("spec") or {}).get("nodeName"):
            pod_grace = int(
                grace if grace is not None else (old.get("spec") or {}).get("terminationGracePeriodSeconds", 30)
            )
            phase = (old.get("status") or {}).get("phase")
            if phase in ("Succeeded", "Failed"):
                pod_grace = 0
        if not finalizers and not pod_grace and info.key != _NAMESPACES:
            return (old if dry_run else self._remove(info, old)), 200
        new_meta["deletionTimestamp"] = now_rfc3339(pod_grace)
        new_meta["deletionGracePeriodSeconds"] = pod_grace
        if info.has_generation:
            new_meta["generation"] = int(new_meta.get("generation", 0)) + 1
        if info.key == _NAMESPACES:
            new["status"] = {**(new.get("status") or {}), "phase": "Terminating"}
        if dry_run:
            return new, 200
        self.store.put(info.key, new, old)
        accepted = options.get("orphanDependents") is False
        return new, 202 if accepted else 200

    # The verbs run to their end at once, without webhooks (in-process controllers, subresources, tests).
    create = ran(create_steps)
    update = ran(update_steps)
    replace = ran(replace_steps)
    patch = ran(patch_steps)
    delete = ran(delete_steps)

    def _remove(self, info: ResourceInfo, obj: dict[str, Any]) -> dict[str, Any]:
        if info.key == _CRDS:
            for cr in self.registry.unregister_crd(str(obj["metadata"]["name"]))[:1]:
                for item in self.store.list(cr.key):
                    self.store.remove(cr.key, item)
        return self.store.remove(info.key, obj).obj

    def remove_finalizer(self, info: ResourceInfo, obj: dict[str, Any], finalizer: str) -> dict[str, Any]:
        """Drop one finalizer (controllers' way to release an object); deletes it when it was the last."""
        new = clone(obj)
        new["metadata"]["finalizers"] = [f for f in new["metadata"].get("finalizers") or [] if f != finalizer]
        if not new["metadata"]["finalizers"]:
            del new["metadata"]["finalizers"]
        return self.replace(info, obj, new)


def _key_of(obj: dict[str, Any]) -> tuple[str, str]:
    meta = obj.get("metadata") or {}
    return str(meta.get("namespace", "")), str(meta.get("name", ""))

"""The subresources with their own semantics: ``pods/binding`` (and ``bindings``), ``/scale`` and ``/finalize``.

Binding is how a scheduler commits a placement: it sets ``spec.nodeName`` once (409 if already bound), refuses
gated or deleting pods, stamps ``PodScheduled=True`` and copies the binding's annotations, and answers with a
``Status`` (201) rather than the Binding (apiserver-notes §2.12). Scale maps an ``autoscaling/v1 Scale`` onto the
paths a CRD declares in ``subresources.scale`` (§2.13). Finalize is the namespace controller's way to drop
``spec.finalizers``.
"""

from __future__ import annotations

from typing import Any

from grove_sim.machinery import errors
from grove_sim.machinery.label_selectors import SelectorError, label_selector_from_dict
from grove_sim.registry.core import Core, clone, now_rfc3339
from grove_sim.registry.resources import ResourceInfo

__all__ = ["bind", "finalize_namespace", "get_scale", "patch_scale", "update_scale"]

_PODS = ("", "pods")


def bind(core: Core, namespace: str, pod_name: str, binding: Any) -> dict[str, Any]:
    """Bind a pod to a node; returns the 201 ``Status`` body."""
    if not isinstance(binding, dict):
        raise errors.bad_request("the body of the request must be a Binding object")
    info = core.registry.get("", "v1", "pods")
    assert info is not None
    meta = binding.get("metadata") or {}
    target = binding.get("target") or {}
    if target.get("kind") not in (None, "", "Node"):
        raise errors.invalid(
            "Binding",
            "",
            pod_name,
            [("target.kind", "FieldValueInvalid", f"Invalid value: \"{target.get('kind')}\": must be empty or 'Node'")],
        )
    node = str(target.get("name") or "")
    if not node:
        raise errors.invalid("Binding", "", pod_name, [("target.name", "FieldValueRequired", "Required value")])
    pod = core.get(info, namespace, pod_name)
    pod_meta = pod["metadata"]
    if meta.get("uid") and meta["uid"] != pod_meta.get("uid"):
        raise errors.conflict(
            "",
            "pods/binding",
            pod_name,
            "Precondition failed: UID in precondition: " + f"{meta['uid']}, UID in object meta: {pod_meta.get('uid')}",
        )
    if pod_meta.get("deletionTimestamp"):
        raise errors.conflict(
            "", "pods/binding", pod_name, f"pod {pod_name} is being deleted, cannot be assigned to a host"
        )
    spec = pod.get("spec") or {}
    if spec.get("nodeName"):
        raise errors.conflict(
            "", "pods/binding", pod_name, f'pod {pod_name} is already assigned to node "{spec["nodeName"]}"'
        )
    if spec.get("schedulingGates"):
        raise errors.conflict("", "pods/binding", pod_name, f"pod {pod_name} has non-empty .spec.schedulingGates")
    # Copy-on-write (stored objects are immutable): new containers on the changed paths, the rest shared.
    new_meta = dict(pod_meta)
    if meta.get("annotations"):
        new_meta["annotations"] = {**(pod_meta.get("annotations") or {}), **meta["annotations"]}
    status = dict(pod.get("status") or {})
    conditions = [c for c in status.get("conditions") or [] if c.get("type") != "PodScheduled"]
    conditions.append(
        {"type": "PodScheduled", "status": "True", "lastProbeTime": None, "lastTransitionTime": now_rfc3339()}
    )
    status["conditions"] = conditions
    new = {**pod, "metadata": new_meta, "spec": {**spec, "nodeName": node}, "status": status}
    core.store.put(info.key, new, pod)
    return {"kind": "Status", "apiVersion": "v1", "metadata": {}, "status": "Success", "code": 201}


def _get_path(obj: Any, path: str) -> Any:
    for part in [p for p in path.split(".") if p]:
        if not isinstance(obj, dict):
            return None
        obj = obj.get(part)
    return obj


def _set_path(obj: dict[str, Any], path: str, value: Any) -> None:
    parts = [p for p in path.split(".") if p]
    for part in parts[:-1]:
        child = obj.get(part)
        if not isinstance(child, dict):
            child = obj[part] = {}
        obj = child
    obj[parts[-1]] = value


def _scale_paths(info: ResourceInfo) -> dict[str, str]:
    if info.scale is None:
        raise errors.route_not_found()
    return info.scale


def get_scale(info: ResourceInfo, obj: dict[str, Any]) -> dict[str, Any]:
    """The ``autoscaling/v1 Scale`` view of a custom resource."""
    paths = _scale_paths(info)
    meta = obj["metadata"]
    scale_meta = {k: meta[k] for k in ("name", "namespace", "uid", "resourceVersion", "creationTimestamp") if k in meta}
    status: dict[str, Any] = {"replicas": int(_get_path(obj, paths.get("statusReplicasPath", "")) or 0)}
    selector_path = paths.get("labelSelectorPath")
    if selector_path:
        selector = _get_path(obj, selector_path)
        if isinstance(selector, dict):
            try:
                selector = str(label_selector_from_dict(selector))
            except SelectorError:
                selector = None
        if selector:
            status["selector"] = selector
    return {
        "kind": "Scale",
        "apiVersion": "autoscaling/v1",
        "metadata": scale_meta,
        "spec": {"replicas": int(_get_path(obj, paths["specReplicasPath"]) or 0)},
        "status": status,
    }


def update_scale(core: Core, info: ResourceInfo, namespace: str, name: str, scale: Any) -> dict[str, Any]:
    """PUT ``/scale``: a stale ``metadata.resourceVersion`` is a 409; returns the new Scale."""
    if not isinstance(scale, dict):
        raise errors.bad_request("the body of the request must be a Scale object")
    obj = core.get(info, namespace, name)
    rv = (scale.get("metadata") or {}).get("resourceVersion")
    if rv and rv != obj["metadata"]["resourceVersion"]:
        raise errors.conflict(info.group, info.plural, name)
    return _write_replicas(core, info, obj, scale)


def patch_scale(
    core: Core, info: ResourceInfo, namespace: str, name: str, content_type: str, patch: Any
) -> dict[str, Any]:
    """PATCH ``/scale``: the patch applies to the Scale view, then its replicas go to the spec path."""
    obj = core.get(info, namespace, name)
    current = get_scale(info, obj)
    scale_info = ResourceInfo("autoscaling", "v1", "scale", "scale", "Scale", True)
    patched = core.apply_patch(scale_info, current, content_type, patch)
    return _write_replicas(core, info, obj, patched)


def _write_replicas(core: Core, info: ResourceInfo, obj: dict[str, Any], scale: dict[str, Any]) -> dict[str, Any]:
    replicas = (scale.get("spec") or {}).get("replicas")
    if not isinstance(replicas, int) or isinstance(replicas, bool) or replicas < 0:
        raise errors.invalid(
            "Scale",
            "autoscaling",
            obj["metadata"]["name"],
            [("spec.replicas", "FieldValueInvalid", f"Invalid value: {replicas}: must be greater than or equal to 0")],
        )
    new = clone(obj)
    _set_path(new, _scale_paths(info)["specReplicasPath"], replicas)
    stored = core.replace(info, obj, new)
    return get_scale(info, stored)


def finalize_namespace(core: Core, name: str, body: Any) -> dict[str, Any]:
    """PUT ``namespaces/{name}/finalize``: replace ``spec.finalizers``; a terminating namespace then goes away."""
    info = core.registry.get("", "v1", "namespaces")
    assert info is not None
    ns = core.get(info, "", name)
    if not isinstance(body, dict):
        raise errors.bad_request("the body of the request must be a Namespace object")
    new = clone(ns)
    new["spec"] = {**(new.get("spec") or {}), "finalizers": list((body.get("spec") or {}).get("finalizers") or [])}
    if not new["spec"]["finalizers"]:
        del new["spec"]["finalizers"]
    return core.replace(info, ns, new, subresource="finalize")

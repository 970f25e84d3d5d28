"""Defaulting of built-in kinds, as the apiserver's ``SetDefaults_*`` functions apply it on every create and update.

Defaults fill what clients may leave out and validation then requires: pod restart and DNS policies, grace period,
scheduler, container pull and termination-message policies, container port protocols, container requests copied
from limits; service port protocols and target ports; the Secret type. Objects under write may share subtrees with
the stored version (copy-on-write patches), so nothing here mutates a nested dict or list: a changed container, port
or spec is a new dict, and only the object's top level is modified in place.
"""

from __future__ import annotations

import base64
from collections.abc import Callable
from typing import Any, Final

__all__ = ["apply_defaults"]

Obj = dict[str, Any]

_POD_SPEC: Final[dict[str, Any]] = {
    "restartPolicy": "Always",
    "terminationGracePeriodSeconds": 30,
    "schedulerName": "default-scheduler",
    "dnsPolicy": "ClusterFirst",
    "enableServiceLinks": True,
}
_CONTAINER: Final[dict[str, Any]] = {
    "imagePullPolicy": "IfNotPresent",
    "terminationMessagePath": "/dev/termination-log",
    "terminationMessagePolicy": "File",
}


def _with(obj: Obj, changes: Obj) -> Obj:
    """``obj`` itself when ``changes`` is empty, else a shallow copy with them applied."""
    return {**obj, **changes} if changes else obj


def _missing(obj: Obj, defaults: dict[str, Any]) -> Obj:
    changes: Obj = {}
    for key, value in defaults.items():
        if obj.get(key) is None:
            changes[key] = value
    return changes


def _each(items: Any, fix: Callable[[Obj], Obj]) -> Any:
    """The list with ``fix`` applied to each dict item; the same list when no item changed."""
    if items.__class__ is not list:
        return items
    fixed: list[Any] | None = None
    for index, item in enumerate(items):
        if item.__class__ is dict:
            new = fix(item)
            if new is not item:
                if fixed is None:
                    fixed = list(items)
                fixed[index] = new
    return items if fixed is None else fixed


def _container_port(port: Obj) -> Obj:
    return port if port.get("protocol") else {**port, "protocol": "TCP"}


def _container(container: Obj) -> Obj:
    changes = _missing(container, _CONTAINER)
    resources = container.get("resources")
    if resources is None:
        changes["resources"] = {}
    elif resources.__class__ is dict and resources.get("limits").__class__ is dict:
        requests = resources.get("requests")
        requests = requests if requests.__class__ is dict else {}
        if not requests.keys() >= resources["limits"].keys():
            missing = {k: v for k, v in resources["limits"].items() if k not in requests}
            changes["resources"] = {**resources, "requests": {**requests, **missing}}
    ports = container.get("ports")
    if ports:
        fixed = _each(ports, _container_port)
        if fixed is not ports:
            changes["ports"] = fixed
    return _with(container, changes)


def _spec_defaults(scalars: dict[str, Any], lists: dict[str, Callable[[Obj], Obj]]) -> Callable[[Obj, Obj], None]:
    """Defaulting of a kind's ``spec``: ``scalars`` when missing, and each item of the ``lists`` fixed; lists still
    shared with the stored, defaulted version (``old_spec``) hold nothing new and are skipped."""

    def default(obj: Obj, old_spec: Obj) -> None:
        spec = obj.get("spec")
        if spec is None:
            spec = obj["spec"] = {}
        if not isinstance(spec, dict) or spec is old_spec:
            return
        changes = _missing(spec, scalars)
        for key, fix in lists.items():
            items = spec.get(key)
            if items is old_spec.get(key):
                continue
            fixed = _each(items, fix)
            if fixed is not items:
                changes[key] = fixed
        obj["spec"] = _with(spec, changes)

    return default


def _service_port(port: Obj) -> Obj:
    changes: Obj = {} if port.get("protocol") else {"protocol": "TCP"}
    if port.get("targetPort") in (None, 0, "") and port.get("port") is not None:
        changes["targetPort"] = port["port"]
    return _with(port, changes)


def _secret(secret: Obj, old_spec: Obj) -> None:
    """``type`` defaults to Opaque; ``stringData`` is write-only, merged into ``data`` (base64, its keys win) as
    kube-apiserver's conversion does, so it is never stored."""
    if not secret.get("type"):
        secret["type"] = "Opaque"
    string_data = secret.pop("stringData", None)
    if isinstance(string_data, dict) and string_data:
        encoded = {str(k): base64.b64encode(str(v).encode()).decode() for k, v in string_data.items()}
        secret["data"] = {**(secret.get("data") or {}), **encoded}


_pod_defaults: Final = _spec_defaults(_POD_SPEC, {"containers": _container, "initContainers": _container})
_ROLLING: Final[dict[str, Any]] = {"maxUnavailable": "25%", "maxSurge": "25%"}


def _workload(scalars: dict[str, Any], *, strategy: bool) -> Callable[[Obj, Obj], None]:
    """Defaulting of a Deployment or ReplicaSet: its own scalars, the strategy, and its pod template's spec as a
    pod's (so the template a ReplicaSet copies compares equal to the Deployment's)."""

    def default(obj: Obj, old_spec: Obj) -> None:
        spec = obj.get("spec")
        if not isinstance(spec, dict) or spec is old_spec:
            return
        changes = _missing(spec, scalars)
        if strategy:
            current = spec.get("strategy")
            current = current if isinstance(current, dict) else {}
            kind = current.get("type") or "RollingUpdate"
            fixed = {**current, "type": kind}
            if kind == "RollingUpdate":
                rolling = current.get("rollingUpdate")
                rolling = rolling if isinstance(rolling, dict) else {}
                fixed["rollingUpdate"] = {**_ROLLING, **{k: v for k, v in rolling.items() if v is not None}}
            if fixed != current:
                changes["strategy"] = fixed
        template = spec.get("template")
        old_template = old_spec.get("template")
        if isinstance(template, dict) and template is not old_template:
            copy = dict(template)
            old_pod_spec = old_template.get("spec") if isinstance(old_template, dict) else None
            _pod_defaults(copy, old_pod_spec if isinstance(old_pod_spec, dict) else {})
            if copy != template:
                changes["template"] = copy
        obj["spec"] = _with(spec, changes)

    return default


_DEFAULTS: Final[dict[tuple[str, str], Callable[[Obj, Obj], None]]] = {
    ("", "pods"): _pod_defaults,
    ("apps", "deployments"): _workload(
        {"replicas": 1, "revisionHistoryLimit": 10, "progressDeadlineSeconds": 600}, strategy=True
    ),
    ("apps", "replicasets"): _workload({"replicas": 1}, strategy=False),
    ("", "services"): _spec_defaults({"type": "ClusterIP", "sessionAffinity": "None"}, {"ports": _service_port}),
    ("", "secrets"): _secret,
}


def apply_defaults(key: tuple[str, str], obj: Obj, old: Obj | None = None) -> None:
    """Fill the defaults of the kind stored under ``key`` into ``obj`` (top level in place, nested copy-on-write).

    On update, ``old`` is the stored (defaulted) version: a subtree ``obj`` still shares with it needs nothing.
    """
    default = _DEFAULTS.get(key)
    if default is not None:
        old_spec = (old or {}).get("spec")
        default(obj, old_spec if isinstance(old_spec, dict) else {})

"""Containers and volumes of a pod spec, as ``validateContainers``, ``validateInitContainers`` and friends do it.

Container names are DNS-1123 labels unique across app and init containers; images are required; ports are valid
numbers with a supported protocol and unique names; env var names are C-like identifiers with dots and dashes; each
``valueFrom`` has exactly one source; volume names are unique DNS-1123 labels and every mount names one of them;
resources go through ``grove_sim.validation.resources``.
"""

from __future__ import annotations

from typing import Any, Final

from grove_sim.validation.field import (
    Cause,
    duplicate,
    enum_causes,
    forbidden,
    get_int,
    get_list,
    get_map,
    get_str,
    invalid,
    not_found,
    not_supported,
    required,
)
from grove_sim.validation.names import DNS1123_LABEL, ENV_VAR_NAME, PORT_NAME, PROTOCOLS, port_number_errors
from grove_sim.validation.resources import validate_resource_requirements

__all__ = ["validate_containers", "validate_init_containers", "validate_volumes"]

_PULL_POLICIES: Final = ("Always", "IfNotPresent", "Never")
_MESSAGE_POLICIES: Final = ("File", "FallbackToLogsOnError")
_ENV_SOURCES: Final = ("fieldRef", "resourceFieldRef", "configMapKeyRef", "secretKeyRef")
_INIT_ONLY_WITH_RESTART: Final = ("lifecycle", "livenessProbe", "readinessProbe", "startupProbe")
_VOLUME_SOURCES: Final = (
    "emptyDir",
    "hostPath",
    "gitRepo",
    "gcePersistentDisk",
    "awsElasticBlockStore",
    "secret",
    "nfs",
    "iscsi",
    "glusterfs",
    "flocker",
    "persistentVolumeClaim",
    "rbd",
    "cinder",
    "cephfs",
    "quobyte",
    "downwardAPI",
    "fc",
    "flexVolume",
    "configMap",
    "azureFile",
    "vsphereVolume",
    "photonPersistentDisk",
    "portworxVolume",
    "azureDisk",
    "storageos",
    "projected",
    "scaleIO",
    "csi",
    "ephemeral",
    "image",
)


_VOLUME_SOURCE_SET: Final = frozenset(_VOLUME_SOURCES)


def validate_volumes(volumes: list[dict[str, Any]], path: str) -> tuple[set[str], list[Cause]]:
    """``ValidateVolumes``: the names of the valid volumes (mounts may refer only to them) and the causes."""
    names: set[str] = set()
    causes: list[Cause] = []
    for index, volume in enumerate(volumes):
        own: list[Cause] = []
        if len(volume) > 2 and len(_VOLUME_SOURCE_SET.intersection(volume)) > 1:  # name and one source: fine
            sources = [key for key in _VOLUME_SOURCES if volume.get(key) is not None]
            detail = "may not specify more than 1 volume type"
            own += [forbidden(f"{path}[{index}].{key}", detail) for key in sources[1:]]
        name = get_str(volume, "name", path)
        if name not in DNS1123_LABEL.valid:
            name_path = f"{path}[{index}].name"
            if not name:
                own.append(required(name_path))
            else:
                own += [invalid(name_path, name, m) for m in DNS1123_LABEL.errors(name)]
        if name in names:
            own.append(duplicate(f"{path}[{index}].name", name))
        if own:
            causes += own
        else:
            names.add(name)
    return names, causes


def _port_causes(port: dict[str, Any], names: set[str], at: str, path: str) -> list[Cause]:
    """``validateContainerPorts`` for one port (the slow path: only ports the fast test did not clear)."""
    causes: list[Cause] = []
    name = get_str(port, "name", path)
    if name:
        messages = PORT_NAME.errors(name)
        if messages:
            causes += [invalid(f"{at}.name", name, m) for m in messages]
        elif name in names:
            causes.append(duplicate(f"{at}.name", name))
    container_port = get_int(port, "containerPort", path) or 0
    if not container_port:
        causes.append(required(f"{at}.containerPort"))
    else:
        causes += [invalid(f"{at}.containerPort", container_port, m) for m in port_number_errors(container_port)]
    host_port = get_int(port, "hostPort", path) or 0
    if host_port:
        causes += [invalid(f"{at}.hostPort", host_port, m) for m in port_number_errors(host_port)]
    return causes + enum_causes(port, "protocol", at, PROTOCOLS)


def _host_port_conflicts(containers: list[dict[str, Any]], path: str) -> list[Cause]:
    """``checkHostPortConflicts``: one protocol/hostIP/hostPort per pod."""
    seen: set[str] = set()
    causes: list[Cause] = []
    for index, container in enumerate(containers):
        for number, port in enumerate(container.get("ports") or ()):
            host_port = port.get("hostPort") or 0
            if not host_port:
                continue
            key = f"{port.get('protocol') or ''}/{port.get('hostIP') or ''}/{host_port}"
            if key in seen:
                causes.append(duplicate(f"{path}[{index}].ports[{number}].hostPort", key))
            seen.add(key)
    return causes


def _env_causes(var: dict[str, Any], at: str, path: str) -> list[Cause]:
    """``ValidateEnv`` for one variable (the slow path)."""
    causes: list[Cause] = []
    name = get_str(var, "name", path)
    if not name:
        causes.append(required(f"{at}.name"))
    else:
        causes += [invalid(f"{at}.name", name, m) for m in ENV_VAR_NAME.errors(name)]
    if var.get("valueFrom") is None:
        return causes
    source = get_map(var, "valueFrom", path)
    count = sum(1 for key in _ENV_SOURCES if source.get(key) is not None)
    if count == 0:
        detail = "must specify one of: `fieldRef`, `resourceFieldRef`, `configMapKeyRef` or `secretKeyRef`"
        causes.append(invalid(f"{at}.valueFrom", "", detail))
    elif get_str(var, "value", path):
        causes.append(invalid(f"{at}.valueFrom", "", "may not be specified when `value` is not empty"))
    elif count > 1:
        causes.append(invalid(f"{at}.valueFrom", "", "may not have more than one field specified at a time"))
    return causes


def _single_source(var: dict[str, Any], source: Any) -> bool:
    return source.__class__ is dict and not var.get("value") and len(source) == 1 and next(iter(source)) in _ENV_SOURCES


def _mount_causes(mount: dict[str, Any], volumes: set[str], paths: set[str], at: str) -> list[Cause]:
    """``ValidateVolumeMounts`` for one mount: it names a valid volume, at a path no other mount uses."""
    causes: list[Cause] = []
    parent = at.rpartition("[")[0]
    name = get_str(mount, "name", parent)
    if not name:
        causes.append(required(f"{at}.name"))
    if name not in volumes:
        causes.append(not_found(f"{at}.name", name))
    mount_path = get_str(mount, "mountPath", parent)
    if not mount_path:
        causes.append(required(f"{at}.mountPath"))
    if mount_path in paths:
        causes.append(invalid(f"{at}.mountPath", mount_path, "must be unique"))
    sub_path_expr = get_str(mount, "subPathExpr", parent)
    if sub_path_expr and get_str(mount, "subPath", parent):
        causes.append(invalid(f"{at}.subPathExpr", sub_path_expr, "subPathExpr and subPath are mutually exclusive"))
    return causes


def _ports(ports: list[dict[str, Any]], path: str) -> list[Cause]:
    """``validateContainerPorts``: unique valid names, port numbers, a supported protocol."""
    causes: list[Cause] = []
    names: set[str] = set()
    valid_names = PORT_NAME.valid
    for index, port in enumerate(ports):
        name = port.get("name")
        number = port.get("containerPort")
        if not (
            (name is None or (name.__class__ is str and name in valid_names and name not in names))
            and number.__class__ is int
            and 0 < number <= 65535
            and port.get("protocol") in PROTOCOLS
            and not port.get("hostPort")
        ):
            causes += _port_causes(port, names, f"{path}[{index}]", path)
        if name:
            names.add(name)
    return causes


def _container(container: dict[str, Any], volumes: set[str], path: str) -> list[Cause]:
    """``validateContainerCommon`` plus the pod-only image check; ``path`` is ``spec.containers[i]``.

    Each part is first tested the cheap way (known-valid strings, plain comparisons); only a part that fails the
    test is examined again by the function that explains it, so a valid container costs one pass.
    """
    causes: list[Cause] = []
    name = container.get("name")
    if name.__class__ is not str or name not in DNS1123_LABEL.valid:
        name = get_str(container, "name", path)
        if not name:
            causes.append(required(f"{path}.name"))
        else:
            causes += [invalid(f"{path}.name", name, m) for m in DNS1123_LABEL.errors(name)]
    image = container.get("image")
    if image.__class__ is not str or not image:
        image = get_str(container, "image", path)
        causes.append(required(f"{path}.image"))
    if container.get("terminationMessagePolicy") not in _MESSAGE_POLICIES:
        causes += enum_causes(container, "terminationMessagePolicy", path, _MESSAGE_POLICIES)
    ports = container.get("ports")
    if ports:
        causes += _ports(get_list(container, "ports", path), f"{path}.ports")
    env = container.get("env")
    if env:
        env_names = ENV_VAR_NAME.valid
        for index, var in enumerate(get_list(container, "env", path)):
            var_name = var.get("name")
            source = var.get("valueFrom")
            if (
                var_name.__class__ is not str
                or var_name not in env_names
                or (source is not None and not _single_source(var, source))
            ):
                causes += _env_causes(var, f"{path}.env[{index}]", f"{path}.env")
    mounts = container.get("volumeMounts")
    if mounts:
        mount_paths: set[str] = set()
        for index, mount in enumerate(get_list(container, "volumeMounts", path)):
            mount_name = mount.get("name")
            mount_path = mount.get("mountPath")
            if (
                mount_name.__class__ is not str
                or mount_name not in volumes
                or mount_path.__class__ is not str
                or not mount_path
                or mount_path in mount_paths
                or (mount.get("subPathExpr") and mount.get("subPath"))
            ):
                causes += _mount_causes(mount, volumes, mount_paths, f"{path}.volumeMounts[{index}]")
            mount_paths.add(mount_path)
    if container.get("imagePullPolicy") not in _PULL_POLICIES:
        causes += enum_causes(container, "imagePullPolicy", path, _PULL_POLICIES)
    resources = container.get("resources")
    if resources:
        causes += validate_resource_requirements(get_map(container, "resources", path), f"{path}.resources")
    if image and (image[0].isspace() or image[-1].isspace()):
        causes.append(invalid(f"{path}.image", image, "must not have leading or trailing whitespace"))
    return causes


def validate_containers(containers: list[dict[str, Any]], volumes: set[str], path: str) -> list[Cause]:
    """``validateContainers``: at least one, unique names, no ``restartPolicy``, no shared host port."""
    if not containers:
        return [required(path)]
    causes: list[Cause] = []
    names: set[str] = set()
    for index, container in enumerate(containers):
        at = f"{path}[{index}]"
        causes += _container(container, volumes, at)
        name = container.get("name") or ""
        if name in names:
            causes.append(duplicate(f"{at}.name", name))
        names.add(name)
        if container.get("restartPolicy") is not None:
            causes.append(forbidden(f"{at}.restartPolicy", "may not be set for non-init containers"))
    return causes + _host_port_conflicts(containers, path)


def validate_init_containers(
    init_containers: list[dict[str, Any]], containers: list[dict[str, Any]], volumes: set[str], path: str
) -> list[Cause]:
    """``validateInitContainers``: names unique across all containers; probes only on sidecars (restartPolicy
    Always); host ports checked per container, since init containers run one by one."""
    causes: list[Cause] = []
    names = {c.get("name") or "" for c in containers}
    for index, container in enumerate(init_containers):
        at = f"{path}[{index}]"
        causes += _container(container, volumes, at)
        restart = get_str(container, "restartPolicy", path)
        if restart and restart != "Always":
            causes.append(not_supported(f"{at}.restartPolicy", restart, ("Always",)))
        name = container.get("name") or ""
        if name in names:
            causes.append(duplicate(f"{at}.name", name))
        elif name:
            names.add(name)
        causes += _host_port_conflicts([container], path)
        if restart != "Always":
            detail = "may not be set for init containers without restartPolicy=Always"
            causes += [forbidden(f"{at}.{key}", detail) for key in _INIT_ONLY_WITH_RESTART if container.get(key)]
    return causes

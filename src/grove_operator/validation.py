"""Validation of PodCliqueSets: the validating webhook's rules as pure functions (grove-reference §3.12).

Rules run on the raw request JSON (after defaulting) because the objects they must reject (negative replicas,
minAvailable out of range) may not even parse into the API models. Each failure is a `FieldError` with the
field path a user sees in `kubectl` (`spec.template.cliques[1].spec.minAvailable`); the admission webhook turns them
into a denial and the PCS reconciler into `lastErrors`.
"""

from __future__ import annotations

from collections.abc import Collection, Mapping
from typing import Any

from grove_api import ClusterTopologyBinding
from grove_api import names as gnames
from grove_operator import _fieldchecks as checks
from grove_operator import _validation_extra as extra
from grove_operator._fieldchecks import ErrorType, FieldError, FieldErrors

__all__ = [
    "ErrorType",
    "FieldError",
    "podcliqueset_warnings",
    "validate_clustertopology",
    "validate_podcliqueset",
    "validate_podcliqueset_update",
]

_STARTUP_TYPES = ("CliqueStartupTypeAnyOrder", "CliqueStartupTypeInOrder", "CliqueStartupTypeExplicit")
_TEMPLATE = "spec.template"


def _int(value: Any) -> int | None:
    return value if isinstance(value, int) and not isinstance(value, bool) else None


def _cliques(pcs: Mapping[str, Any]) -> list[dict[str, Any]]:
    return list(((pcs.get("spec") or {}).get("template") or {}).get("cliques") or [])


def _groups(pcs: Mapping[str, Any]) -> list[dict[str, Any]]:
    return list(((pcs.get("spec") or {}).get("template") or {}).get("podCliqueScalingGroups") or [])


def _check_metadata_map(errors: FieldErrors, path: str, values: Any, is_label: bool) -> None:
    for key, value in (values or {}).items():
        if (problem := checks.label_key_error(str(key))) is not None:
            errors.add(f"{path}[{key}]", "Invalid", problem)
        if is_label and (problem := checks.label_value_error(str(value))) is not None:
            errors.add(f"{path}[{key}]", "Invalid", problem)


def _check_autoscaling(
    errors: FieldErrors, path: str, config: Mapping[str, Any], min_available: int | None, replicas: int | None
) -> None:
    min_replicas, max_replicas = _int(config.get("minReplicas")), _int(config.get("maxReplicas"))
    if max_replicas is None:
        errors.add(f"{path}.maxReplicas", "Required", "maxReplicas is required")
        return
    if min_replicas is not None and min_available is not None and min_replicas < min_available:
        errors.add(f"{path}.minReplicas", "Invalid", f"must be >= minAvailable ({min_available})")
    if min_replicas is not None and max_replicas < min_replicas:
        errors.add(f"{path}.maxReplicas", "Invalid", f"must be >= minReplicas ({min_replicas})")
    if replicas is not None and max_replicas < replicas:
        errors.add(f"{path}.maxReplicas", "Invalid", f"must be >= replicas ({replicas})")


def _check_containers(errors: FieldErrors, path: str, pod_spec: Mapping[str, Any]) -> None:
    for key in ("initContainers", "containers"):
        for c_index, container in enumerate(pod_spec.get(key) or ()):
            seen: set[str] = set()
            for e_index, env in enumerate(container.get("env") or ()):
                name = env.get("name") or ""
                env_path = f"{path}.{key}[{c_index}].env[{e_index}].name"
                if not name or any(ch in name for ch in "= ") or name[0].isdigit():
                    errors.add(env_path, "Invalid", f"{name!r} is not a valid environment variable name")
                elif name in seen:
                    errors.add(env_path, "Duplicate", f"{name!r} is set more than once")
                seen.add(name)


def _check_clique(errors: FieldErrors, pcs_name: str, index: int, clique: Mapping[str, Any], group: str | None) -> None:
    path = f"{_TEMPLATE}.cliques[{index}]"
    name = clique.get("name") or ""
    if not name:
        errors.add(f"{path}.name", "Required", "clique name is required")
    else:
        problem = checks.dns_subdomain_error(name) or gnames.combined_name_length_error(pcs_name, name, group)
        if problem is not None:
            errors.add(f"{path}.name", "Invalid", problem)
    _check_metadata_map(errors, f"{path}.labels", clique.get("labels"), is_label=True)
    _check_metadata_map(errors, f"{path}.annotations", clique.get("annotations"), is_label=False)
    spec = clique.get("spec") or {}
    replicas, min_available = _int(spec.get("replicas")), _int(spec.get("minAvailable"))
    if replicas is None or replicas <= 0:
        errors.add(f"{path}.spec.replicas", "Invalid", "must be greater than 0")
    if min_available is None:
        errors.add(f"{path}.spec.minAvailable", "Required", "minAvailable is required")
    elif min_available <= 0:
        errors.add(f"{path}.spec.minAvailable", "Invalid", "must be greater than 0")
    elif replicas is not None and min_available > replicas:
        errors.add(f"{path}.spec.minAvailable", "Invalid", f"must be <= replicas ({replicas})")
    autoscaling = spec.get("autoScalingConfig")
    if autoscaling is not None and group is not None:
        errors.add(f"{path}.spec.autoScalingConfig", "Forbidden", f"not allowed for members of scaling group {group!r}")
    elif autoscaling is not None:
        _check_autoscaling(errors, f"{path}.spec.autoScalingConfig", autoscaling, min_available, replicas)
    _check_containers(errors, f"{path}.spec.podSpec", spec.get("podSpec") or {})


def _check_startup(errors: FieldErrors, template: Mapping[str, Any], cliques: list[dict[str, Any]]) -> None:
    if template.get("cliqueStartupType") != "CliqueStartupTypeExplicit":
        return
    known = {c.get("name") for c in cliques}
    graph: dict[str, list[str]] = {}
    for index, clique in enumerate(cliques):
        name = clique.get("name") or ""
        parents = list((clique.get("spec") or {}).get("startsAfter") or ())
        graph[name] = parents
        seen: set[str] = set()
        for p_index, parent in enumerate(parents):
            path = f"{_TEMPLATE}.cliques[{index}].spec.startsAfter[{p_index}]"
            if not parent:
                errors.add(path, "Required", "must not be empty")
            elif parent == name:
                errors.add(path, "Invalid", "a clique cannot start after itself")
            elif parent in seen:
                errors.add(path, "Duplicate", f"{parent!r} listed more than once")
            elif parent not in known:
                errors.add(path, "NotFound", f"unknown clique {parent!r}")
            seen.add(parent)
    for cycle in checks.cycles(graph):
        errors.add(f"{_TEMPLATE}.cliques", "Invalid", f"startsAfter has a cycle among {', '.join(cycle)}")


def _check_groups(
    errors: FieldErrors, pcs_name: str, cliques: list[dict[str, Any]], groups: list[dict[str, Any]]
) -> dict[str, str]:
    """Check scaling groups and return clique name -> group name."""
    known = {c.get("name") for c in cliques}
    owner: dict[str, str] = {}
    names: set[str] = set()
    for index, group in enumerate(groups):
        path = f"{_TEMPLATE}.podCliqueScalingGroups[{index}]"
        name = group.get("name") or ""
        if (problem := checks.dns_subdomain_error(name)) is not None:
            errors.add(f"{path}.name", "Invalid", problem)
        elif name in names:
            errors.add(f"{path}.name", "Duplicate", f"scaling group {name!r} defined more than once")
        names.add(name)
        for c_index, clique_name in enumerate(group.get("cliqueNames") or ()):
            c_path = f"{path}.cliqueNames[{c_index}]"
            if clique_name not in known:
                errors.add(c_path, "NotFound", f"unknown clique {clique_name!r}")
            elif clique_name in owner:
                errors.add(c_path, "Duplicate", f"clique {clique_name!r} already belongs to {owner[clique_name]!r}")
            else:
                owner[clique_name] = name
        replicas, min_available = _int(group.get("replicas", 1)), _int(group.get("minAvailable", 1))
        if replicas is None or replicas <= 0:
            errors.add(f"{path}.replicas", "Invalid", "must be greater than 0")
        if min_available is None or min_available <= 0:
            errors.add(f"{path}.minAvailable", "Invalid", "must be greater than 0")
        elif replicas is not None and min_available > replicas:
            errors.add(f"{path}.minAvailable", "Invalid", f"must be <= replicas ({replicas})")
        scale = group.get("scaleConfig")
        if scale is not None:
            _check_autoscaling(errors, f"{path}.scaleConfig", scale, min_available, None)
    return owner


def validate_podcliqueset(
    pcs: Mapping[str, Any],
    *,
    create: bool = True,
    default_scheduler_name: str = "default-scheduler",
    enabled_schedulers: Collection[str] | None = None,
    topologies: Mapping[str, ClusterTopologyBinding] | None = None,
    topology_aware: bool = True,
) -> list[FieldError]:
    """Every create/update rule violated by a (defaulted) PodCliqueSet; `create` adds the create-only rules.

    `enabled_schedulers` (None: accept any) and `default_scheduler_name` mirror the operator's backend config;
    `topologies` are the ClusterTopologyBindings by name, used by the create-time topology rules, which refuse any
    constraint when `topology_aware` scheduling is off.
    """
    errors = FieldErrors()
    metadata, spec = pcs.get("metadata") or {}, pcs.get("spec") or {}
    pcs_name = str(metadata.get("name") or "")
    if (problem := checks.dns_subdomain_error(pcs_name)) is not None:
        errors.add("metadata.name", "Invalid", problem)
    replicas = spec.get("replicas", 0)
    if _int(replicas) is None or replicas < 0:
        errors.add("spec.replicas", "Invalid", "must be greater than or equal to 0")
    template = spec.get("template") or {}
    startup = template.get("cliqueStartupType", "CliqueStartupTypeAnyOrder")
    if startup not in _STARTUP_TYPES:
        errors.add(f"{_TEMPLATE}.cliqueStartupType", "Invalid", f"must be one of {', '.join(_STARTUP_TYPES)}")
    delay = template.get("terminationDelay")
    if delay is not None and ((seconds := checks.go_duration_seconds(str(delay))) is None or seconds <= 0):
        errors.add(f"{_TEMPLATE}.terminationDelay", "Invalid", "must be a positive duration")
    cliques, groups = _cliques(pcs), _groups(pcs)
    if not cliques:
        errors.add(f"{_TEMPLATE}.cliques", "Required", "at least one clique is required")
    owner = _check_groups(errors, pcs_name, cliques, groups)
    seen_names: set[str] = set()
    seen_roles: set[str] = set()
    schedulers: set[str] = set()
    for index, clique in enumerate(cliques):
        name = clique.get("name") or ""
        _check_clique(errors, pcs_name, index, clique, owner.get(name))
        if name and name in seen_names:
            errors.add(f"{_TEMPLATE}.cliques[{index}].name", "Duplicate", f"clique {name!r} defined more than once")
        seen_names.add(name)
        clique_spec = clique.get("spec") or {}
        role = str(clique_spec.get("roleName") or "")
        if role in seen_roles:
            errors.add(f"{_TEMPLATE}.cliques[{index}].spec.roleName", "Duplicate", f"roleName {role!r} is not unique")
        seen_roles.add(role)
        pod_spec = clique_spec.get("podSpec") or {}
        scheduler = str(pod_spec.get("schedulerName") or default_scheduler_name)
        schedulers.add(scheduler)
        if enabled_schedulers is not None and scheduler not in enabled_schedulers:
            errors.add(
                f"{_TEMPLATE}.cliques[{index}].spec.podSpec.schedulerName", "Invalid", f"{scheduler!r} is not enabled"
            )
        if create:
            for field in ("topologySpreadConstraints", "nodeName"):
                if pod_spec.get(field):
                    errors.add(f"{_TEMPLATE}.cliques[{index}].spec.podSpec.{field}", "Forbidden", "not allowed")
    if len(schedulers) > 1:
        errors.add(
            f"{_TEMPLATE}.cliques",
            "Invalid",
            f"all cliques must use the same schedulerName, found {sorted(schedulers)}",
        )
    _check_startup(errors, template, cliques)
    extra.check_resource_sharing(errors, template)
    if create:
        extra.check_topology(errors, pcs, topologies or {}, enabled=topology_aware)
    return list(errors)


def podcliqueset_warnings(
    pcs: Mapping[str, Any], topologies: Mapping[str, ClusterTopologyBinding] | None = None
) -> list[str]:
    """What the webhook warns about without refusing: a restartPolicy other than Always (pods always restart; the
    defaulting webhook sets Always where it is unset) and a preferred domain coarser than the required one."""
    warnings = []
    for index, clique in enumerate(_cliques(pcs)):
        policy = ((clique.get("spec") or {}).get("podSpec") or {}).get("restartPolicy")
        if policy and policy != "Always":
            warnings.append(
                f"{_TEMPLATE}.cliques[{index}].spec.podSpec.restartPolicy: {policy!r} will be ignored, "
                "pods of a PodClique always restart (Always)"
            )
    return warnings + extra.topology_warnings(pcs, topologies or {})


def _clique_field(clique: Mapping[str, Any], *keys: str) -> Any:
    value: Any = clique
    for key in keys:
        value = (value or {}).get(key)
    return value


def _topology_changed(new: Any, old: Any) -> bool:
    """A changed constraint, except the one allowed migration: deprecated `packDomain` to `pack.required`."""
    if new == old:
        return False
    if isinstance(new, Mapping) and isinstance(old, Mapping) and old.get("packDomain"):
        migrated = {k: v for k, v in old.items() if k != "packDomain"}
        migrated["pack"] = {**(old.get("pack") or {}), "required": old["packDomain"]}
        return dict(new) != migrated
    return True


def validate_podcliqueset_update(new: Mapping[str, Any], old: Mapping[str, Any], **kwargs: Any) -> list[FieldError]:
    """The update rules (immutable fields) plus every create/update rule on `new`; kwargs as `validate_podcliqueset`."""
    errors = FieldErrors(validate_podcliqueset(new, create=False, **kwargs))
    new_t, old_t = (new.get("spec") or {}).get("template") or {}, (old.get("spec") or {}).get("template") or {}
    if new_t.get("cliqueStartupType") != old_t.get("cliqueStartupType"):
        errors.add(f"{_TEMPLATE}.cliqueStartupType", "Forbidden", "field is immutable")
    new_c, old_c = _cliques(new), _cliques(old)
    new_names, old_names = [c.get("name") for c in new_c], [c.get("name") for c in old_c]
    if sorted(map(str, new_names)) != sorted(map(str, old_names)):
        errors.add(f"{_TEMPLATE}.cliques", "Forbidden", "cliques cannot be added, removed or renamed")
    elif new_names != old_names and new_t.get("cliqueStartupType") != "CliqueStartupTypeAnyOrder":
        errors.add(f"{_TEMPLATE}.cliques", "Forbidden", "clique order is immutable for InOrder and Explicit startup")
    old_by_name = {c.get("name"): c for c in old_c}
    immutable = (
        ("spec", "roleName"),
        ("spec", "minAvailable"),
        ("spec", "startsAfter"),
        ("spec", "podSpec", "schedulerName"),
        ("resourceSharing",),
    )
    for index, clique in enumerate(new_c):
        previous = old_by_name.get(clique.get("name"))
        if previous is None:
            continue
        for keys in immutable:
            if _clique_field(clique, *keys) != _clique_field(previous, *keys):
                errors.add(f"{_TEMPLATE}.cliques[{index}].{'.'.join(keys)}", "Forbidden", "field is immutable")
        if _topology_changed(clique.get("topologyConstraint"), previous.get("topologyConstraint")):
            errors.add(f"{_TEMPLATE}.cliques[{index}].topologyConstraint", "Forbidden", "field is immutable")
    new_g, old_g = _groups(new), _groups(old)
    if sorted(str(g.get("name")) for g in new_g) != sorted(str(g.get("name")) for g in old_g):
        errors.add(f"{_TEMPLATE}.podCliqueScalingGroups", "Forbidden", "scaling groups cannot be added or removed")
    old_groups = {g.get("name"): g for g in old_g}
    for index, group in enumerate(new_g):
        previous = old_groups.get(group.get("name"))
        if previous is None:
            continue
        for key in ("cliqueNames", "minAvailable", "resourceSharing"):
            if group.get(key) != previous.get(key):
                errors.add(f"{_TEMPLATE}.podCliqueScalingGroups[{index}].{key}", "Forbidden", "field is immutable")
        if _topology_changed(group.get("topologyConstraint"), previous.get("topologyConstraint")):
            path = f"{_TEMPLATE}.podCliqueScalingGroups[{index}].topologyConstraint"
            errors.add(path, "Forbidden", "field is immutable")
    for key in ("resourceClaimTemplates", "resourceSharing"):
        if new_t.get(key) != old_t.get(key):
            errors.add(f"{_TEMPLATE}.{key}", "Forbidden", "field is immutable")
    if _topology_changed(new_t.get("topologyConstraint"), old_t.get("topologyConstraint")):
        errors.add(f"{_TEMPLATE}.topologyConstraint", "Forbidden", "field is immutable")
    return list(errors)


def validate_clustertopology(ct: Mapping[str, Any]) -> list[FieldError]:
    """ClusterTopologyBinding rules the schema cannot express: unique domains, unique keys, one binding per
    scheduler."""
    errors = FieldErrors()
    spec = ct.get("spec") or {}
    domains: set[str] = set()
    keys: set[str] = set()
    for index, level in enumerate(spec.get("levels") or ()):
        domain, key = str((level or {}).get("domain") or ""), str((level or {}).get("key") or "")
        if domain in domains:
            errors.add(f"spec.levels[{index}].domain", "Duplicate", f"domain {domain!r} is listed more than once")
        if key in keys:
            errors.add(f"spec.levels[{index}].key", "Duplicate", f"key {key!r} is listed more than once")
        domains.add(domain)
        keys.add(key)
    schedulers: set[str] = set()
    for index, binding in enumerate(spec.get("schedulerTopologyBindings") or ()):
        name = str((binding or {}).get("schedulerName") or "")
        if name in schedulers:
            path = f"spec.schedulerTopologyBindings[{index}].schedulerName"
            errors.add(path, "Duplicate", f"scheduler {name!r} is bound more than once")
        schedulers.add(name)
    return list(errors)

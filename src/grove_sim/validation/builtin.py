"""Which rules each kind gets: its name rule, the checks on every write, and those on create or update only.

``validate`` is the single entry point the registry calls after defaulting: ``ObjectMeta`` for every kind (built-in
or custom; core ``v1`` Events excepted, as upstream), then the kind's own rules. Kinds not listed here (CRDs, webhook
configurations, custom resources) get metadata validation with DNS-1123 subdomain names.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import Any, Final

from grove_sim.validation.api_kinds import (
    validate_cluster_role,
    validate_cluster_role_binding,
    validate_hpa,
    validate_lease,
    validate_priority_class,
    validate_priority_class_update,
    validate_role,
    validate_role_binding,
    validate_role_binding_update,
)
from grove_sim.validation.config import (
    validate_config_map,
    validate_config_map_update,
    validate_secret,
    validate_secret_update,
)
from grove_sim.validation.core_kinds import validate_event, validate_events_v1_event, validate_namespace, validate_node
from grove_sim.validation.field import Cause, get_map
from grove_sim.validation.meta import (
    DNS1035_NAMES,
    LABEL_NAMES,
    PATH_SEGMENT_NAMES,
    SUBDOMAIN_NAMES,
    NameRule,
    validate_object_meta,
)
from grove_sim.validation.pod import (
    validate_pod,
    validate_pod_changes,
    validate_pod_create,
    validate_pod_per_pod_fields,
)
from grove_sim.validation.pod_update import validate_pod_update
from grove_sim.validation.service import validate_service
from grove_sim.validation.workloads import (
    validate_deployment,
    validate_pdb,
    validate_replica_set,
    validate_selector_unchanged,
)

__all__ = ["KindRules", "validate"]

Check = Callable[[dict[str, Any]], list[Cause]]
UpdateCheck = Callable[[dict[str, Any], dict[str, Any]], list[Cause]]


@dataclass(frozen=True, slots=True)
class KindRules:
    """The validation of one kind."""

    names: NameRule = SUBDOMAIN_NAMES
    always: Check | None = None
    """The kind's own rules on every write."""
    admitted: Check | None = None
    """What to check instead of ``always`` when the object's spec equals one admitted before."""
    changes: UpdateCheck | None = None
    """What to check instead of ``always`` on update, given the stored object (valid when stored)."""
    on_create: Check | None = None
    on_update: UpdateCheck | None = None
    metadata: bool = True


_DEFAULT: Final = KindRules()
_RULES: Final[dict[tuple[str, str], KindRules]] = {
    ("", "pods"): KindRules(
        always=validate_pod,
        admitted=validate_pod_per_pod_fields,
        changes=validate_pod_changes,
        on_create=validate_pod_create,
        on_update=validate_pod_update,
    ),
    ("", "services"): KindRules(names=DNS1035_NAMES, always=validate_service),
    ("", "configmaps"): KindRules(always=validate_config_map, on_update=validate_config_map_update),
    ("", "secrets"): KindRules(always=validate_secret, on_update=validate_secret_update),
    ("", "namespaces"): KindRules(names=LABEL_NAMES, always=validate_namespace),
    ("", "nodes"): KindRules(always=validate_node),
    ("", "events"): KindRules(always=validate_event, metadata=False),
    ("events.k8s.io", "events"): KindRules(always=validate_events_v1_event),
    ("coordination.k8s.io", "leases"): KindRules(always=validate_lease),
    ("scheduling.k8s.io", "priorityclasses"): KindRules(
        always=validate_priority_class, on_update=validate_priority_class_update
    ),
    ("rbac.authorization.k8s.io", "roles"): KindRules(names=PATH_SEGMENT_NAMES, always=validate_role),
    ("rbac.authorization.k8s.io", "rolebindings"): KindRules(
        names=PATH_SEGMENT_NAMES, always=validate_role_binding, on_update=validate_role_binding_update
    ),
    ("rbac.authorization.k8s.io", "clusterroles"): KindRules(names=PATH_SEGMENT_NAMES, always=validate_cluster_role),
    ("rbac.authorization.k8s.io", "clusterrolebindings"): KindRules(
        names=PATH_SEGMENT_NAMES, always=validate_cluster_role_binding, on_update=validate_role_binding_update
    ),
    ("autoscaling", "horizontalpodautoscalers"): KindRules(always=validate_hpa),
    ("apps", "deployments"): KindRules(always=validate_deployment, on_update=validate_selector_unchanged),
    ("apps", "replicasets"): KindRules(always=validate_replica_set, on_update=validate_selector_unchanged),
    ("policy", "poddisruptionbudgets"): KindRules(always=validate_pdb),
}


def validate(
    key: tuple[str, str],
    obj: dict[str, Any],
    old: dict[str, Any] | None,
    *,
    builtin: bool,
    admitted_spec: bool = False,
) -> list[Cause]:
    """The causes that make kube-apiserver refuse ``obj`` (stored under ``key``; ``old`` on update).

    ``admitted_spec``: the spec, but for its per-object fields, equals one admitted before (so only those fields
    need checking). Raises ``DecodeError`` for a body its decoder would already have refused.
    """
    rules = _RULES.get(key, _DEFAULT) if builtin else _DEFAULT
    causes: list[Cause] = []
    if rules.metadata:
        old_meta = old.get("metadata") if old is not None else None
        causes += validate_object_meta(get_map(obj, "metadata", ""), rules.names, builtin=builtin, old=old_meta)
    if old is not None and rules.changes is not None:
        causes += rules.changes(obj, old)
    elif admitted_spec and rules.admitted is not None:
        causes += rules.admitted(obj)
    elif rules.always is not None:
        causes += rules.always(obj)
    if old is None:
        if rules.on_create is not None:
            causes += rules.on_create(obj)
    elif rules.on_update is not None:
        causes += rules.on_update(obj, old)
    return causes

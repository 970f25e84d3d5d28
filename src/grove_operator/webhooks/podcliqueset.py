"""The PodCliqueSet defaulting and validating webhooks.

Defaulting runs on CREATE and UPDATE, as upstream's does, so every default of §3.12 is stored (visible in
``kubectl get -o yaml``) and a re-applied manifest that leaves a default out keeps it instead of being refused for
changing it. Validation refuses with a 422 ``Invalid`` Status naming every offending field, and warns (restartPolicy,
a preferred domain coarser than the required one) without refusing.

On UPDATE the create/update rules and the update-only rules run only when the spec changed beyond the defaults the
defaulting webhook just filled in: a write that touches metadata alone (labels, the operator's finalizer going on
or off) is never refused for a spec stored before the webhook ran (webhooks off, a ``failurePolicy: Ignore``
outage), so such an object can still be labelled and deleted; the reconciler reports what is wrong with it.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from typing import Any

from grove_api import ClusterTopologyBinding
from grove_operator import admission, defaults, validation
from grove_operator.config import OperatorConfig
from grove_operator.validation import FieldError
from grove_runtime.webhook.handlers import Denied, Warnings
from grove_runtime.webhook.review import AdmissionRequest, invalid_status

__all__ = ["PodCliqueSetDefaulter", "PodCliqueSetValidator", "refuse"]

Obj = dict[str, Any]
Topologies = Callable[[], Mapping[str, ClusterTopologyBinding]]


def refuse(kind: str, obj: Obj, errors: list[FieldError], warnings: Warnings = ()) -> None:
    """Raise the 422 denial naming every field of ``errors`` (nothing when there are none)."""
    if errors:
        name = str((obj.get("metadata") or {}).get("name") or "")
        causes = [(e.field, e.type, e.detail) for e in errors]
        raise Denied(invalid_status("grove.io", kind, name, causes), warnings)


class PodCliqueSetDefaulter:
    """Fills the webhook defaults of §3.12 (the CRD schema's were applied by the API server already)."""

    async def default(self, request: AdmissionRequest, obj: Obj) -> Warnings:
        """Default ``obj`` in place. A body of the wrong shape (``spec: "x"``, ``podSpec: null``) is left as it is:
        mutation runs before the API server's schema validation, which refuses it naming the field (a crash here
        would answer a 500 instead)."""
        try:
            defaulted = defaults.apply_webhook_defaults(obj)
        except (AttributeError, TypeError, KeyError, ValueError):
            return ()
        obj.clear()
        obj.update(defaulted)
        return ()


class PodCliqueSetValidator:
    """The create, update and update-only rules, with this operator's scheduler and topology settings."""

    def __init__(self, config: OperatorConfig, topologies: Topologies) -> None:
        self.config = config
        self.topologies = topologies

    def _rules(self, obj: Obj, *, create: bool) -> list[FieldError]:
        errors = validation.validate_podcliqueset(
            obj,
            create=create,
            default_scheduler_name=self.config.default_scheduler_name,
            topologies=self.topologies() if create else None,
            topology_aware=self.config.topology_aware_scheduling,
        )
        return errors or admission.pod_bound_errors(obj, self.config.max_pods_per_podcliqueset)

    async def validate_create(self, request: AdmissionRequest, obj: Obj) -> Warnings:
        """All rules, create-only ones included."""
        warnings = validation.podcliqueset_warnings(obj, self.topologies())
        refuse("PodCliqueSet", obj, self._rules(obj, create=True), warnings)
        return warnings

    async def validate_update(self, request: AdmissionRequest, old: Obj, new: Obj) -> Warnings:
        """The create/update rules on the new object, then what may not change."""
        if new.get("spec") == defaults.apply_webhook_defaults(old).get("spec"):
            return ()
        warnings = validation.podcliqueset_warnings(new, self.topologies())
        errors = self._rules(new, create=False)
        if not errors:
            errors = validation.validate_podcliqueset_update(
                new, old, default_scheduler_name=self.config.default_scheduler_name
            )
        refuse("PodCliqueSet", new, errors, warnings)
        return warnings

    async def validate_delete(self, request: AdmissionRequest, obj: Obj) -> Warnings:
        """Deletion is always allowed."""
        return ()

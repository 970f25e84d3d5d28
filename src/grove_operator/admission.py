"""What a PodCliqueSet must satisfy before the operator acts on it: the validating webhook's rules and the
operator's sanity bound on the number of pods.

Why in the operator as well as in its admission webhook (`grove_operator.webhooks`, which calls these same
functions): a PodCliqueSet can still reach the store unchecked (webhooks turned off, a `failurePolicy: Ignore`
outage), and the reconcilers must refuse it themselves, visibly (`status.lastErrors` naming the field, a Warning
Event) and cheaply (no work proportional to a number in its spec).

The bound (`OperatorConfig.max_pods_per_podcliqueset`, flag `--max-pods-per-podcliqueset`, default 100,000) is
checked per object: a PodCliqueSet's template (replicas x the pods of one replica), a PodCliqueScalingGroup
(replicas x the pods of one of its replicas) and a PodClique (replicas) may each ask for at most that many pods.
It is a sanity bound against typos such as `replicas: 100000000`, not a quota.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import pydantic

from grove_api import PodCliqueScalingGroupConfig, PodCliqueSet, PodCliqueSetTemplateSpec
from grove_operator import defaults, validation
from grove_operator._fieldchecks import FieldError
from grove_operator.parsed import ParseMemo, defaulted_podcliqueset

__all__ = [
    "group_replica_pods",
    "pod_bound_error",
    "pod_bound_errors",
    "replica_pods",
    "spec_errors",
    "summarize",
]

Obj = dict[str, Any]
MAX_REPORTED = 5
"""Field errors named in one `lastErrors` description (the rest are counted)."""


def group_replica_pods(template: PodCliqueSetTemplateSpec, group: PodCliqueScalingGroupConfig) -> int:
    """Pods of one replica of a scaling group: the template replicas of its member cliques."""
    return sum(c.spec.replicas for name in group.clique_names if (c := template.clique(name)) is not None)


def replica_pods(template: PodCliqueSetTemplateSpec) -> int:
    """Pods of one PodCliqueSet replica as the template asks: standalone cliques plus scaling-group members."""
    grouped = {name for g in template.pod_clique_scaling_groups or () for name in g.clique_names}
    standalone = sum(c.spec.replicas for c in template.cliques if c.name not in grouped)
    groups = sum(
        g.effective_replicas() * group_replica_pods(template, g) for g in template.pod_clique_scaling_groups or ()
    )
    return standalone + groups


def pod_bound_error(field: str, pods: int, maximum: int, what: str) -> FieldError | None:
    """The error for an object at `field` asking for `pods` pods (`what` explains the count), if over `maximum`."""
    if pods <= maximum:
        return None
    return FieldError(
        field,
        "Invalid",
        f"{what} make {pods} pods, more than this operator's maximum of {maximum} per PodCliqueSet "
        "(--max-pods-per-podcliqueset)",
    )


def _bound_errors(pcs: PodCliqueSet, maximum: int) -> list[FieldError]:
    replicas = pcs.spec.replicas or 0
    bound = pod_bound_error(
        "spec.replicas", replicas * replica_pods(pcs.spec.template), maximum, f"{replicas} replicas of the template"
    )
    return [bound] if bound is not None else []


def _spec_errors(raw: Obj, pcs: PodCliqueSet, maximum: int, default_scheduler_name: str) -> list[FieldError]:
    errors = validation.validate_podcliqueset(
        defaults.default_podcliqueset(raw), create=False, default_scheduler_name=default_scheduler_name
    )
    if errors:
        return errors  # the count below assumes a valid template (e.g. minAvailable <= replicas)
    return _bound_errors(pcs, maximum)


def pod_bound_errors(valid: Obj, maximum: int) -> list[FieldError]:
    """The pod bound of a PodCliqueSet that passed validation (the webhook refuses what the reconciler would)."""
    try:
        pcs = defaulted_podcliqueset(valid)
    except pydantic.ValidationError:
        return []
    return _bound_errors(pcs, maximum)


def spec_errors(memo: ParseMemo, raw: Obj, *, maximum: int, default_scheduler_name: str) -> list[FieldError]:
    """Why the cached PodCliqueSet `raw` cannot be reconciled (empty when it can); memoised like its parse."""
    pcs = memo.podcliqueset(raw)
    return memo.parse_with(
        (_spec_errors, maximum, default_scheduler_name),
        lambda obj: _spec_errors(obj, pcs, maximum, default_scheduler_name),
        raw,
    )


def summarize(errors: Sequence[FieldError]) -> str:
    """One stable line naming the fields (at most `MAX_REPORTED`, the rest counted)."""
    shown = "; ".join(str(e) for e in errors[:MAX_REPORTED])
    rest = len(errors) - MAX_REPORTED
    return f"{shown}; and {rest} more" if rest > 0 else shown

"""Which admission webhooks a write goes to: the stored configurations compiled into ``Hook``s and matched.

kube-apiserver's rules, as ``admission/plugin/webhook`` implements them:

* configurations in name order, webhooks in their listed order;
* ``rules``: operation, API group, version, ``resources`` (``pods``, ``pods/status``, ``*/status``, ``pods/*``,
  ``*``, ``*/*``: a resource without ``/`` names only the main resource) and ``scope`` (``Namespaced``,
  ``Cluster``, ``*``; a Namespace object counts as cluster-scoped);
* ``namespaceSelector`` against the labels of the request's namespace (of the object itself for a Namespace; never
  excludes other cluster-scoped kinds); ``objectSelector`` against the labels of the new or the old object;
* ``matchConditions``: CEL over ``object``, ``oldObject`` and ``request``; all must be true. An expression that
  uses ``authorizer`` (not available here) or fails to evaluate counts as an error, which ``failurePolicy`` decides
  (``Fail``: the write is refused; ``Ignore``: the webhook is skipped).

``matchPolicy: Equivalent`` has nothing to convert: every kind is served in one version here.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from typing import Any

from grove_sim.machinery.label_selectors import LabelSelector, SelectorError, label_selector_from_dict
from grove_sim.registry.steps import AdmissionPoint
from grove_sim.schema import cel

__all__ = ["MUTATING_KEY", "VALIDATING_KEY", "Hook", "MatchError", "compile_hooks", "namespace_labels"]

MUTATING_KEY = ("admissionregistration.k8s.io", "mutatingwebhookconfigurations")
VALIDATING_KEY = ("admissionregistration.k8s.io", "validatingwebhookconfigurations")
_NAMESPACES = ("", "namespaces")
DEFAULT_TIMEOUT = 10.0
Obj = dict[str, Any]


class MatchError(Exception):
    """A webhook's selectors or match conditions could not be evaluated (``failurePolicy`` decides)."""


def _strings(value: Any) -> frozenset[str]:
    return frozenset(str(v) for v in value) if isinstance(value, list) else frozenset()


@dataclass(frozen=True, slots=True)
class Rule:
    """One ``RuleWithOperations``."""

    operations: frozenset[str]
    groups: frozenset[str]
    versions: frozenset[str]
    resources: tuple[tuple[str, str], ...]
    scope: str

    @classmethod
    def parse(cls, raw: Mapping[str, Any]) -> Rule:
        """The rule of a configuration entry."""
        resources = tuple((res, sub) for res, _, sub in (str(r).partition("/") for r in raw.get("resources") or ()))
        return cls(
            _strings(raw.get("operations")),
            _strings(raw.get("apiGroups")),
            _strings(raw.get("apiVersions")),
            resources,
            str(raw.get("scope") or "*"),
        )

    def matches(self, point: AdmissionPoint) -> bool:
        """Whether the write at ``point`` falls under this rule."""
        info = point.info
        if not (point.operation in self.operations or "*" in self.operations):
            return False
        if not (info.group in self.groups or "*" in self.groups):
            return False
        if not (info.version in self.versions or "*" in self.versions):
            return False
        is_namespace = info.key == _NAMESPACES
        if self.scope == "Cluster" and point.namespace and not is_namespace:
            return False
        if self.scope == "Namespaced" and (is_namespace or not point.namespace):
            return False
        sub = point.subresource or ""
        return any((res in ("*", info.plural)) and (rsub in ("*", sub)) for res, rsub in self.resources)


@dataclass(frozen=True, slots=True)
class Hook:
    """One webhook of a Mutating/ValidatingWebhookConfiguration, compiled for matching and calling."""

    configuration: str
    name: str
    mutating: bool
    rules: tuple[Rule, ...]
    client_config: Obj
    failure_policy: str
    side_effects: str
    timeout: float
    reinvoke: bool
    namespace_selector: LabelSelector | None
    object_selector: LabelSelector | None
    conditions: tuple[tuple[str, cel.Program], ...]
    problem: str | None = None
    """Why the webhook cannot be matched (a bad selector or condition): an error every matching write meets."""
    key: tuple[str, str, int] = field(default=("", "", 0))
    """(configuration, webhook name, position): identifies the webhook for reinvocation."""

    @property
    def fails_closed(self) -> bool:
        """``failurePolicy: Fail`` (the v1 default)."""
        return self.failure_policy != "Ignore"

    def matches(self, point: AdmissionPoint, ns_labels: Mapping[str, str] | None, request: Callable[[], Obj]) -> bool:
        """Rules, selectors and match conditions; raises :class:`MatchError` when they cannot be evaluated."""
        if not any(rule.matches(point) for rule in self.rules):
            return False
        if self.problem is not None:
            raise MatchError(self.problem)
        selector = self.namespace_selector
        if selector is not None and ns_labels is not None and not selector.matches(ns_labels):
            return False
        if self.object_selector is not None:
            labels = [_labels(o) for o in (point.obj, point.old) if o is not None]
            if not any(self.object_selector.matches(lbls) for lbls in labels):
                return False
        return self._conditions_hold(point, request)

    def _conditions_hold(self, point: AdmissionPoint, request: Callable[[], Obj]) -> bool:
        if not self.conditions:
            return True
        variables = {"object": point.obj, "oldObject": point.old, "request": request()}
        for name, program in self.conditions:
            try:
                result = program.evaluate(variables)
            except cel.CelError as exc:
                raise MatchError(f"failed evaluating match condition {name!r}: {exc}") from exc
            if result is not True:
                if result is not False:
                    raise MatchError(f"match condition {name!r} did not evaluate to a bool")
                return False
        return True


def _labels(obj: Obj) -> Mapping[str, str]:
    labels = (obj.get("metadata") or {}).get("labels")
    return labels if isinstance(labels, dict) else {}


def namespace_labels(point: AdmissionPoint, namespace: Obj | None) -> Mapping[str, str] | None:
    """The labels a ``namespaceSelector`` is matched against; None when it does not apply (cluster-scoped kinds)."""
    if point.info.key == _NAMESPACES:
        obj = point.obj if point.obj is not None else point.old
        return _labels(obj) if obj is not None else {}
    if not point.namespace:
        return None
    return _labels(namespace) if namespace is not None else {}


def _selector(raw: Any) -> LabelSelector | None:
    if not isinstance(raw, dict) or not raw:
        return None
    selector = label_selector_from_dict(raw)
    return None if selector.empty else selector


def _conditions(raw: Any) -> tuple[tuple[str, cel.Program], ...]:
    compiled = []
    for entry in raw if isinstance(raw, list) else ():
        name = str((entry or {}).get("name") or "")
        program = cel.compile(str((entry or {}).get("expression") or ""))
        if "authorizer" in program.references:
            raise cel.CelError(f"match condition {name!r} uses the authorizer, which grove-sim does not provide")
        compiled.append((name, program))
    return tuple(compiled)


def _hook(configuration: str, index: int, raw: Obj, mutating: bool) -> Hook:
    name = str(raw.get("name") or "")
    problem = None
    try:
        namespace_selector = _selector(raw.get("namespaceSelector"))
        object_selector = _selector(raw.get("objectSelector"))
        conditions = _conditions(raw.get("matchConditions"))
    except (SelectorError, cel.CelError) as exc:
        namespace_selector = object_selector = None
        conditions = ()
        problem = str(exc)
    timeout = raw.get("timeoutSeconds")
    return Hook(
        configuration=configuration,
        name=name,
        mutating=mutating,
        rules=tuple(Rule.parse(r) for r in raw.get("rules") or () if isinstance(r, dict)),
        client_config=dict(raw.get("clientConfig") or {}),
        failure_policy=str(raw.get("failurePolicy") or "Fail"),
        side_effects=str(raw.get("sideEffects") or "Unknown"),
        timeout=float(timeout) if isinstance(timeout, int) and timeout > 0 else DEFAULT_TIMEOUT,
        reinvoke=mutating and raw.get("reinvocationPolicy") == "IfNeeded",
        namespace_selector=namespace_selector,
        object_selector=object_selector,
        conditions=conditions,
        problem=problem,
        key=(configuration, name, index),
    )


def compile_hooks(configurations: list[Obj], *, mutating: bool) -> list[Hook]:
    """Every webhook of the configurations, configurations in name order, webhooks in listed order."""
    hooks: list[Hook] = []
    for config in sorted(configurations, key=lambda c: str(c["metadata"].get("name") or "")):
        name = str(config["metadata"].get("name") or "")
        for index, raw in enumerate(config.get("webhooks") or ()):
            if isinstance(raw, dict):
                hooks.append(_hook(name, index, raw, mutating))
    return hooks

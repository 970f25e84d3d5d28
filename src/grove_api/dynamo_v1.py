"""Grove's first API, `grove.dynamo.ai/v1`: PodGangSet (`pgs`) and PodClique, served beside `grove.io/v1alpha1`.

Grove's original README described these two kinds and users still copy them: a PodGangSet is one pod template,
`replicas` copies of it and a gang minimum (`minAvailable`, "all pods must be schedulable" when equal to the
replicas), plus node affinity for every pod; a PodClique selects pods by label and adds pod-affinity terms
(`topology`) to the ones it selects when they are created. The operator turns a PodGangSet into its pods and one
PodGang; `docs/first-api.md` maps every field onto `grove.io/v1alpha1`.

The kind is called PodClique in this group too, so the model is `DynamoPodClique` here; it has no short name
(`pclq` stays upstream's PodClique). Label selectors are evaluated here, once, for the operator and the plugin.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Annotated, Any, ClassVar, Literal

from pydantic import Field

from grove_api._meta import Condition, GroveModel, Int32, Int64, ObjectMeta
from grove_api.common import LastError

__all__ = [
    "ANNOTATION_PODCLIQUES",
    "API_VERSION",
    "FINALIZER_PGS",
    "GROUP",
    "LABEL_PODGANGSET",
    "LABEL_POD_INDEX",
    "DynamoPodClique",
    "DynamoPodCliqueSpec",
    "DynamoPodCliqueStatus",
    "LabelSelector",
    "LabelSelectorRequirement",
    "PodAffinityTerm",
    "PodCliqueTopology",
    "PodGangSet",
    "PodGangSetScheduling",
    "PodGangSetSpec",
    "PodGangSetStatus",
    "PodTemplate",
    "PodTemplateMetadata",
    "WeightedPodAffinityTerm",
]

GROUP = "grove.dynamo.ai"
API_VERSION = "grove.dynamo.ai/v1"
LABEL_PODGANGSET = "grove.dynamo.ai/podgangset"
"""On every pod and the PodGang of a PodGangSet: the PodGangSet's name (the scale subresource's selector)."""
LABEL_POD_INDEX = "grove.dynamo.ai/pod-index"
ANNOTATION_PODCLIQUES = "grove.dynamo.ai/podcliques"
"""On a pod: the PodCliques (comma-separated names) whose topology terms it was created with."""
FINALIZER_PGS = "grove.dynamo.ai/podgangset"

SelectorOperator = Literal["In", "NotIn", "Exists", "DoesNotExist"]


class LabelSelectorRequirement(GroveModel):
    """One `matchExpressions` entry of a metav1.LabelSelector."""

    key: Annotated[str, Field(min_length=1)]
    operator: SelectorOperator
    values: list[str] | None = None

    def matches(self, labels: Mapping[str, str]) -> bool:
        """Kubernetes semantics: NotIn and DoesNotExist hold for a missing key."""
        present = self.key in labels
        if self.operator == "Exists":
            return present
        if self.operator == "DoesNotExist":
            return not present
        inside = present and labels[self.key] in (self.values or ())
        return inside if self.operator == "In" else not inside


class LabelSelector(GroveModel):
    """metav1.LabelSelector; an empty selector selects everything."""

    match_labels: dict[str, str] | None = None
    match_expressions: list[LabelSelectorRequirement] | None = None

    def matches(self, labels: Mapping[str, str]) -> bool:
        """Whether `labels` satisfy every pair and every expression."""
        if any(labels.get(k) != v for k, v in (self.match_labels or {}).items()):
            return False
        return all(r.matches(labels) for r in self.match_expressions or ())

    def problems(self, path: str) -> list[tuple[str, str]]:
        """(field, message) for what kube-apiserver refuses in a selector and a CRD schema cannot say."""
        found: list[tuple[str, str]] = []
        for i, req in enumerate(self.match_expressions or ()):
            where = f"{path}.matchExpressions[{i}].values"
            if req.operator in ("In", "NotIn") and not req.values:
                found.append((where, "must be specified when `operator` is 'In' or 'NotIn'"))
            if req.operator in ("Exists", "DoesNotExist") and req.values:
                found.append((where, "may not be specified when `operator` is 'Exists' or 'DoesNotExist'"))
        return found


class PodAffinityTerm(GroveModel):
    """core/v1 PodAffinityTerm: pods matching `labelSelector` in `namespaces`, within one `topologyKey` domain."""

    label_selector: LabelSelector | None = None
    topology_key: Annotated[str, Field(min_length=1)]
    namespaces: list[str] | None = None
    namespace_selector: LabelSelector | None = None


class WeightedPodAffinityTerm(GroveModel):
    """A preferred pod-affinity term and its weight (1..100), as in core/v1."""

    weight: Annotated[Int32, Field(ge=1, le=100)]
    pod_affinity_term: PodAffinityTerm


class PodCliqueTopology(GroveModel):
    """Pod-affinity rules in core/v1 `podAffinity` form, added to the pods the PodClique selects."""

    required_during_scheduling_ignored_during_execution: list[PodAffinityTerm] | None = None
    preferred_during_scheduling_ignored_during_execution: list[WeightedPodAffinityTerm] | None = None

    def pod_affinity(self) -> dict[str, list[dict[str, Any]]]:
        """The terms as a `podAffinity` fragment (wire form), empty lists left out."""
        out: dict[str, list[dict[str, Any]]] = {}
        required = self.required_during_scheduling_ignored_during_execution
        preferred = self.preferred_during_scheduling_ignored_during_execution
        if required:
            out["requiredDuringSchedulingIgnoredDuringExecution"] = [_wire(t) for t in required]
        if preferred:
            out["preferredDuringSchedulingIgnoredDuringExecution"] = [_wire(t) for t in preferred]
        return out


def _wire(model: GroveModel) -> dict[str, Any]:
    dumped: dict[str, Any] = model.model_dump(by_alias=True, exclude_none=True, mode="json")
    return dumped


class DynamoPodCliqueSpec(GroveModel):
    """Which pods (`selector`, in the PodClique's namespace) get which pod-affinity terms (`topology`)."""

    selector: LabelSelector
    topology: PodCliqueTopology | None = None


class DynamoPodCliqueStatus(GroveModel):
    """How many PodGangSet pods the selector matches now and how many were created with the PodClique's terms."""

    observed_generation: Int64 | None = None
    matched_pods: Int32 = 0
    applied_pods: Int32 = 0


class DynamoPodClique(GroveModel):
    """A `grove.dynamo.ai/v1` PodClique as stored by the API server."""

    API_VERSION: ClassVar[str] = API_VERSION
    KIND: ClassVar[str] = "PodClique"

    api_version: Literal["grove.dynamo.ai/v1"] = "grove.dynamo.ai/v1"
    kind: Literal["PodClique"] = "PodClique"
    metadata: ObjectMeta = Field(default_factory=ObjectMeta)
    spec: DynamoPodCliqueSpec
    status: DynamoPodCliqueStatus | None = None


class PodTemplateMetadata(GroveModel):
    """The part of a pod template's metadata that reaches the pods."""

    labels: dict[str, str] | None = None
    annotations: dict[str, str] | None = None


class PodTemplate(GroveModel):
    """core/v1 PodTemplateSpec: pod metadata and a PodSpec (validated by the API server at pod creation)."""

    metadata: PodTemplateMetadata | None = None
    spec: dict[str, Any]


class PodGangSetScheduling(GroveModel):
    """Placement rules for every pod: `nodeAffinity` (core/v1 NodeAffinity) is merged into each pod's affinity."""

    node_affinity: dict[str, Any] | None = None


class PodGangSetSpec(GroveModel):
    """`replicas` pods from `template`, of which at least `minAvailable` must be placed together (or none)."""

    template: PodTemplate
    replicas: Annotated[Int32, Field(ge=0)] = 1
    min_available: Annotated[Int32, Field(ge=0)] | None = None
    scheduling: PodGangSetScheduling | None = None

    def effective_min_available(self) -> int:
        """The gang minimum: `minAvailable`, all replicas when unset, never more than the replicas."""
        return self.replicas if self.min_available is None else min(self.min_available, self.replicas)


class PodGangSetStatus(GroveModel):
    """Pods counted by phase of their life, whether the gang is placed, and the conditions that say why not."""

    observed_generation: Int64 | None = None
    replicas: Int32 = 0
    ready_replicas: Int32 = 0
    scheduled_replicas: Int32 = 0
    scheduled: bool = False
    selector: str | None = None
    conditions: list[Condition] | None = None
    last_errors: list[LastError] | None = None


class PodGangSet(GroveModel):
    """A `grove.dynamo.ai/v1` PodGangSet as stored by the API server."""

    API_VERSION: ClassVar[str] = API_VERSION
    KIND: ClassVar[str] = "PodGangSet"

    api_version: Literal["grove.dynamo.ai/v1"] = "grove.dynamo.ai/v1"
    kind: Literal["PodGangSet"] = "PodGangSet"
    metadata: ObjectMeta = Field(default_factory=ObjectMeta)
    spec: PodGangSetSpec
    status: PodGangSetStatus | None = None

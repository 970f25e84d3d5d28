"""Value types crossing the boundary of the pure placement function.

The scheduler loop translates Kubernetes objects into these frozen dataclasses, calls
`grove_sched.placement.place`, and turns the result back into bindings or a PodGang condition. Keeping them
free of Kubernetes client types is what lets `place` stay pure and testable without a cluster. Resource
quantities are plain integers: cpu in millicores, memory in bytes, everything else in units.
"""

from __future__ import annotations

import enum
from collections.abc import Mapping
from dataclasses import dataclass, field
from types import MappingProxyType
from typing import Literal

CPU = "cpu"
MEMORY = "memory"
PODS = "pods"
GPU = "nvidia.com/gpu"
LOOKAHEAD_PATH = "lookahead"
"""`SolverStats.path` of a placement the queue look-ahead chose over `place`'s answer (`place_ahead`)."""
BASE_RESOURCES: tuple[str, ...] = (CPU, MEMORY, PODS, GPU)
HOSTNAME_KEY = "kubernetes.io/hostname"
ZONE_KEY = "topology.kubernetes.io/zone"
BLOCK_KEY = "topology.kubernetes.io/block"
RACK_KEY = "topology.kubernetes.io/rack"
DEFAULT_LEVELS: tuple[str, ...] = (ZONE_KEY, BLOCK_KEY, RACK_KEY, HOSTNAME_KEY)
"""The hierarchy assumed when a gang's PodGang names no ClusterTopologyBinding the scheduler knows (broadest first):
the well-known zone key, then block and rack keys in the same `topology.kubernetes.io/` namespace, then the host."""

_EMPTY: Mapping[str, str] = MappingProxyType({})
_NO_RESOURCES: Mapping[str, int] = MappingProxyType({})


@dataclass(frozen=True, slots=True)
class Taint:
    """A node taint; only NoSchedule and NoExecute taints filter nodes."""

    key: str
    value: str = ""
    effect: str = "NoSchedule"


@dataclass(frozen=True, slots=True)
class Toleration:
    """A pod toleration with Kubernetes matching rules (empty key + Exists tolerates everything)."""

    key: str = ""
    operator: str = "Equal"
    value: str = ""
    effect: str = ""


@dataclass(frozen=True, slots=True)
class Requirement:
    """One matchExpression: operator is In, NotIn, Exists, DoesNotExist, Gt or Lt (Gt/Lt nodes only)."""

    key: str
    operator: str
    values: tuple[str, ...] = ()


@dataclass(frozen=True, slots=True)
class NodeSelectorTerm:
    """Requirements ANDed together; `match_fields` supports only `metadata.name`."""

    match_expressions: tuple[Requirement, ...] = ()
    match_fields: tuple[Requirement, ...] = ()


@dataclass(frozen=True, slots=True)
class PreferredNodeTerm:
    """A preferred node affinity term and its weight (1..100)."""

    weight: int
    term: NodeSelectorTerm


@dataclass(frozen=True, slots=True)
class LabelSelector:
    """matchLabels plus matchExpressions (In, NotIn, Exists, DoesNotExist), as for pods."""

    match_labels: Mapping[str, str] = field(default_factory=lambda: _EMPTY)
    match_expressions: tuple[Requirement, ...] = ()


@dataclass(frozen=True, slots=True)
class PodAffinityTerm:
    """Pods matching `selector` in `namespaces` (empty = the gang's namespace), per `topology_key` domain."""

    selector: LabelSelector
    topology_key: str
    namespaces: tuple[str, ...] = ()


@dataclass(frozen=True, slots=True)
class WeightedPodAffinityTerm:
    """A preferred pod (anti-)affinity term and its weight (1..100)."""

    weight: int
    term: PodAffinityTerm


@dataclass(frozen=True, slots=True)
class NodeInfo:
    """A node as the scheduler cache sees it; free capacity is derived from the bound pods."""

    name: str
    labels: Mapping[str, str] = field(default_factory=lambda: _EMPTY)
    allocatable: Mapping[str, int] = field(default_factory=lambda: _NO_RESOURCES)
    taints: tuple[Taint, ...] = ()
    unschedulable: bool = False


@dataclass(frozen=True, slots=True)
class BoundPod:
    """A pod bound (or assumed) to a node: it consumes resources and takes part in inter-pod affinity."""

    name: str
    namespace: str
    node: str
    labels: Mapping[str, str] = field(default_factory=lambda: _EMPTY)
    requests: Mapping[str, int] = field(default_factory=lambda: _NO_RESOURCES)
    anti_affinity: tuple[PodAffinityTerm, ...] = ()


@dataclass(frozen=True, slots=True)
class PodRef:
    """One pod of a group; `requests` overrides the group template when pods differ."""

    name: str
    uid: str = ""
    requests: Mapping[str, int] | None = None


@dataclass(frozen=True, slots=True)
class TopologyConstraint:
    """Node label keys: required = hard (one domain), preferred = soft (as few domains as possible)."""

    required_key: str | None = None
    preferred_key: str | None = None


@dataclass(frozen=True, slots=True)
class PodGroup:
    """One PodClique of the gang: at least `min_replicas` of `pods` must be placed together with the gang."""

    name: str
    pods: tuple[PodRef, ...]
    min_replicas: int
    requests: Mapping[str, int] = field(default_factory=lambda: _NO_RESOURCES)
    labels: Mapping[str, str] = field(default_factory=lambda: _EMPTY)
    node_selector: Mapping[str, str] = field(default_factory=lambda: _EMPTY)
    required_node_terms: tuple[NodeSelectorTerm, ...] = ()
    preferred_node_terms: tuple[PreferredNodeTerm, ...] = ()
    tolerations: tuple[Toleration, ...] = ()
    pod_affinity: tuple[PodAffinityTerm, ...] = ()
    pod_anti_affinity: tuple[PodAffinityTerm, ...] = ()
    preferred_pod_affinity: tuple[WeightedPodAffinityTerm, ...] = ()
    preferred_pod_anti_affinity: tuple[WeightedPodAffinityTerm, ...] = ()
    topology: TopologyConstraint = field(default_factory=TopologyConstraint)


@dataclass(frozen=True, slots=True)
class GroupConfig:
    """A topologyConstraintGroupConfig: a constraint over a subset of the gang's PodGroups."""

    name: str
    group_names: tuple[str, ...]
    topology: TopologyConstraint


@dataclass(frozen=True, slots=True)
class GangRequest:
    """A PodGang translated for placement; the gang is placed whole (min of every group) or not at all.

    `topology_levels` is the gang's topology hierarchy as node label keys, broadest first (the levels of the
    ClusterTopologyBinding its PodGang refers to); empty = `PlacementOptions.default_levels`.
    """

    name: str
    namespace: str
    groups: tuple[PodGroup, ...]
    priority: int = 0
    topology: TopologyConstraint = field(default_factory=TopologyConstraint)
    group_configs: tuple[GroupConfig, ...] = ()
    topology_levels: tuple[str, ...] = ()


@dataclass(frozen=True, slots=True)
class PlacementOptions:
    """Knobs of `place`; every limit is deterministic so the same input always gives the same answer.

    top_k_domains: candidate domains (best greedy plans first) that CP-SAT models.
    max_deterministic_time: CP-SAT budget in deterministic seconds (about 2-4 ms wall per 0.001 on 2 busy cores).
    random_seed: CP-SAT seed (the solver runs single-threaded).
    use_cpsat: False = greedy only (the baseline).
    max_patterns: above this many pods-per-node patterns, CP-SAT uses the per-node count model instead of classes.
    max_classes: above this many classes, CP-SAT refines only around the greedy plan's domains.
    max_greedy_domains: greedy runs in at most this many candidate domains (best-ranked first).
    default_levels: the topology hierarchy (node label keys, broadest first) of gangs that carry none
        (`GangRequest.topology_levels` empty); see `DEFAULT_LEVELS`.
    hostname_key: anti-affinity on this key is enforced per node.
    refine: how far CP-SAT may overrule greedy's best-fit plan. "structure": only when greedy found none or
        CP-SAT's plan touches fewer extra preferred domains or empty racks without choosing required domains with
        more room (rack-level best fit). "all": whenever CP-SAT's plan is cheaper
        under the whole objective (exact per gang). "auto" (default): for a gang that is one domain at the
        deciding level with no required sub-scope and no preferred scope (one rack, or no topology), greedy's
        best-fit picks the domain and CP-SAT packs it exactly ("all" over that one domain); "structure" for every
        other gang. On gang sequences exact per-gang packing placed fewer GPUs than greedy's best fit for gangs
        with per-role racks (it used up the racks later large roles needed), and more for one-rack / one-pod
        gangs (see docs/placement-score.md).
    """

    top_k_domains: int = 4
    max_deterministic_time: float = 0.03
    random_seed: int = 0
    use_cpsat: bool = True
    max_patterns: int = 512
    max_classes: int = 400
    max_greedy_domains: int = 16
    default_levels: tuple[str, ...] = DEFAULT_LEVELS
    hostname_key: str = HOSTNAME_KEY
    refine: Literal["structure", "all", "auto"] = "auto"


@dataclass(frozen=True, slots=True)
class ObjectiveBreakdown:
    """Raw values of the lexicographic tiers (lower is better for every value); `key` is the order itself.

    Tier order (docs/placement-score.md): missing extra pods; preferred-domain violations per topology level
    (broadest first: extra zones, then extra blocks, then extra racks, ... touched by each preferred scope up to
    its own level); empty domains opened at the narrowest topology level above the hosts; the free
    GPUs before placement of the domains the required scopes chose (domain-level best fit); fragmented GPUs (left
    on touched nodes without the CPU or memory a typical GPU pod needs); empty nodes opened; stranded GPUs; missed
    preference weight. `levels` names the hierarchy the vector tiers follow.
    """

    missing_extra_pods: int
    preferred_violations: tuple[int, ...]
    empty_domains_opened: tuple[int, ...]
    required_domain_free_gpus: int
    fragmented_gpus: int
    empty_nodes_opened: int
    stranded_gpus: int
    missed_preference_weight: int
    levels: tuple[str, ...] = ()

    @property
    def key(self) -> tuple[int, ...]:
        """Every tier value, most important first: compare two keys to compare two placements."""
        return (
            self.missing_extra_pods,
            *self.preferred_violations,
            *self.empty_domains_opened,
            self.required_domain_free_gpus,
            self.fragmented_gpus,
            self.empty_nodes_opened,
            self.stranded_gpus,
            self.missed_preference_weight,
        )

    @property
    def preferred_domain_violations(self) -> int:
        """Extra preferred domains touched, summed over the levels."""
        return sum(self.preferred_violations)

    @property
    def empty_domains(self) -> int:
        """Empty topology domains opened, summed over the levels."""
        return sum(self.empty_domains_opened)


@dataclass(frozen=True, slots=True)
class SolverStats:
    """How the answer was found.

    `path` is "greedy" or "cpsat" (whose plan was returned; "none" for Unschedulable). `status` is the CP-SAT
    status name (OPTIMAL, FEASIBLE, INFEASIBLE, UNKNOWN), or ZERO_COST when greedy found a zero-cost plan (optimal,
    no solve), AT_BOUND when greedy's plan meets a lower bound valid for every candidate domain of a required
    deciding level (optimal, no solve), AT_MODEL_BOUND when it meets a lower bound of every placement on the
    nodes CP-SAT would model (nothing there for CP-SAT to improve, no solve), GREEDY when CP-SAT was disabled or
    had nothing it may improve (refine="structure" and greedy's plan already at the structural floors), NONE when
    nothing ran. `model` is "class", "node" (per-node count fallback when patterns explode) or "none".
    `num_classes` counts decision units (classes or nodes).
    """

    path: str
    status: str
    deterministic_time: float
    num_classes: int
    num_variables: int
    num_patterns: int
    domains_candidate: int
    domains_modelled: int
    model: str
    stages: int = 0
    """Lexicographic CP-SAT stages solved (1 when the tiers' weights fit int64 together; 0: no solve)."""


@dataclass(frozen=True, slots=True)
class Placement:
    """A feasible gang placement.

    `score` (the PodGang's `placementScore`, docs/placement-score.md) is in [0, 1]. It is 1.0 when the plan is
    proven optimal (CP-SAT proved it over every candidate domain, its bound reaches the cost, or the cost is 0) or
    when every objective tier sits at a cheap lower bound for this gang and snapshot. Otherwise it falls in the
    band of the first tier (most important first) that might still be improved, tier i (0-based) giving
    [1 - 2^-i, 1 - 2^-(i+1)), lower inside the band the larger that tier's gap to its bound. A plan that is worse
    under the objective never scores higher than a better plan for the same gang and snapshot.
    """

    assignments: Mapping[str, str]  # pod name -> node name, for every placed pod (sorted by pod name)
    domains: Mapping[str, str]  # "<scope> <key>" -> chosen label value(s), e.g. "group decode ...rack" -> "r-07"
    objective: ObjectiveBreakdown
    score: float
    stats: SolverStats


class Code(enum.Enum):
    """How a scheduling step ended (kube-scheduler's framework codes); each says what happens to the gang next."""

    SUCCESS = "Success"
    """Done: the gang leaves the queue (an event may bring it back)."""
    UNSCHEDULABLE = "Unschedulable"
    """Does not fit now; the post-filter (preemption) may make room, else the gang waits for a cluster event."""
    UNSCHEDULABLE_AND_UNRESOLVABLE = "UnschedulableAndUnresolvable"
    """Nothing, not even preemption, can help (the gang itself is wrong, or asks more than any node has); the gang
    waits for a change to itself or to the nodes."""
    ERROR = "Error"
    """Something failed on the way (a bind, the cycle itself): retry after backoff."""


@dataclass(frozen=True, slots=True)
class Status:
    """The outcome of a scheduling step: a `Code` and the sentences that explain it to a person."""

    code: Code
    reasons: tuple[str, ...] = ()

    @property
    def ok(self) -> bool:
        """Whether the code is Success."""
        return self.code is Code.SUCCESS

    @property
    def message(self) -> str:
        """The reasons as one line (a condition message or an Event)."""
        return "; ".join(self.reasons)


@dataclass(frozen=True, slots=True)
class Unschedulable:
    """The gang cannot be placed now: `status` (Unschedulable or UnschedulableAndUnresolvable) says why."""

    status: Status
    stats: SolverStats | None = None

    @property
    def reasons(self) -> tuple[str, ...]:
        """Sentences a person can act on."""
        return self.status.reasons


PlacementResult = Placement | Unschedulable

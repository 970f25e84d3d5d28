"""The rollout arithmetic against a model of its ReplicaSets, pods and kubelets, in every interleaving hypothesis
finds: never more than ``replicas + maxSurge`` active pods, never fewer than ``replicas - maxUnavailable``
available ones, and the rollout always completes."""

from __future__ import annotations

from dataclasses import dataclass, field

from hypothesis import given, settings
from hypothesis import strategies as st

from grove_sim.controllers.workloads.rollout import ReplicaSetSize, recreate_step, rolling_step

PENDING, READY, TERMINATING = "pending", "ready", "terminating"


@dataclass
class ModelReplicaSet:
    name: str
    replicas: int
    pods: list[str] = field(default_factory=list)

    def size(self) -> ReplicaSetSize:
        active = [p for p in self.pods if p != TERMINATING]
        return ReplicaSetSize(self.name, self.replicas, len(active), active.count(READY), len(self.pods))

    def sync(self) -> None:
        """The ReplicaSet controller: create pending pods, or mark surplus terminating (unready first)."""
        active = [i for i, p in enumerate(self.pods) if p != TERMINATING]
        if len(active) < self.replicas:
            self.pods += [PENDING] * (self.replicas - len(active))
        surplus = len(active) - self.replicas
        for i in sorted(active, key=lambda i: self.pods[i] == READY)[: max(surplus, 0)]:
            self.pods[i] = TERMINATING


@dataclass
class Model:
    replicas: int
    surge: int
    unavailable: int
    old: ModelReplicaSet
    new: ModelReplicaSet | None = None

    def sets(self) -> list[ModelReplicaSet]:
        return [self.old] + ([self.new] if self.new is not None else [])

    def deploy(self, recreate: bool) -> None:
        new_size = self.new.size() if self.new is not None else ReplicaSetSize("", 0, 0, 0)
        if recreate:
            plan = recreate_step(self.replicas, self.new.size() if self.new else None, [self.old.size()])
        else:
            plan = rolling_step(self.replicas, self.surge, self.unavailable, new_size, [self.old.size()])
        if self.new is None and ("" in plan or not recreate):
            self.new = ModelReplicaSet("new", plan.pop("", 0))
        for rs in self.sets():
            rs.replicas = plan.get(rs.name, rs.replicas)

    def active(self) -> int:
        return sum(1 for rs in self.sets() for p in rs.pods if p != TERMINATING)

    def available(self) -> int:
        return sum(rs.pods.count(READY) for rs in self.sets())

    def done(self) -> bool:
        return (
            self.new is not None
            and self.new.pods.count(READY) == self.replicas == len(self.new.pods)
            and not self.old.pods
            and self.old.replicas == 0
        )


def _step(model: Model, action: int, which: int, recreate: bool) -> None:
    sets = model.sets()
    rs = sets[which % len(sets)]
    if action == 0:
        model.deploy(recreate)
    elif action == 1:
        rs.sync()
    elif action == 2 and PENDING in rs.pods:
        rs.pods[rs.pods.index(PENDING)] = READY
    elif action == 3 and TERMINATING in rs.pods:
        rs.pods.remove(TERMINATING)


@settings(max_examples=300, deadline=None)
@given(
    replicas=st.integers(1, 6),
    surge=st.integers(0, 3),
    unavailable=st.integers(0, 3),
    actions=st.lists(st.tuples(st.integers(0, 3), st.integers(0, 1)), max_size=80),
)
def test_rolling_update_stays_within_its_bounds(
    replicas: int, surge: int, unavailable: int, actions: list[tuple[int, int]]
) -> None:
    """Any interleaving of the deployment controller, the ReplicaSet controller and kubelets keeps the bounds, and
    a fair schedule afterwards completes the rollout."""
    if surge == 0 and unavailable == 0:
        unavailable = 1
    unavailable = min(unavailable, replicas)
    model = Model(replicas, surge, unavailable, ModelReplicaSet("old", replicas, [READY] * replicas))
    for action, which in actions + [(a, w) for _ in range(4 * replicas + 8) for a in range(4) for w in range(2)]:
        _step(model, action, which, recreate=False)
        assert model.active() <= replicas + surge
        assert model.available() >= replicas - unavailable
    assert model.done()


@settings(max_examples=200, deadline=None)
@given(
    replicas=st.integers(1, 6),
    actions=st.lists(st.tuples(st.integers(0, 3), st.integers(0, 1)), max_size=60),
)
def test_recreate_never_runs_two_templates_at_once(replicas: int, actions: list[tuple[int, int]]) -> None:
    """Recreate: no pod of the new template exists while any pod of the old one does, and the rollout completes."""
    model = Model(replicas, 0, replicas, ModelReplicaSet("old", replicas, [READY] * replicas))
    for action, which in actions + [(a, w) for _ in range(4 * replicas + 8) for a in range(4) for w in range(2)]:
        _step(model, action, which, recreate=True)
        assert not (model.old.pods and model.new is not None and model.new.pods)
    assert model.done()

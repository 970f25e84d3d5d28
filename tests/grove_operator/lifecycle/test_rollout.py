"""The PodCliqueSet's rolling update (`lifecycle.rollout`): start, one replica at a time in §3.8's order, end;
OnDelete; a second update mid-update (#400); a strategy switch."""

from __future__ import annotations

from dataclasses import dataclass, field, replace

from hypothesis import given, settings
from hypothesis import strategies as st

from grove_api import PodCliqueSetUpdateProgress
from grove_operator.lifecycle.rollout import ReplicaState, current_replica, plan_rollout, update_open
from grove_runtime.clock import FakeClock


def states(*specs: tuple[bool, bool, int]) -> dict[int, ReplicaState]:
    """Replica states from (stale, settled, scheduled pods)."""
    return {i: ReplicaState(i, *spec) for i, spec in enumerate(specs)}


def test_a_template_change_starts_an_update_and_picks_unscheduled_then_breached_then_by_index() -> None:
    """§3.8's order: a replica with no scheduled pod first, then one in breach, then ascending index."""
    clock = FakeClock()
    replicas = states((True, True, 4), (True, True, 4), (True, False, 0), (True, True, 4))
    step = plan_rollout("RollingRecreate", "old", "new", None, replicas, clock.now(), breached=[3])
    assert step.progress is not None
    assert step.progress.update_started_at == clock.now()
    assert current_replica(step.progress) == 2
    assert [reason for reason, _ in step.events] == ["RollingUpdateStarted", "UpdatingReplica"]
    replicas[2] = ReplicaState(2, False, True, 4)
    step = plan_rollout("RollingRecreate", "new", "new", step.progress, replicas, clock.now(), breached=[3])
    assert current_replica(step.progress) == 3
    replicas[3] = ReplicaState(3, False, True, 4)
    step = plan_rollout("RollingRecreate", "new", "new", step.progress, replicas, clock.now())
    assert current_replica(step.progress) == 0


def test_the_current_replica_is_kept_until_it_is_updated_and_whole_again() -> None:
    """Still stale, or updated but a pod not Ready yet: the update stays on it; then the next; finally it ends."""
    clock = FakeClock()
    replicas = states((True, True, 2), (True, True, 2))
    progress = plan_rollout("RollingRecreate", "old", "new", None, replicas, clock.now()).progress
    replicas[0] = ReplicaState(0, False, False, 1)
    assert current_replica(plan_rollout("RollingRecreate", "new", "new", progress, replicas, clock.now()).progress) == 0
    replicas[0] = ReplicaState(0, False, True, 2)
    progress = plan_rollout("RollingRecreate", "new", "new", progress, replicas, clock.now()).progress
    assert current_replica(progress) == 1
    replicas[1] = ReplicaState(1, False, True, 2)
    clock.advance(30)
    step = plan_rollout("RollingRecreate", "new", "new", progress, replicas, clock.now())
    assert step.progress is not None
    assert step.progress.update_ended_at == clock.now()
    assert not step.progress.currently_updating
    assert not step.in_progress
    assert step.events[-1][0] == "RollingUpdateCompleted"


def test_on_delete_records_the_change_and_replaces_nothing() -> None:
    """OnDelete: started and ended at once, no replica selected; switching to it ends an update in progress."""
    clock = FakeClock()
    replicas = states((True, True, 2))
    step = plan_rollout("OnDelete", "old", "new", None, replicas, clock.now())
    assert step.progress is not None
    assert step.progress.update_ended_at == step.progress.update_started_at
    assert current_replica(step.progress) is None
    rolling = plan_rollout("RollingRecreate", "old", "new", None, replicas, clock.now()).progress
    assert update_open(rolling)
    switched = plan_rollout("OnDelete", "new", "new", rolling, replicas, clock.now()).progress
    assert switched is not None
    assert not update_open(switched)
    assert not switched.currently_updating


def test_switching_to_rolling_recreate_updates_the_replicas_left_on_an_older_template() -> None:
    """After OnDelete left old pods, RollingRecreate starts an update of them without a template change."""
    clock = FakeClock()
    ended = PodCliqueSetUpdateProgress(update_started_at=clock.now(), update_ended_at=clock.now())
    clock.advance(60)
    step = plan_rollout("RollingRecreate", "new", "new", ended, states((False, True, 2), (True, True, 2)), clock.now())
    assert step.progress is not None
    assert step.progress.update_started_at == clock.now()
    assert current_replica(step.progress) == 1


def test_a_second_update_mid_update_keeps_the_current_replica_and_restarts_the_clock() -> None:
    """#400: the replica being updated stays current (no second one is taken down); the start time moves."""
    clock = FakeClock()
    replicas = states((True, True, 2), (True, True, 2))
    first = plan_rollout("RollingRecreate", "v0", "v1", None, replicas, clock.now()).progress
    clock.advance(10)
    second = plan_rollout("RollingRecreate", "v1", "v2", first, replicas, clock.now()).progress
    assert second is not None
    assert second.update_started_at == clock.now()
    assert current_replica(second) == current_replica(first) == 0


@dataclass
class World:
    """A PodCliqueSet whose children update the current replica when the world lets them."""

    replicas: dict[int, ReplicaState]
    target: str = "v1"
    stored: str = "v0"
    progress: PodCliqueSetUpdateProgress | None = None
    picked: list[int] = field(default_factory=list)
    clock: FakeClock = field(default_factory=FakeClock)

    def act(self) -> None:
        step = plan_rollout("RollingRecreate", self.stored, self.target, self.progress, self.replicas, self.clock.now())
        self.progress, self.stored = step.progress, self.target
        current = current_replica(self.progress)
        if current is not None and (not self.picked or self.picked[-1] != current):
            self.picked.append(current)
        self.clock.advance(1)

    def environment(self, event: int) -> None:
        current = current_replica(self.progress)
        if current is None or event % 2:
            return
        state = self.replicas[current]
        if state.stale:
            self.replicas[current] = replace(state, stale=False, settled=False)
        elif not state.settled:
            self.replicas[current] = replace(state, settled=True)

    def retarget(self) -> None:
        self.target = "v2"
        self.replicas = {i: replace(s, stale=True) for i, s in self.replicas.items()}


@settings(max_examples=200)
@given(st.integers(1, 6), st.data())
def test_one_replica_at_a_time_and_the_update_converges_to_the_newest_template(count: int, data: st.DataObject) -> None:
    """Only the replica being updated is ever short of a pod, it is never left before it is whole again, and the
    update ends (not stuck) with every replica on the newest template, also with a second update mid-way."""
    world = World({i: ReplicaState(i, True, True, 2) for i in range(count)})
    retarget_at = data.draw(st.integers(0, 40), label="second update after step")
    for step in range(60):
        if step == retarget_at:
            world.retarget()
        world.act()
        down = {i for i, s in world.replicas.items() if not s.settled}
        assert down <= {current_replica(world.progress)}
        world.environment(data.draw(st.integers(0, 9), label="event"))
    for _ in range(4 * count + 4):
        world.act()
        world.environment(0)
    world.act()
    assert not update_open(world.progress)
    assert world.progress is not None
    assert all(not s.stale and s.settled for s in world.replicas.values())
    assert len(world.picked) == len(set(world.picked)) or retarget_at < 60

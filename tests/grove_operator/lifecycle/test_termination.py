"""Gang termination verdicts (`lifecycle.termination`) on a fake clock: exactly when a breach has waited long enough,
which breaches count, and when a scaling group defers to its PodCliqueSet."""

from __future__ import annotations

from datetime import datetime
from typing import Any

import pytest
from hypothesis import given
from hypothesis import strategies as st

from grove_api import PodClique, PodCliqueScalingGroup, PodCliqueSet, format_time
from grove_operator.lifecycle.termination import (
    group_breach,
    once_available,
    pclq_breach,
    plan_group_termination,
    plan_replica_termination,
    termination_delay,
)
from grove_runtime.clock import FakeClock


def condition(type_: str, status: str, since: datetime, reason: str = "R") -> dict[str, Any]:
    """A metav1.Condition."""
    return {"type": type_, "status": status, "reason": reason, "message": "m", "lastTransitionTime": format_time(since)}


def pclq(name: str, breached_since: datetime | None, available: str = "InsufficientReadyPods") -> PodClique:
    """A PodClique in breach since `breached_since` (None: not in breach) whose PodCliqueAvailable reason is
    `available` ("" for True)."""
    status = "True" if not available else "False"
    conditions = [condition("PodCliqueAvailable", status, datetime(2026, 1, 1), available or "MinAvailableReady")]
    if breached_since is not None:
        conditions.append(condition("MinAvailableBreached", "True", breached_since))
    return PodClique.model_validate(
        {
            "metadata": {"name": name},
            "spec": {"podSpec": {}, "replicas": 2, "minAvailable": 2},
            "status": {"conditions": conditions},
        }
    )


def test_a_breach_rebuilds_exactly_when_the_delay_has_passed_and_requeues_for_that_moment() -> None:
    """The wait is the delay minus the breach's age, to the second; at that moment the replica is rebuilt."""
    clock = FakeClock()
    breach = pclq_breach(pclq("p-0-a", clock.now()))
    assert breach is not None
    clock.advance(7)
    plan = plan_replica_termination({0: [breach]}, 10.0, clock.now())
    assert (plan.rebuild, plan.wait, plan.breached) == ({}, 3.0, frozenset({0}))
    clock.advance(plan.wait or 0)
    plan = plan_replica_termination({0: [breach]}, 10.0, clock.now())
    assert plan.rebuild == {0: breach}
    assert plan.wait is None


def test_the_smallest_wait_of_several_breaches_wins_and_exempt_replicas_are_left_alone() -> None:
    """Two replicas in breach: the requeue is for the earlier expiry; the replica being updated is skipped."""
    clock = FakeClock()
    first = pclq_breach(pclq("p-0-a", clock.now()))
    clock.advance(4)
    second = pclq_breach(pclq("p-1-a", clock.now()))
    assert first is not None
    assert second is not None
    plan = plan_replica_termination({0: [first], 1: [second]}, 10.0, clock.now())
    assert plan.wait == 6.0
    plan = plan_replica_termination({0: [first], 1: [second]}, 10.0, clock.now(), exempt=[0])
    assert plan.wait == 10.0
    assert plan.breached == frozenset({1})


def test_a_never_available_podclique_is_not_recycled() -> None:
    """Pending since creation (NotYetAvailable) or started-but-not-Ready after a rebuild: the breach does not count."""
    since = datetime(2026, 1, 1)
    assert pclq_breach(pclq("p-0-a", since, available="NotYetAvailable")) is None
    assert not once_available(pclq("p-0-a", since, available="NotYetAvailable"))
    assert pclq_breach(pclq("p-0-a", since)) is not None
    assert pclq_breach(pclq("p-0-a", since, available="")) is not None
    assert pclq_breach(pclq("p-0-a", None)) is None


def group(breached_since: datetime | None, gang_termination: bool = False) -> PodCliqueScalingGroup:
    """A scaling group, optionally in breach and marked GangTerminationInProgress."""
    conditions = []
    if breached_since is not None:
        conditions.append(condition("MinAvailableBreached", "True", breached_since))
    if gang_termination:
        conditions.append(condition("GangTerminationInProgress", "True", breached_since or datetime(2026, 1, 1)))
    return PodCliqueScalingGroup.model_validate(
        {"metadata": {"name": "p-0-g"}, "spec": {"cliqueNames": ["a"]}, "status": {"conditions": conditions}}
    )


def test_a_scaling_group_breach_counts_only_with_a_once_available_member_and_no_termination_in_flight() -> None:
    """Members just rebuilt (never available) or a termination in flight: no PCS-level breach from the group."""
    since = datetime(2026, 1, 1)
    broken = pclq("p-0-g-0-a", since)
    assert group_breach(group(since), [broken]) is not None
    assert group_breach(group(since), [pclq("p-0-g-0-a", since, available="NotYetAvailable")]) is None
    assert group_breach(group(since, gang_termination=True), [broken]) is None
    assert group_breach(group(None), [broken]) is None


def test_a_scaling_group_recreates_a_broken_replica_alone_or_defers_to_the_podcliqueset() -> None:
    """Replicas 3, minAvailable 2: one broken replica is recreated after the delay; two broken ones defer."""
    clock = FakeClock()
    breach = pclq_breach(pclq("p-0-g-1-a", clock.now()))
    assert breach is not None
    assert plan_group_termination({1: breach}, 3, 2, 5.0, clock.now()).wait == 5.0
    clock.advance(5)
    assert plan_group_termination({1: breach}, 3, 2, 5.0, clock.now()).recreate == {1: breach}
    assert plan_group_termination({1: breach, 2: breach}, 3, 2, 5.0, clock.now()).deferred


@given(st.integers(0, 10_000), st.integers(0, 10_000))
def test_rebuild_iff_the_age_reaches_the_delay(age: int, delay: int) -> None:
    """For any age and delay: rebuilt exactly when age >= delay, else a wait of exactly delay - age."""
    clock = FakeClock()
    breach = pclq_breach(pclq("p-0-a", clock.now()))
    assert breach is not None
    clock.advance(age)
    plan = plan_replica_termination({0: [breach]}, float(delay), clock.now())
    if age >= delay:
        assert plan.rebuild == {0: breach}
    else:
        assert plan.wait == delay - age


@pytest.mark.parametrize(("text", "seconds"), [("2s", 2.0), ("1h30m", 5400.0), (None, 14400.0), ("bogus", 14400.0)])
def test_termination_delay_reads_go_durations(text: str | None, seconds: float) -> None:
    """`terminationDelay` as Go writes durations; unset or unreadable falls back to the 4h default."""
    cliques = [{"name": "a", "spec": {"podSpec": {}, "replicas": 1}}]
    template = {"terminationDelay": text, "cliques": cliques}
    pcs = PodCliqueSet.model_validate({"metadata": {"name": "p"}, "spec": {"template": template}})
    assert termination_delay(pcs) == seconds

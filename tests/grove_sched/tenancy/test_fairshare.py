"""Fair share on random queue trees: limits hold, quotas are guaranteed, the rest goes by weight, nothing is
divided twice."""

from __future__ import annotations

import math

from hypothesis import given, settings
from hypothesis import strategies as st

from grove_sched.tenancy import QueueSpec, ResourceShare, fair_shares, water_fill
from grove_sched.tenancy.fairshare import children_of, effective_demand
from grove_sched.tenancy.spec import UNLIMITED, Vector

EPS = 1e-6


@st.composite
def trees(
    draw: st.DrawFn, quotas_fit: bool = False, priorities: bool = False
) -> tuple[dict[str, QueueSpec], dict[str, Vector], Vector]:
    """Up to three levels of queues; GPU settings random (CPU and memory unbounded); demand on leaves only. With
    `quotas_fit`, children's quotas sum to at most their parent's and the roots' to at most the capacity; with
    `priorities`, queue priorities 0-2 (else all 0)."""
    queues: dict[str, QueueSpec] = {}
    demand: dict[str, Vector] = {}
    capacity = float(draw(st.integers(0, 200)))

    def make(parent: str | None, depth: int, budget: float) -> None:
        count = draw(st.integers(1 if parent is None else 0, 3))
        left = budget
        for i in range(count):
            name = f"{parent or 'q'}-{i}"
            if quotas_fit:
                quota = float(draw(st.integers(0, int(left))))
                left -= quota
            else:
                quota = draw(st.sampled_from([UNLIMITED, 0.0, 5.0, 10.0, 20.0, 40.0]))
            limit = draw(st.sampled_from([UNLIMITED, 0.0, 10.0, 30.0, 80.0]))
            if limit >= 0 and quota >= 0 and limit < quota:
                limit = quota
            if quotas_fit and limit >= 0 and limit < quota:
                limit = UNLIMITED
            weight = float(draw(st.integers(0, 4)))
            gpu = ResourceShare(quota, limit, weight)
            priority = draw(st.integers(0, 2)) if priorities else 0
            queues[name] = QueueSpec(name, parent, priority, (gpu, ResourceShare(UNLIMITED), ResourceShare(UNLIMITED)))
            if depth < 2 and draw(st.booleans()):
                make(name, depth + 1, quota if quotas_fit else math.inf)
            if not any(q.parent == name for q in queues.values()):
                demand[name] = (float(draw(st.integers(0, 80))), 0.0, 0.0)

    make(None, 0, capacity)
    return queues, demand, (capacity, 0.0, 0.0)


@settings(max_examples=300, deadline=None)
@given(trees())
def test_no_queue_gets_more_than_it_asks_or_its_limit_and_siblings_never_overspend(case) -> None:
    queues, demand, capacity = case
    shares = fair_shares(queues, demand, capacity)
    asks = effective_demand(queues, demand)
    tree = children_of(queues)
    assert set(shares) == set(queues)
    for name, spec in queues.items():
        assert shares[name][0] <= asks[name][0] + EPS
        assert shares[name][0] <= spec.shares[0].cap() + EPS
        assert shares[name][0] >= -EPS
        assert sum(shares[c][0] for c in tree.get(name, [])) <= shares[name][0] + EPS
    assert sum(shares[r][0] for r in tree[None]) <= capacity[0] + EPS


@settings(max_examples=300, deadline=None)
@given(trees(quotas_fit=True))
def test_every_queue_that_asks_its_quota_gets_it_when_the_quotas_fit(case) -> None:
    queues, demand, capacity = case
    shares = fair_shares(queues, demand, capacity)
    asks = effective_demand(queues, demand)
    for name, spec in queues.items():
        quota = spec.shares[0].quota
        assert shares[name][0] >= min(quota, asks[name][0]) - EPS


@settings(max_examples=300, deadline=None)
@given(trees())
def test_capacity_above_quotas_goes_by_weight_and_none_is_left_while_someone_wants_it(case) -> None:
    queues, demand, capacity = case
    shares = fair_shares(queues, demand, capacity)
    asks = effective_demand(queues, demand)
    tree = children_of(queues)
    for parent, names in tree.items():
        available = capacity[0] if parent is None else shares[parent][0]
        guaranteed = {
            n: min(asks[n][0], asks[n][0] if queues[n].shares[0].quota < 0 else queues[n].shares[0].quota)
            for n in names
        }
        if sum(guaranteed.values()) > available + EPS:
            continue  # over-committed quotas: scaled, nothing above quota
        wanting = [n for n in names if shares[n][0] < asks[n][0] - EPS]
        if wanting:  # work-conserving: everything was handed out
            assert sum(shares[n][0] for n in names) >= available - 1e-4
        weighted = [n for n in names if queues[n].shares[0].weight > 0]
        rate = {n: (shares[n][0] - guaranteed[n]) / queues[n].shares[0].weight for n in weighted}
        for n in wanting:
            if queues[n].shares[0].weight > 0:  # an unsatisfied queue has the highest rate of all
                assert all(rate[m] <= rate[n] + 1e-4 for m in weighted)
            elif shares[n][0] > guaranteed[n] + EPS:  # weight 0 gets only leftovers: weighted queues are satisfied
                assert all(shares[m][0] >= asks[m][0] - EPS for m in weighted)


@settings(max_examples=300, deadline=None)
@given(trees(priorities=True))
def test_a_higher_priority_sibling_is_served_above_quota_before_a_lower_one(case) -> None:
    """KAI's over-quota order: a queue gets anything above its quota only once every sibling of higher priority
    has all it asks; limits and demand still bound every share."""
    queues, demand, capacity = case
    shares = fair_shares(queues, demand, capacity)
    asks = effective_demand(queues, demand)
    for names in children_of(queues).values():
        for n in names:
            quota = queues[n].shares[0].quota
            guaranteed = asks[n][0] if quota < 0 else min(quota, asks[n][0])
            if shares[n][0] > guaranteed + EPS:
                higher = [m for m in names if queues[m].priority > queues[n].priority]
                assert all(shares[m][0] >= asks[m][0] - 1e-4 for m in higher), (n, higher)
        for n in names:
            assert shares[n][0] <= min(asks[n][0], queues[n].shares[0].cap()) + EPS


def test_queue_priority_takes_the_over_quota_capacity_first() -> None:
    def spec(name: str, priority: int) -> QueueSpec:
        gpu = ResourceShare(10.0, UNLIMITED, 1.0)
        return QueueSpec(name, None, priority, (gpu, ResourceShare(UNLIMITED), ResourceShare(UNLIMITED)))

    queues = {"high": spec("high", 100), "low": spec("low", 0)}
    shares = fair_shares(queues, {"high": (60.0, 0, 0), "low": (1e6, 0, 0)}, (100.0, 0, 0))
    assert (shares["high"][0], shares["low"][0]) == (60.0, 40.0)  # quotas 10 + 10; the 80 above: high's 50 first


def test_sixty_forty_with_unbounded_demand_splits_the_cluster_by_quota() -> None:
    a = QueueSpec(
        "a", None, 0, (ResourceShare(60.0, UNLIMITED, 1.0), ResourceShare(UNLIMITED), ResourceShare(UNLIMITED))
    )
    b = QueueSpec(
        "b", None, 0, (ResourceShare(40.0, UNLIMITED, 1.0), ResourceShare(UNLIMITED), ResourceShare(UNLIMITED))
    )
    shares = fair_shares({"a": a, "b": b}, {"a": (1e6, 0, 0), "b": (1e6, 0, 0)}, (200.0, 0, 0))
    assert (shares["a"][0], shares["b"][0]) == (110.0, 90.0)  # quotas, then the 100 above them 1:1
    shares = fair_shares({"a": a, "b": b}, {"a": (1e6, 0, 0), "b": (0, 0, 0)}, (100.0, 0, 0))
    assert (shares["a"][0], shares["b"][0]) == (100.0, 0.0)  # an idle queue's quota is lent out


def test_water_fill_caps_at_what_each_wants_and_passes_the_rest_on() -> None:
    given_ = water_fill(10.0, {"a": 2.0, "b": 100.0, "c": 100.0}, {"a": 1.0, "b": 1.0, "c": 2.0})
    assert given_["a"] == 2.0
    assert math.isclose(given_["b"], 8 / 3)
    assert math.isclose(given_["c"], 16 / 3)

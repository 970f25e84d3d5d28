"""The per-decision queue rules on random trees: admitting only what `limit_breach` allows keeps every queue (and
ancestor) within its limit; reclaim never takes a victim queue below its fair share or quota, never touches the
reclaimer's own branch, and offers only whole gangs."""

from __future__ import annotations

from hypothesis import given, settings
from hypothesis import strategies as st

from grove_sched.tenancy import Candidate, QueueSpec, ResourceShare, fair_shares, limit_breach, reclaimable
from grove_sched.tenancy.policy import add, ancestry, distance, reclaim_floor, rollup
from grove_sched.tenancy.spec import UNLIMITED, Vector, zero

EPS = 1e-6
FREE = ResourceShare(UNLIMITED)


@st.composite
def forests(draw: st.DrawFn) -> dict[str, QueueSpec]:
    """Two levels: a few parents, each with a few leaves; GPU quota, limit and weight random."""
    queues: dict[str, QueueSpec] = {}
    for p in range(draw(st.integers(1, 3))):
        parent = f"p{p}"
        queues[parent] = QueueSpec(parent, None, 0, (_share(draw), FREE, FREE))
        for c in range(draw(st.integers(0, 3))):
            name = f"{parent}-{c}"
            queues[name] = QueueSpec(name, parent, 0, (_share(draw), FREE, FREE))
    return queues


def _share(draw: st.DrawFn) -> ResourceShare:
    quota = float(draw(st.sampled_from([0, 8, 16, 32])))
    limit = draw(st.sampled_from([UNLIMITED, 16.0, 48.0, 96.0]))
    return ResourceShare(quota, max(limit, quota) if limit >= 0 else limit, float(draw(st.integers(0, 3))))


def leaves(queues: dict[str, QueueSpec]) -> list[str]:
    return sorted(n for n in queues if not any(q.parent == n for q in queues.values()))


@settings(max_examples=200, deadline=None)
@given(forests(), st.lists(st.tuples(st.integers(0, 20), st.sampled_from([1, 2, 4, 8])), max_size=40))
def test_admitting_only_what_limit_breach_allows_keeps_every_queue_within_its_limit(queues, asks) -> None:
    names = leaves(queues)
    own: dict[str, Vector] = {}
    for index, gpus in asks:
        queue = names[index % len(names)]
        ask = (float(gpus), 0.0, 0.0)
        if limit_breach(queues, rollup(queues, own), queue, ask) is None:
            own[queue] = add(own.get(queue, zero()), ask)
    for name, held in rollup(queues, own).items():
        assert held[0] <= queues[name].shares[0].cap() + EPS


@settings(max_examples=200, deadline=None)
@given(
    forests(),
    st.lists(st.tuples(st.integers(0, 20), st.sampled_from([1, 2, 4, 8]), st.integers(0, 3)), max_size=30),
    st.integers(0, 20),
    st.integers(16, 160),
)
def test_reclaim_never_takes_a_victim_queue_below_its_fair_share_or_quota(queues, gangs, who, capacity) -> None:
    names = leaves(queues)
    reclaimer = names[who % len(names)]
    candidates = [
        Candidate(i, names[q % len(names)], priority, (float(gpus), 0.0, 0.0))
        for i, (q, gpus, priority) in enumerate(gangs)
    ]
    own: dict[str, Vector] = {}
    for cand in candidates:
        own[cand.queue] = add(own.get(cand.queue, zero()), cand.holds)
    allocated = rollup(queues, own)
    demand = {n: add(own.get(n, zero()), (32.0, 0.0, 0.0) if n == reclaimer else zero()) for n in names}
    fair = fair_shares(queues, demand, (float(capacity), 0.0, 0.0))
    contended = (True, False, False)
    chosen = reclaimable(queues, allocated, fair, reclaimer, candidates, contended)
    assert all(any(c is d for d in candidates) for c in chosen)  # whole gangs, as offered
    mine = set(ancestry(queues, reclaimer))
    assert not any(c.queue in mine for c in chosen)
    taken: dict[str, Vector] = {}
    for c in chosen:  # the worst case is taking all of them (any subset takes less)
        taken[c.queue] = add(taken.get(c.queue, zero()), c.holds)
    after = rollup(queues, {q: (own.get(q, zero())[0] - taken.get(q, zero())[0], 0.0, 0.0) for q in own})
    for name in queues:
        if name in mine or allocated[name][0] <= 0:
            continue
        floor = reclaim_floor(queues[name], fair[name], contended)[0]
        if after[name][0] < allocated[name][0]:  # something was taken from this branch
            assert after[name][0] >= floor - EPS


def test_distance_is_the_dominant_share_of_the_fair_share() -> None:
    assert distance(zero(), (10.0, 0.0, 0.0)) == 0.0
    assert distance((5.0, 500.0, 0.0), (10.0, 1000.0, 0.0)) == 0.5
    assert distance((5.0, 900.0, 0.0), (10.0, 1000.0, 0.0)) == 0.9
    assert distance((1.0, 0.0, 0.0), zero()) == float("inf")


def test_limit_breach_names_the_queue_and_the_limit() -> None:
    queues = {
        "team": QueueSpec("team", None, 0, (ResourceShare(8.0, 16.0, 1.0), FREE, FREE)),
        "dev": QueueSpec("dev", "team", 0, (ResourceShare(0.0, UNLIMITED, 1.0), FREE, FREE)),
    }
    why = limit_breach(queues, {"team": (12.0, 0.0, 0.0), "dev": (12.0, 0.0, 0.0)}, "dev", (8.0, 0.0, 0.0))
    assert why is not None
    assert "'team'" in why
    assert "gpu limit 16" in why


@settings(max_examples=200, deadline=None)
@given(
    st.lists(st.tuples(st.sampled_from([0, 8, 16, 32]), st.integers(1, 3), st.integers(0, 12)), min_size=1, max_size=5),
    st.sampled_from([1, 2, 4, 8]),
    st.integers(8, 160),
)
def test_placing_by_distance_to_fair_share_overshoots_no_queue_by_more_than_one_gang(teams, size, capacity) -> None:
    """Flat queues, gangs of one size, all demand known: placing one gang at a time for the queue furthest below
    its fair share (the scheduling queue's order) ends with no queue above its fair share by a gang or more, and
    less than one gang's worth of capacity idle while someone still asks."""
    queues = {
        f"q{i}": QueueSpec(f"q{i}", None, 0, (ResourceShare(float(quota), UNLIMITED, float(weight)), FREE, FREE))
        for i, (quota, weight, _) in enumerate(teams)
    }
    demand = {f"q{i}": (float(gangs * size), 0.0, 0.0) for i, (_, _, gangs) in enumerate(teams)}
    fair = fair_shares(queues, demand, (float(capacity), 0.0, 0.0))
    held = {name: 0.0 for name in queues}
    free = float(capacity)
    while True:
        wanting = [n for n in queues if held[n] + size <= demand[n][0] and free >= size]
        if not wanting:
            break
        best = min(wanting, key=lambda n: (distance((held[n], 0.0, 0.0), fair[n]), n))
        held[best] += size
        free -= size
    for name in queues:
        assert held[name] < fair[name][0] + size + EPS
    if any(held[n] + size <= demand[n][0] for n in queues):
        assert free < size

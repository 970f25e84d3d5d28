"""Which pods a rolling update deletes: the rule of `lifecycle.podrollout`, its invariants and upstream #697."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from hypothesis import given, settings
from hypothesis import strategies as st

from grove_operator.lifecycle.podrollout import plan_pods

from ._objects import pod

Obj = dict[str, Any]


def test_not_ready_old_pods_go_at_once_ready_ones_one_at_a_time_oldest_first() -> None:
    """Two old pods not Ready are deleted together; of the Ready old ones only the oldest, once nothing is down."""
    unready = [pod("p1", ready=False), pod("p2", ready=False)]
    pods = [pod("r2", created=2), pod("r1", created=1), pod("new", "new"), *unready]
    plan = plan_pods(pods, "new", 5, turn=True)
    assert plan.at_once == ("p1", "p2")
    assert plan.replace is None, "a Ready pod must wait while replacements of the unready ones are pending"
    ready = [pod("r2", created=2), pod("r1", created=1), pod("new", "new")]
    assert plan_pods(ready, "new", 3, turn=True).replace == "r1"


def test_a_ready_pod_that_crashed_before_is_never_deleted_with_the_unready_ones() -> None:
    """Upstream #697: a Ready pod whose container once exited non-zero is Ready, so it waits its turn."""
    pods = [pod("a", crashed_before=True), pod("b", crashed_before=True), pod("c", ready=False)]
    plan = plan_pods(pods, "new", 3, turn=True)
    assert plan.at_once == ("c",)
    assert plan.replace is None


def test_waits_while_a_pod_is_terminating_missing_or_not_ready_or_not_its_turn() -> None:
    """Each of these holds the next Ready pod back."""
    base = [pod("a", created=1), pod("b", created=2)]
    assert plan_pods(base, "new", 2, turn=True).replace == "a"
    assert plan_pods(base, "new", 2, turn=False).replace is None
    assert plan_pods([*base, pod("x", "new", terminating=True)], "new", 2, turn=True).replace is None
    assert plan_pods(base, "new", 3, turn=True).replace is None
    assert plan_pods([*base, pod("n", "new", ready=False)], "new", 3, turn=True).replace is None
    assert plan_pods([pod("n", "new"), pod("m", "new")], "new", 2, turn=True).old == 0


pod_states = st.fixed_dictionaries(
    {
        "old": st.booleans(),
        "ready": st.booleans(),
        "terminating": st.booleans(),
        "crashed_before": st.booleans(),
        "created": st.integers(0, 50),
    }
)


@given(st.lists(pod_states, max_size=12), st.integers(0, 12), st.booleans())
def test_never_deletes_a_ready_pod_with_the_unready_ones_nor_more_than_one(
    states: list[dict[str, Any]], replicas: int, turn: bool
) -> None:
    """`at_once` is exactly the live old pods that are not Ready, when it is the clique's turn (none otherwise: the
    cache may lag a pod becoming Ready); at most one Ready pod goes, and only when every live pod is Ready, none is
    terminating and `replicas` exist: so Ready pods stay at `replicas - 1` or more."""
    pods = [
        pod(
            f"p{i}",
            "old" if s["old"] else "new",
            ready=s["ready"],
            terminating=s["terminating"],
            crashed_before=s["crashed_before"],
            created=s["created"],
        )
        for i, s in enumerate(states)
    ]
    plan = plan_pods(pods, "new", replicas, turn=turn)
    live = [(p, s) for p, s in zip(pods, states, strict=True) if not s["terminating"]]
    unready_old = {p["metadata"]["name"] for p, s in live if s["old"] and not s["ready"]}
    assert set(plan.at_once) == (unready_old if turn else set())
    assert plan.old == sum(1 for _, s in live if s["old"])
    if plan.replace is None:
        return
    chosen = next(s for p, s in live if p["metadata"]["name"] == plan.replace)
    assert chosen["old"]
    assert chosen["ready"]
    assert turn
    assert not plan.at_once
    assert not any(s["terminating"] for s in states)
    assert all(s["ready"] for _, s in live)
    assert len(live) >= replicas
    assert chosen["created"] == min(s["created"] for _, s in live if s["old"])


@dataclass
class Clique:
    """A PodClique with a kubelet and a pod controller, stepped by hand: the environment of the rolling update."""

    replicas: int
    target: str = "v1"
    pods: dict[str, Obj] = field(default_factory=dict)
    created: int = 0
    deleted_ready: list[str] = field(default_factory=list)

    def __post_init__(self) -> None:
        for _ in range(self.replicas):
            self.create("v0", ready=True)

    def create(self, template_hash: str, *, ready: bool) -> None:
        self.created += 1
        name = f"p{self.created}"
        self.pods[name] = pod(name, template_hash, ready=ready, created=self.created)

    def live(self) -> list[Obj]:
        return [p for p in self.pods.values() if not p["metadata"].get("deletionTimestamp")]

    def ready(self) -> int:
        return sum(1 for p in self.live() if p["status"]["conditions"][0]["status"] == "True")

    def act(self) -> None:
        """One reconcile of the rolling update: delete what the plan says."""
        plan = plan_pods(list(self.pods.values()), self.target, self.replicas, turn=True)
        for name in [*plan.at_once, *([plan.replace] if plan.replace else [])]:
            if plan.replace == name:
                self.deleted_ready.append(name)
            self.pods[name]["metadata"]["deletionTimestamp"] = "2026-01-01T01:00:00Z"

    def environment(self, event: int) -> None:
        """One event of the world: a deletion finishes, a missing pod is created, a pending pod becomes Ready."""
        kind = event % 3
        if kind == 0:
            gone = [n for n, p in self.pods.items() if p["metadata"].get("deletionTimestamp")]
            if gone:
                del self.pods[gone[event % len(gone)]]
        elif kind == 1 and len(self.live()) < self.replicas:
            self.create(self.target, ready=False)
        elif kind == 2:
            waiting = [p for p in self.live() if p["status"]["conditions"][0]["status"] == "False"]
            if waiting:
                chosen = waiting[event % len(waiting)]
                chosen["status"]["conditions"][0]["status"] = "True"
                chosen["status"]["containerStatuses"][0]["ready"] = True


@settings(max_examples=200)
@given(st.integers(1, 6), st.data())
def test_a_rolling_update_keeps_all_but_one_pod_ready_and_converges_to_the_newest_template(
    replicas: int, data: st.DataObject
) -> None:
    """Whatever the order of the world's events, and with a second template arriving mid-update (#400), at most
    one pod is down at any moment, and the clique ends with every pod Ready on the newest template."""
    clique = Clique(replicas)
    retarget_at = data.draw(st.integers(0, 30), label="second update after step")
    for step in range(60):
        if step == retarget_at:
            clique.target = "v2"
        clique.act()
        assert clique.ready() >= replicas - 1
        clique.environment(data.draw(st.integers(0, 99), label="event"))
        assert clique.ready() >= replicas - 1
    for _ in range(20 * replicas):  # then the world settles: every event happens in turn
        clique.act()
        for event in range(3):
            clique.environment(event)
        assert clique.ready() >= replicas - 1
    live = clique.live()
    assert len(live) == replicas == clique.ready()
    assert {p["metadata"]["labels"]["grove.io/pod-template-hash"] for p in live} == {clique.target}

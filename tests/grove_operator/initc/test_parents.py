"""What grove-initc waits for: the `--podcliques` arguments, and the count of Ready pods per parent as events come."""

from __future__ import annotations

from typing import Any

import pytest
from hypothesis import given
from hypothesis import strategies as st

from grove_api import labels as glabels
from grove_operator.initc.parents import ParentTracker, Waiting, is_ready, parse_parents

Obj = dict[str, Any]


def pod(name: str, clique: str, *, ready: bool = True, terminating: bool = False) -> Obj:
    meta: Obj = {"name": name, "labels": {glabels.LABEL_PODCLIQUE: clique}}
    if terminating:
        meta["deletionTimestamp"] = "2026-01-01T00:00:00Z"
    condition = {"type": "Ready", "status": "True" if ready else "False"}
    return {"metadata": meta, "status": {"conditions": [condition]}}


def test_parents_from_repeated_and_comma_separated_flags() -> None:
    """Upstream passes one flag per parent; a string-slice flag also takes comma-separated lists."""
    assert parse_parents(["simple3-0-pca:3", "a-0-b:2,a-0-c:1", "a-0-b:2"]) == {
        "simple3-0-pca": 3,
        "a-0-b": 2,
        "a-0-c": 1,
    }


@pytest.mark.parametrize(
    ("values", "message"),
    [
        ([], "no parent PodClique"),
        (["pca"], "'pca': expected <podclique>:<minAvailable>"),
        ([":3"], "':3': expected"),
        (["pca:0"], "'pca:0': minAvailable must be a positive integer"),
        (["pca:-1"], "minAvailable must be a positive integer"),
        (["pca:two"], "got 'two'"),
        (["Pca:1"], "'Pca' is not a valid PodClique name"),
        (["pca:1", "pca:2"], "'pca' is given twice with different minimums"),
    ],
)
def test_bad_parents_are_refused_naming_the_entry(values: list[str], message: str) -> None:
    with pytest.raises(ValueError, match=message.replace("(", r"\(")):
        parse_parents(values)


def test_ready_means_ready_and_not_terminating() -> None:
    assert is_ready(pod("x", "a"))
    assert not is_ready(pod("x", "a", ready=False))
    assert not is_ready(pod("x", "a", terminating=True))
    assert not is_ready({"metadata": {"name": "x"}})


def test_a_sibling_whose_name_extends_the_parents_does_not_count() -> None:
    """Upstream matches pods by name prefix, so `…-ab` pods would count for `…-a`; the label decides here."""
    tracker = ParentTracker({"app-0-a": 1})
    tracker.on_add(pod("app-0-ab-x1", "app-0-ab"))
    assert tracker.waiting() == {"app-0-a": (0, 1)}
    assert not tracker.done.is_set()
    tracker.on_add(pod("app-0-a-x2", "app-0-a"))
    assert tracker.done.is_set()


def test_the_wait_is_reported_when_the_set_of_parents_changes_not_per_event() -> None:
    reports: list[Waiting] = []
    tracker = ParentTracker({"a": 2, "b": 1}, on_change=reports.append)
    tracker.refresh()
    tracker.on_add(pod("a1", "a"))
    tracker.on_add(pod("x1", "other"))
    tracker.on_add(pod("b1", "b"))
    tracker.on_update(pod("b1", "b"), pod("b1", "b", ready=False))
    tracker.on_update(pod("b1", "b", ready=False), pod("b1", "b"))
    assert reports == [{"a": (0, 2), "b": (0, 1)}, {"a": (1, 2)}, {"a": (1, 2), "b": (0, 1)}, {"a": (1, 2)}]


PARENTS = {"p-a": 2, "p-b": 1}
CLIQUES = ["p-a", "p-b", "p-ab", "other"]
events = st.lists(
    st.tuples(
        st.sampled_from(["add", "update", "delete"]),
        st.integers(0, 5),
        st.sampled_from(CLIQUES),
        st.booleans(),
        st.booleans(),
    ),
    max_size=40,
)


@given(events)
def test_counts_follow_the_pods_and_done_is_set_once_every_minimum_was_met(
    stream: list[tuple[str, int, str, bool, bool]],
) -> None:
    """After any sequence of events the tracker counts exactly the Ready, non-terminating pods labelled with each
    parent, and `done` is set from the first moment every parent had its minimum."""
    tracker = ParentTracker(PARENTS)
    live: dict[str, Obj] = {}
    ever_satisfied = False
    for kind, index, clique, ready, terminating in stream:
        name = f"pod-{index}"
        if kind == "delete":
            if name in live:
                tracker.on_delete(live.pop(name))
        else:
            new = pod(name, live[name]["metadata"]["labels"][glabels.LABEL_PODCLIQUE] if name in live else clique,
                      ready=ready, terminating=terminating)  # fmt: skip
            if name in live:
                tracker.on_update(live[name], new)
            else:
                tracker.on_add(new)
            live[name] = new
        counts = {
            parent: sum(1 for p in live.values() if p["metadata"]["labels"][glabels.LABEL_PODCLIQUE] == parent
                        and is_ready(p))
            for parent in PARENTS
        }  # fmt: skip
        expected = {parent: (counts[parent], needed) for parent, needed in PARENTS.items() if counts[parent] < needed}
        assert tracker.waiting() == expected
        ever_satisfied = ever_satisfied or not expected
        assert tracker.done.is_set() == ever_satisfied

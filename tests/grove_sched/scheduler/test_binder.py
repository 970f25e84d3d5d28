"""Binder: bounded concurrent binds, rollback below the minimum, tolerated extra failures."""

from __future__ import annotations

import asyncio
from collections.abc import Callable, Mapping
from typing import Any

import pytest

from grove_runtime import errors
from grove_runtime.leaderelection import LeadershipLost
from grove_runtime.resources import ResourceType
from grove_sched.binder import Binder, BindPlan


class FakeApi:
    """Records binds and deletes; pods named in `fail` reject their bind with the given error."""

    def __init__(self, fail: Mapping[str, errors.ApiError] | None = None, bound: Mapping[str, str] | None = None):
        self.fail = dict(fail or {})
        self.nodes: dict[str, str] = dict(bound or {})
        self.deleted: list[tuple[str, str | None]] = []
        self.active = 0
        self.peak = 0

    async def bind(
        self, namespace: str, pod: str, node: str, *, uid: str | None = None, fence: Callable[[], bool] | None = None
    ) -> None:
        self.active += 1
        self.peak = max(self.peak, self.active)
        await asyncio.sleep(0)
        self.active -= 1
        if pod in self.fail:
            raise self.fail[pod]
        self.nodes[pod] = node

    async def get(self, rt: ResourceType, name: str, namespace: str = "") -> dict[str, Any]:
        return {"metadata": {"name": name, "uid": f"uid-{name}"}, "spec": {"nodeName": self.nodes.get(name)}}

    async def delete(
        self,
        rt: ResourceType,
        name: str,
        namespace: str = "",
        *,
        propagation_policy: str | None = None,
        grace_period_seconds: int | None = None,
        preconditions: Mapping[str, str] | None = None,
    ) -> dict[str, Any]:
        self.deleted.append((name, (preconditions or {}).get("uid")))
        return {}


def plan(assign: dict[str, str], groups: dict[str, str], mins: dict[str, int]) -> BindPlan:
    return BindPlan("ns", "g", assign, {p: f"uid-{p}" for p in assign}, groups, mins)


async def test_all_bound() -> None:
    """Every pod is bound and nothing is deleted."""
    api = FakeApi()
    out = await Binder(api).bind(plan({"a": "n1", "b": "n2"}, {"a": "x", "b": "x"}, {"x": 2}))
    assert out.ok
    assert out.bound == ("a", "b")
    assert api.nodes == {"a": "n1", "b": "n2"}
    assert api.deleted == []


async def test_failure_below_minimum_rolls_back_with_uid_precondition() -> None:
    """A failed bind of the minimum deletes every pod bound in this attempt, with its uid as precondition."""
    api = FakeApi(fail={"b": errors.NotFound("gone", status=404)})
    out = await Binder(api).bind(plan({"a": "n1", "b": "n1", "c": "n2"}, dict.fromkeys("abc", "x"), {"x": 3}))
    assert not out.ok
    assert set(out.failed) == {"b"}
    assert sorted(api.deleted) == [(p, f"uid-{p}") for p in out.bound]
    assert out.rolled_back == out.bound
    assert "binding pod b failed" in out.reasons[0]


async def test_extra_failure_is_tolerated() -> None:
    """An extra pod (beyond the minimum) may fail on its own without a rollback."""
    api = FakeApi(fail={"c": errors.ServerError("boom", status=500)})
    out = await Binder(api).bind(plan({"a": "n1", "b": "n1", "c": "n2"}, dict.fromkeys("abc", "x"), {"x": 2}))
    assert out.ok
    assert out.bound == ("a", "b")
    assert set(out.failed) == {"c"}
    assert api.deleted == []


async def test_conflict_on_same_node_counts_as_bound() -> None:
    """A 409 for a pod that already sits on the intended node (a retried POST) is a success."""
    api = FakeApi(fail={"a": errors.Conflict("already assigned", status=409)}, bound={"a": "n1"})
    out = await Binder(api).bind(plan({"a": "n1"}, {"a": "x"}, {"x": 1}))
    assert out.ok
    assert out.bound == ("a",)


async def test_conflict_on_other_node_fails() -> None:
    """A 409 for a pod bound elsewhere is a failure (and rolls back the gang)."""
    api = FakeApi(fail={"a": errors.Conflict("already assigned", status=409)}, bound={"a": "n9"})
    out = await Binder(api).bind(plan({"a": "n1", "b": "n1"}, {"a": "x", "b": "x"}, {"x": 2}))
    assert not out.ok
    assert ("b", "uid-b") in api.deleted


async def test_concurrency_is_bounded() -> None:
    """No more than `concurrency` binds are in flight at once."""
    api = FakeApi()
    pods = {f"p{i}": "n" for i in range(20)}
    out = await Binder(api, concurrency=3).bind(plan(pods, dict.fromkeys(pods, "x"), {"x": 20}))
    assert out.ok
    assert api.peak <= 3


async def test_placement_below_minimum_binds_nothing() -> None:
    """A plan that cannot meet a group's minimum is refused before any POST."""
    api = FakeApi()
    out = await Binder(api).bind(plan({"a": "n1"}, {"a": "x"}, {"x": 2}))
    assert not out.ok
    assert api.nodes == {}


async def test_a_fenced_binder_sends_nothing_more_and_rolls_nothing_back() -> None:
    """Once the fence says the process no longer leads, no further bind (nor a rollback delete) is sent and the
    binder raises LeadershipLost; the binds already made stay for the next leader to complete or roll back."""
    api = FakeApi()
    sent: list[str] = []
    original = api.bind

    async def bind(
        namespace: str, pod: str, node: str, *, uid: str | None = None, fence: Callable[[], bool] | None = None
    ) -> None:
        sent.append(pod)
        await original(namespace, pod, node, uid=uid)

    api.bind = bind  # type: ignore[method-assign]
    binder = Binder(api, concurrency=1, leading=lambda: len(sent) < 2)
    with pytest.raises(LeadershipLost, match="after 2 pod"):
        await binder.bind(plan({p: "n1" for p in "abcd"}, dict.fromkeys("abcd", "x"), {"x": 4}))
    assert sent == ["a", "b"]
    assert api.deleted == []
    with pytest.raises(LeadershipLost):
        await binder.delete_pods("ns", {"a": "uid-a"})
    assert api.deleted == []

"""Which hierarchy a gang gets: its PodGang's ClusterTopologyBinding, the one binding that fits, or the default."""

from __future__ import annotations

from typing import Any

from hypothesis import given
from hypothesis import strategies as st

from grove_sched.gangs import AssemblyContext, GangKey, ReadyGang, assemble
from grove_sched.topology import binding_levels, resolve_levels

from .kit import SCHED, pod, podgang

RACK = "topology.kubernetes.io/rack"
NET = ("example.com/spine", "example.com/leaf", "kubernetes.io/hostname")


def binding(name: str, *keys: str) -> dict[str, Any]:
    return {"metadata": {"name": name}, "spec": {"levels": [{"domain": f"d{i}", "key": k} for i, k in enumerate(keys)]}}


def named(name: str | None) -> dict[str, Any]:
    return {"metadata": {"name": "g", "annotations": {"grove.io/topology-name": name} if name else {}}}


def test_the_binding_the_podgang_names_wins() -> None:
    """The annotation `grove.io/topology-name` picks the binding, even when another one would also fit."""
    bindings = [binding("net", *NET), binding("other", "example.com/leaf")]
    assert resolve_levels(named("net"), {"example.com/leaf"}, bindings) == NET
    assert resolve_levels(named("other"), {"example.com/leaf"}, bindings) == ("example.com/leaf",)


def test_without_a_usable_name_the_only_fitting_binding_is_used() -> None:
    """A missing or unknown name falls back to the one binding holding every key of the gang; two candidates or
    none mean the default hierarchy (an empty answer)."""
    bindings = [binding("net", *NET), binding("dc", "topology.kubernetes.io/zone", RACK)]
    assert resolve_levels(named(None), {"example.com/leaf"}, bindings) == NET
    assert resolve_levels(named("deleted"), {RACK}, bindings) == ("topology.kubernetes.io/zone", RACK)
    assert resolve_levels(named(None), set(), bindings) == ()  # both fit: ambiguous
    assert resolve_levels(named(None), {"unknown"}, bindings) == ()
    assert resolve_levels(None, set(), [binding("only", RACK)]) == (RACK,)


def test_unreadable_bindings_are_ignored() -> None:
    """Levels that are missing, not a list, keyless or repeating a key make a binding unusable, never a crash."""
    assert binding_levels({"spec": {}}) is None
    assert binding_levels({"spec": {"levels": "rack"}}) is None
    assert binding_levels({"spec": {"levels": [{"domain": "rack"}]}}) is None
    assert binding_levels(binding("x", RACK, RACK)) is None
    bad = {"metadata": {"name": "net"}, "spec": {"levels": [None]}}
    assert resolve_levels(named("net"), {RACK}, [bad, binding("dc", RACK)]) == (RACK,)


def test_assembly_hands_the_levels_to_placement() -> None:
    """The ready gang's request carries the hierarchy resolved for its PodGang and its constraint keys."""
    seen: list[tuple[str, ...]] = []

    def levels(pg: Any, keys: Any) -> tuple[str, ...]:
        seen.append(tuple(sorted(keys)))
        return NET

    context = AssemblyContext(SCHED, frozenset({RACK}), {}.get, topology_levels=levels)
    pg = podgang("g", {"w": (["a"], 1)}, required=RACK)
    result = assemble(GangKey("default", "g"), pg, {"a": pod("a", gang="g")}, context)
    assert isinstance(result, ReadyGang)
    assert result.request.topology_levels == NET
    assert seen == [(RACK,)]


KEYS = ("k/zone", "k/block", "k/rack", "k/leaf", "kubernetes.io/hostname")
ANY_OBJECT: st.SearchStrategy[Any] = st.recursive(
    st.none() | st.booleans() | st.integers() | st.text(max_size=6),
    lambda inner: st.lists(inner, max_size=3) | st.dictionaries(st.text(max_size=6), inner, max_size=3),
    max_leaves=6,
)


@st.composite
def bindings_and_gang(draw: st.DrawFn) -> tuple[list[Any], Any, set[str]]:
    """Readable bindings (levels drawn from KEYS), some unreadable objects, a PodGang naming one of them or not."""
    readable = [
        binding(f"b{i}", *draw(st.lists(st.sampled_from(KEYS), min_size=1, max_size=4, unique=True)))
        for i in range(draw(st.integers(0, 3)))
    ]
    odd = [{"metadata": {"name": f"x{i}"}, "spec": draw(ANY_OBJECT)} for i in range(draw(st.integers(0, 2)))]
    everything = draw(st.permutations(readable + odd))
    name = draw(
        st.sampled_from([None, "gone", *[f"b{i}" for i in range(len(readable))], *[f"x{i}" for i in range(len(odd))]])
    )
    return everything, named(name), set(draw(st.lists(st.sampled_from(KEYS), max_size=2)))


@given(bindings_and_gang())
def test_the_rule_names_one_readable_binding_or_the_default(case: tuple[list[Any], Any, set[str]]) -> None:
    """Whatever the bindings hold: the answer is the named binding's levels when it is readable, else the levels of
    the one readable binding holding every key, else the default (empty); never a crash, never a mix."""
    bindings, podgang_, keys = case
    readable = {b["metadata"]["name"]: binding_levels(b) for b in bindings if binding_levels(b) is not None}
    name = podgang_["metadata"]["annotations"].get("grove.io/topology-name")
    fitting = [levels for levels in readable.values() if levels is not None and keys <= set(levels)]
    expected = readable[name] if name in readable else fitting[0] if len(fitting) == 1 else ()
    assert resolve_levels(podgang_, keys, bindings) == expected

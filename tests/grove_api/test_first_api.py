"""The first API (`grove.dynamo.ai/v1`): its CRDs, label selectors and the pod spec a PodGangSet gives its pods."""

from __future__ import annotations

from typing import Any

from hypothesis import given
from hypothesis import strategies as st

from grove_api import DynamoPodClique, LabelSelector, PodGangSet, crdgen
from grove_api.gangpod import gang_pod_spec, merge_node_affinity

CRDS = {crd["metadata"]["name"]: crd for crd in crdgen.generate()}


def test_crds_names_versions_and_subresources() -> None:
    """PodGangSet (pgs) scales through .spec.replicas; the v1 PodClique has no short name (pclq is grove.io's)."""
    pgs = CRDS["podgangsets.grove.dynamo.ai"]["spec"]
    assert pgs["names"]["shortNames"] == ["pgs"]
    (version,) = pgs["versions"]
    assert version["name"] == "v1"
    assert version["subresources"]["scale"] == {
        "specReplicasPath": ".spec.replicas",
        "statusReplicasPath": ".status.replicas",
        "labelSelectorPath": ".status.selector",
    }
    assert [c["name"] for c in version["additionalPrinterColumns"]][:4] == [
        "Replicas", "MinAvailable", "Ready", "Scheduled",
    ]  # fmt: skip
    clique = CRDS["dynamopodcliques.grove.dynamo.ai"]["spec"]
    assert (clique["names"]["plural"], clique["names"]["shortNames"]) == ("dynamopodcliques", ["dpclq"])
    plurals = [crd["spec"]["names"]["plural"] for crd in CRDS.values()]
    assert len(plurals) == len(set(plurals)), "a resource name served by two groups would shadow one in kubectl"
    assert clique["versions"][0]["subresources"] == {"status": {}}
    short = [n for crd in CRDS.values() for n in crd["spec"]["names"].get("shortNames", [])]
    assert len(short) == len(set(short))


_KEYS = st.sampled_from(["app", "component", "tier"])
_VALUES = st.sampled_from(["a", "b", "c"])


@given(
    st.dictionaries(_KEYS, _VALUES),
    st.lists(
        st.tuples(_KEYS, st.sampled_from(["In", "NotIn", "Exists", "DoesNotExist"]), st.lists(_VALUES, max_size=2))
    ),
)
def test_selector_matches_as_kubernetes_defines_it(
    labels: dict[str, str], exprs: list[tuple[str, str, list[str]]]
) -> None:
    """Every expression must hold: In needs the key with a listed value, NotIn holds for a missing key."""
    selector = LabelSelector.model_validate(
        {"matchExpressions": [{"key": k, "operator": op, "values": v} for k, op, v in exprs]}
    )

    def holds(key: str, op: str, values: list[str]) -> bool:
        return {
            "In": key in labels and labels[key] in values,
            "NotIn": key not in labels or labels[key] not in values,
            "Exists": key in labels,
            "DoesNotExist": key not in labels,
        }[op]

    assert selector.matches(labels) == all(holds(*e) for e in exprs)


def _pgs(**spec: Any) -> PodGangSet:
    body = {
        "metadata": {"name": "g", "namespace": "ns"},
        "spec": {
            "template": {
                "metadata": {"labels": {"app": "w"}},
                "spec": {
                    "containers": [
                        {"name": "c", "image": "i", "resources": {"requests": {"nvidia.com/gpu": 2, "cpu": "1"}}}
                    ]
                },
            },
            **spec,
        },
    }
    return PodGangSet.model_validate(body)


def _clique(name: str, selector: dict[str, Any], key: str) -> DynamoPodClique:
    term = {"weight": 10, "podAffinityTerm": {"labelSelector": {"matchLabels": {"app": "w"}}, "topologyKey": key}}
    return DynamoPodClique.model_validate(
        {
            "metadata": {"name": name},
            "spec": {"selector": selector, "topology": {"preferredDuringSchedulingIgnoredDuringExecution": [term]}},
        }
    )


def test_gang_pod_spec_merges_affinity_and_fills_extended_limits() -> None:
    """Node affinity from scheduling, preferred terms of the selecting PodCliques only, a GPU limit equal to the
    request (cpu, which may be overcommitted, gets none)."""
    node = {
        "requiredDuringSchedulingIgnoredDuringExecution": {
            "nodeSelectorTerms": [{"matchExpressions": [{"key": "t", "operator": "In", "values": ["x"]}]}]
        }
    }
    pgs = _pgs(scheduling={"nodeAffinity": node}, replicas=3, minAvailable=5)
    assert pgs.spec.effective_min_available() == 3
    cliques = [
        _clique("rack", {"matchLabels": {"app": "w"}}, "rack"),
        _clique("other", {"matchLabels": {"app": "x"}}, "zone"),
    ]
    spec, chosen = gang_pod_spec(pgs, {"app": "w"}, cliques)
    assert [c.metadata.name for c in chosen] == ["rack"]
    assert spec["affinity"]["nodeAffinity"] == node
    (term,) = spec["affinity"]["podAffinity"]["preferredDuringSchedulingIgnoredDuringExecution"]
    assert term["podAffinityTerm"]["topologyKey"] == "rack"
    assert spec["containers"][0]["resources"]["limits"] == {"nvidia.com/gpu": 2}
    assert "limits" not in pgs.spec.template.spec["containers"][0]["resources"], "the template is not modified"


def test_node_affinities_are_anded_term_by_term() -> None:
    """(a OR b) AND (c) is (a AND c) OR (b AND c); preferred terms are concatenated."""

    def term(key: str) -> dict[str, Any]:
        return {"matchExpressions": [{"key": key, "operator": "Exists"}]}

    required = "requiredDuringSchedulingIgnoredDuringExecution"
    pod = {
        required: {"nodeSelectorTerms": [term("a"), term("b")]},
        "preferredDuringSchedulingIgnoredDuringExecution": [{"weight": 1, "preference": term("p")}],
    }
    extra = {required: {"nodeSelectorTerms": [term("c")]}}
    merged = merge_node_affinity(pod, extra)
    assert merged is not None
    keys = [[e["key"] for e in t["matchExpressions"]] for t in merged[required]["nodeSelectorTerms"]]
    assert keys == [["a", "c"], ["b", "c"]]
    assert (
        merged["preferredDuringSchedulingIgnoredDuringExecution"]
        == pod["preferredDuringSchedulingIgnoredDuringExecution"]
    )
    assert merge_node_affinity(None, extra) == extra

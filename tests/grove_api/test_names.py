"""Object names agree with grove-reference §2.1 and the expected objects of every sample (§4)."""

from __future__ import annotations

import re
from dataclasses import dataclass, field

import pytest
from hypothesis import given
from hypothesis import strategies as st

from grove_api import PodCliqueSet, names

from ..fixtures.samples import load_sample

DNS_LABEL = re.compile(r"^[a-z0-9]([-a-z0-9]*[a-z0-9])?$")
DNS_SUBDOMAIN = re.compile(r"^[a-z0-9]([-a-z0-9]*[a-z0-9])?(\.[a-z0-9]([-a-z0-9]*[a-z0-9])?)*$")


@dataclass
class Expanded:
    """The objects one PCS replica expands into, by name."""

    pclqs: set[str] = field(default_factory=set)
    pcsgs: set[str] = field(default_factory=set)
    gangs: set[str] = field(default_factory=set)
    pods: int = 0


def expand(pcs: PodCliqueSet, replica: int = 0) -> Expanded:
    """Expand replica `replica` of a PCS with the name functions, as the operator does."""
    out = Expanded(gangs={names.base_podgang_name(pcs.metadata.name or "", replica)})
    name = pcs.metadata.name or ""
    template = pcs.spec.template
    grouped = {c for g in template.pod_clique_scaling_groups or () for c in g.clique_names}
    for clique in template.cliques:
        if clique.name not in grouped:
            out.pclqs.add(names.standalone_pclq_name(name, replica, clique.name))
            out.pods += clique.spec.replicas
    for group in template.pod_clique_scaling_groups or ():
        fqn = names.pcsg_name(name, replica, group.name)
        out.pcsgs.add(fqn)
        for j in range(group.effective_replicas()):
            out.gangs.add(
                names.podgang_name(
                    name, replica, pcsg_fqn=fqn, pcsg_replica=j, pcsg_min_available=group.effective_min_available()
                )
            )
            for member in group.clique_names:
                member_template = template.clique(member)
                assert member_template is not None
                out.pclqs.add(names.pcsg_member_pclq_name(fqn, j, member))
                out.pods += member_template.spec.replicas
    return out


def _brace(prefix: str, *parts: str) -> set[str]:
    """`prefix-<part>` for each part: shorthand for the §4 table's `{a,b}` notation."""
    return {f"{prefix}-{p}" for p in parts}


CASES = [
    pytest.param(
        "simple/simple1.yaml",
        _brace("simple1-0", "pca", "pcd", "sga-0-pcb", "sga-0-pcc"),
        {"simple1-0-sga"},
        {"simple1-0"},
        9,
        id="simple1",
    ),
    pytest.param(
        "simple/simple2-explicit-startup-order.yaml",
        _brace("simple2-0", "pca", "pcb", "pcc", "pcd"),
        set(),
        {"simple2-0"},
        9,
        id="simple2",
    ),
    pytest.param(
        "simple/simple3-explicit-startup-order.yaml",
        _brace("simple3-0", "pca", "pce") | {f"simple3-0-sga-{j}-{c}" for j in range(3) for c in ("pcb", "pcc", "pcd")},
        {"simple3-0-sga"},
        {"simple3-0", "simple3-0-sga-0"},
        23,
        id="simple3",
    ),
    pytest.param(
        "user-guide/01_core-concepts/single-node-aggregated.yaml",
        {"single-node-aggregated-0-model-worker"},
        set(),
        {"single-node-aggregated-0"},
        2,
        id="single-node-aggregated",
    ),
    pytest.param(
        "user-guide/01_core-concepts/single-node-disaggregated.yaml",
        _brace("single-node-disaggregated-0", "prefill", "decode"),
        set(),
        {"single-node-disaggregated-0"},
        5,
        id="single-node-disaggregated",
    ),
    pytest.param(
        "user-guide/01_core-concepts/multi-node-aggregated.yaml",
        _brace("multinode-aggregated-0-model-instance", "0-leader", "0-worker", "1-leader", "1-worker"),
        {"multinode-aggregated-0-model-instance"},
        {"multinode-aggregated-0", "multinode-aggregated-0-model-instance-0"},
        8,
        id="multi-node-aggregated",
    ),
    pytest.param(
        "user-guide/01_core-concepts/multi-node-disaggregated.yaml",
        _brace(
            "multinode-disaggregated-0",
            "prefill-0-pleader",
            "prefill-0-pworker",
            "prefill-1-pleader",
            "prefill-1-pworker",
            "decode-0-dleader",
            "decode-0-dworker",
        ),
        {"multinode-disaggregated-0-prefill", "multinode-disaggregated-0-decode"},
        {"multinode-disaggregated-0", "multinode-disaggregated-0-prefill-0"},
        13,
        id="multi-node-disaggregated",
    ),
    pytest.param(
        "user-guide/01_core-concepts/complete-inference-pipeline.yaml",
        _brace(
            "comp-inf-ppln-0",
            "frontend",
            "vision-encoder",
            "prefill-0-pleader",
            "prefill-0-pworker",
            "decode-cluster-0-dleader",
            "decode-cluster-0-dworker",
        ),
        {"comp-inf-ppln-0-prefill", "comp-inf-ppln-0-decode-cluster"},
        {"comp-inf-ppln-0"},
        11,
        id="complete-inference-pipeline",
    ),
    pytest.param(
        "user-guide/02_pod-and-resource-naming-conventions/multinode-disaggregated-with-frontend.yaml",
        _brace(
            "mn-disagg-0",
            "frontend",
            "prefill-0-pleader",
            "prefill-0-pworker",
            "prefill-1-pleader",
            "prefill-1-pworker",
            "decode-0-dleader",
            "decode-0-dworker",
        ),
        {"mn-disagg-0-prefill", "mn-disagg-0-decode"},
        {"mn-disagg-0", "mn-disagg-0-prefill-0"},
        13,
        id="mn-disagg",
    ),
    pytest.param(
        "user-guide/03_environment-variables-for-pod-discovery/pcsg-env-vars.yaml",
        _brace("env-demo-pcsg-0-model-instance", "0-leader", "0-worker", "1-leader", "1-worker"),
        {"env-demo-pcsg-0-model-instance"},
        {"env-demo-pcsg-0", "env-demo-pcsg-0-model-instance-0"},
        8,
        id="pcsg-env-vars",
    ),
    pytest.param(
        "user-guide/03_environment-variables-for-pod-discovery/standalone-env-vars.yaml",
        {"env-demo-standalone-0-frontend"},
        set(),
        {"env-demo-standalone-0"},
        2,
        id="standalone-env-vars",
    ),
]


@pytest.mark.parametrize(("sample", "pclqs", "pcsgs", "gangs", "pods"), CASES)
def test_sample_expands_to_expected_names(
    sample: str, pclqs: set[str], pcsgs: set[str], gangs: set[str], pods: int
) -> None:
    """Replica 0 of each sample yields exactly the PodCliques, PCSGs, PodGangs and pod count of §4."""
    pcs = PodCliqueSet.model_validate(load_sample(sample))
    got = expand(pcs)
    assert got.pclqs == pclqs
    assert got.pcsgs == pcsgs
    assert got.gangs == gangs
    assert got.pods == pods


def test_podgang_membership_by_pcsg_replica() -> None:
    """PCSG replicas below minAvailable join the base gang; later ones get `<pcsg-fqn>-<j-minAvailable>`."""
    fqn = names.pcsg_name("simple3", 0, "sga")
    got = [names.podgang_name("simple3", 0, pcsg_fqn=fqn, pcsg_replica=j, pcsg_min_available=2) for j in range(4)]
    assert got == ["simple3-0", "simple3-0", "simple3-0-sga-0", "simple3-0-sga-1"]
    assert names.scaled_podgang_name("simple3", 0, fqn, 2, 2) == "simple3-0-sga-0"
    with pytest.raises(ValueError, match="base gang"):
        names.scaled_podgang_name("simple3", 0, fqn, 1, 2)
    with pytest.raises(ValueError, match="pcs_replica"):
        names.podgang_name("simple3", -1)


def test_pod_and_service_names() -> None:
    """Hostname, subdomain, headless service FQDN and the helper object names follow §2.1."""
    pclq = names.standalone_pclq_name("env-demo-standalone", 0, "frontend")
    assert [names.pod_hostname(pclq, i) for i in range(2)] == [
        "env-demo-standalone-0-frontend-0",
        "env-demo-standalone-0-frontend-1",
    ]
    assert names.pod_generate_name(pclq) == "env-demo-standalone-0-frontend-"
    assert names.pod_subdomain("env-demo-standalone", 0) == "env-demo-standalone-0"
    assert names.headless_service_name("env-demo-standalone", 0) == "env-demo-standalone-0"
    assert (
        names.headless_service_fqdn("env-demo-standalone", 0, "default")
        == "env-demo-standalone-0.default.svc.cluster.local"
    )
    assert (
        names.pod_fqdn("mn-disagg-0-prefill-1-pworker", 0, "mn-disagg", 0, "ns")
        == "mn-disagg-0-prefill-1-pworker-0.mn-disagg-0.ns.svc.cluster.local"
    )
    assert names.service_account_name("p") == "p"
    assert names.role_name("p") == names.role_binding_name("p") == "grove.io:pcs:p"
    assert names.sa_token_secret_name("p") == "p-ic-sat"
    assert names.legacy_sa_token_secret_name("p") == "p-initc-sa-token-secret"
    assert names.hpa_name("p-0-sga") == "p-0-sga"
    assert names.topology_constraint_group_config_name("p-0-sga", 1) == "p-0-sga-1"
    assert names.resource_claim_name("p", "gpu") == "p-all-gpu"
    assert names.resource_claim_name("p-0-a", "gpu", 2) == "p-0-a-2-gpu"


@pytest.mark.parametrize(
    ("pcs", "clique", "group", "ok"),
    [
        pytest.param("a" * 40, "b" * 5, None, True, id="standalone-at-limit"),
        pytest.param("a" * 40, "b" * 6, None, False, id="standalone-over"),
        pytest.param("a" * 20, "b" * 5, "c" * 20, True, id="member-at-limit"),
        pytest.param("a" * 20, "b" * 5, "c" * 21, False, id="member-over"),
    ],
)
def test_combined_name_length_rule(pcs: str, clique: str, group: str | None, ok: bool) -> None:
    """The 45-character rule counts PCS + clique (+ scaling group) name lengths, inclusive."""
    error = names.combined_name_length_error(pcs, clique, group)
    assert (error is None) is ok
    if error is not None:
        assert "45" in error


_label_part = st.from_regex(r"[a-z]([a-z0-9-]{0,6}[a-z0-9])?", fullmatch=True)
_index = st.integers(min_value=0, max_value=999)


@st.composite
def _valid_inputs(draw: st.DrawFn) -> tuple[str, str, str, int, int, int]:
    """PCS / PCSG / clique names that pass the 45-character rule, plus replica and pod indices."""
    pcs = draw(_label_part.filter(lambda s: len(s) <= 15))
    group = draw(_label_part.filter(lambda s: len(s) <= 15))
    clique = draw(_label_part.filter(lambda s: len(s) <= 15))
    return pcs, group, clique, draw(_index), draw(_index), draw(_index)


@given(_valid_inputs())
def test_generated_names_are_dns_labels(inputs: tuple[str, str, str, int, int, int]) -> None:
    """For valid inputs every derived name is a DNS-1123 label (≤ 63) and FQDNs are DNS subdomains."""
    pcs, group, clique, i, j, pod = inputs
    assert names.combined_name_length_error(pcs, clique, group) is None
    fqn = names.pcsg_name(pcs, i, group)
    member = names.pcsg_member_pclq_name(fqn, j, clique)
    derived = [
        names.standalone_pclq_name(pcs, i, clique),
        fqn,
        member,
        names.base_podgang_name(pcs, i),
        names.podgang_name(pcs, i, pcsg_fqn=fqn, pcsg_replica=j, pcsg_min_available=1),
        names.headless_service_name(pcs, i),
        names.pod_hostname(member, pod),
        names.pod_generate_name(member) + "abcde",
        names.sa_token_secret_name(pcs),
    ]
    for name in derived:
        assert len(name) <= 63
        assert DNS_LABEL.match(name), name
    fqdn = names.pod_fqdn(member, pod, pcs, i, "default")
    assert len(fqdn) <= 253
    assert DNS_SUBDOMAIN.match(fqdn), fqdn

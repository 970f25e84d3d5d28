"""Label sets of every managed object kind follow grove-reference §2.2."""

from __future__ import annotations

import pytest
from hypothesis import given
from hypothesis import strategies as st

from grove_api import labels, names


def test_managed_labels_are_the_common_pair() -> None:
    """Every managed object carries managed-by=grove-operator and part-of=<pcs>."""
    assert labels.managed_labels("simple1") == {
        "app.kubernetes.io/managed-by": "grove-operator",
        "app.kubernetes.io/part-of": "simple1",
    }


def test_standalone_pclq_labels_and_template_precedence() -> None:
    """A standalone PodClique gets its name, component, replica index, gang and hash; Grove keys beat template keys."""
    got = labels.standalone_pclq_labels(
        "simple1",
        0,
        "simple1-0-pca",
        "simple1-0",
        "h1",
        template_labels={"team": "a", "grove.io/podgang": "forged", "app.kubernetes.io/part-of": "other"},
    )
    assert got == {
        "team": "a",
        "app.kubernetes.io/managed-by": "grove-operator",
        "app.kubernetes.io/part-of": "simple1",
        "app.kubernetes.io/name": "simple1-0-pca",
        "app.kubernetes.io/component": "pcs-podclique",
        "grove.io/podcliqueset-replica-index": "0",
        "grove.io/podgang": "simple1-0",
        "grove.io/pod-template-hash": "h1",
    }


@pytest.mark.parametrize(
    ("pcsg_replica", "base"),
    [pytest.param(0, None, id="base-gang-member"), pytest.param(2, "simple3-0", id="scaled-gang-member")],
)
def test_pcsg_member_pclq_labels(pcsg_replica: int, base: str | None) -> None:
    """PCSG members carry PCSG name and replica index; `base-podgang` appears only for scaled-gang members."""
    fqn = names.pcsg_name("simple3", 0, "sga")
    gang = names.podgang_name("simple3", 0, pcsg_fqn=fqn, pcsg_replica=pcsg_replica, pcsg_min_available=2)
    pclq = names.pcsg_member_pclq_name(fqn, pcsg_replica, "pcb")
    got = labels.pcsg_member_pclq_labels("simple3", 0, fqn, pcsg_replica, pclq, gang, "h", base_podgang=base)
    assert got[labels.LABEL_COMPONENT] == "pcsg-podclique"
    assert got[labels.LABEL_PCSG] == "simple3-0-sga"
    assert got[labels.LABEL_PCSG_REPLICA_INDEX] == str(pcsg_replica)
    assert got[labels.LABEL_PCS_REPLICA_INDEX] == "0"
    assert got[labels.LABEL_PODGANG] == gang
    assert got.get(labels.LABEL_BASE_PODGANG) == base
    assert got[labels.LABEL_NAME] == pclq


def test_pod_labels_extend_the_podclique_labels() -> None:
    """A pod has its PodClique's labels plus `grove.io/podclique` and its pod index."""
    pclq = labels.standalone_pclq_labels("p", 1, "p-1-a", "p-1", "h")
    got = labels.pod_labels(pclq, "p-1-a", 4)
    assert got == {**pclq, "grove.io/podclique": "p-1-a", "grove.io/podclique-pod-index": "4"}


def test_pcsg_service_and_helper_labels() -> None:
    """PCSG, headless service and helper objects get their own component values."""
    assert labels.pcsg_labels("p", 0, "p-0-sga") == {
        **labels.managed_labels("p"),
        "app.kubernetes.io/name": "p-0-sga",
        "app.kubernetes.io/component": "pcs-podcliquescalinggroup",
        "grove.io/podcliqueset-replica-index": "0",
    }
    assert labels.headless_service_labels("p", 1, "p-1")["app.kubernetes.io/component"] == "pcs-headless-service"
    assert labels.headless_service_selector("p", 1) == {
        **labels.managed_labels("p"),
        "grove.io/podcliqueset-replica-index": "1",
    }
    role = labels.component_labels("p", labels.COMPONENT_ROLE, names.role_name("p"))
    assert role["app.kubernetes.io/name"] == "grove.io-pcs-p"
    assert role["app.kubernetes.io/component"] == "pod-role"


def test_podgang_labels_mirror_pcs_labels_except_grove_keys() -> None:
    """A PodGang mirrors the PCS's non-`grove.io/` labels and records the resolved scheduler."""
    got = labels.podgang_labels("p", "grove-scheduler", {"app": "x", "grove.io/internal": "y"})
    assert got == {
        "app": "x",
        **labels.managed_labels("p"),
        "app.kubernetes.io/component": "podgang",
        "grove.io/scheduler-name": "grove-scheduler",
    }


def test_status_selectors() -> None:
    """The HPA/scale selectors published in status have the documented text form."""
    managed = "app.kubernetes.io/managed-by=grove-operator,app.kubernetes.io/part-of=p"
    assert labels.pcs_hpa_pod_selector("p") == managed
    assert labels.pclq_hpa_pod_selector("p", "p-0-a") == managed + ",grove.io/podclique=p-0-a"
    assert labels.pcsg_selector("p", "p-0-sga") == managed + ",grove.io/podcliquescalinggroup=p-0-sga"


def test_well_known_constants() -> None:
    """Gate, finalizer and env var names are the upstream strings other programs depend on."""
    assert labels.SCHEDULING_GATE_PODGANG_PENDING == "grove.io/podgang-pending-creation"
    assert labels.FINALIZER_PCS == "grove.io/podcliqueset.grove.io"
    assert labels.FINALIZER_PCLQ == "grove.io/podclique.grove.io"
    assert labels.FINALIZER_PCSG == "grove.io/podcliquescalinggroup.grove.io"
    env = [
        labels.ENV_PCS_NAME,
        labels.ENV_PCS_INDEX,
        labels.ENV_PCLQ_NAME,
        labels.ENV_HEADLESS_SERVICE,
        labels.ENV_PCLQ_POD_INDEX,
        labels.ENV_PCSG_NAME,
        labels.ENV_PCSG_TEMPLATE_NUM_PODS,
        labels.ENV_PCSG_INDEX,
    ]
    assert all(e.startswith("GROVE_") for e in env)
    assert len(set(env)) == 8


_keys = st.sampled_from(
    [labels.LABEL_PODGANG, labels.LABEL_PART_OF, labels.LABEL_COMPONENT, "team", "app", "tier", "grove.io/x"]
)


@given(st.dictionaries(_keys, st.text(alphabet="abc", max_size=3), max_size=7))
def test_grove_keys_always_win_over_template_labels(template: dict[str, str]) -> None:
    """Whatever the template labels, Grove's keys keep Grove's values and other template labels survive."""
    got = labels.pcsg_member_pclq_labels("p", 0, "p-0-g", 1, "p-0-g-1-a", "p-0-g-0", "h", "p-0", template)
    grove = labels.pcsg_member_pclq_labels("p", 0, "p-0-g", 1, "p-0-g-1-a", "p-0-g-0", "h", "p-0")
    assert {k: got[k] for k in grove} == grove
    assert {k: v for k, v in got.items() if k not in grove} == {k: v for k, v in template.items() if k not in grove}

"""Label, annotation, finalizer, env-var and gate names, and the label sets of each managed object.

Operator, scheduler and init container select objects by these labels, so the keys and the exact set each kind
carries are defined once here (grove-reference §2.2-2.4, §3.11). Label-set builders are pure functions returning
fresh dicts in a stable order.
"""

from __future__ import annotations

from collections.abc import Mapping

__all__ = [
    "ANNOTATION_DISABLE_MANAGED_RESOURCE_PROTECTION",
    "ANNOTATION_KAI_POD_GROUP_NAME",
    "ANNOTATION_KAI_SKIP_PODGROUPER",
    "ANNOTATION_MNNVL_GROUP",
    "ANNOTATION_RECONCILE_TRIGGER",
    "ANNOTATION_SERVICE_ACCOUNT_NAME",
    "ANNOTATION_TOPOLOGY_NAME",
    "ANNOTATION_VOLCANO_GROUP_NAME",
    "ANNOTATION_VOLCANO_K8S_GROUP_NAME",
    "COMPONENT_HEADLESS_SERVICE",
    "COMPONENT_HPA",
    "COMPONENT_PCSG",
    "COMPONENT_PCSG_PODCLIQUE",
    "COMPONENT_PCS_PODCLIQUE",
    "COMPONENT_PODGANG",
    "COMPONENT_RESOURCE_CLAIM",
    "COMPONENT_ROLE",
    "COMPONENT_ROLE_BINDING",
    "COMPONENT_SA_TOKEN_SECRET",
    "COMPONENT_SERVICE_ACCOUNT",
    "ENV_HEADLESS_SERVICE",
    "ENV_INIT_CONTAINER_IMAGE",
    "ENV_PCLQ_NAME",
    "ENV_PCLQ_POD_INDEX",
    "ENV_PCSG_INDEX",
    "ENV_PCSG_NAME",
    "ENV_PCSG_TEMPLATE_NUM_PODS",
    "ENV_PCS_INDEX",
    "ENV_PCS_NAME",
    "FINALIZER_COMPUTE_DOMAIN",
    "FINALIZER_PCLQ",
    "FINALIZER_PCS",
    "FINALIZER_PCSG",
    "INIT_CONTAINER_NAME",
    "INIT_POD_INFO_MOUNT_PATH",
    "INIT_POD_INFO_NAMESPACE_FILE",
    "INIT_POD_INFO_PODGANG_FILE",
    "INIT_POD_INFO_VOLUME",
    "INIT_SA_TOKEN_MOUNT_PATH",
    "INIT_SA_TOKEN_VOLUME",
    "LABEL_BASE_PODGANG",
    "LABEL_COMPONENT",
    "LABEL_KAI_QUEUE",
    "LABEL_KAI_SUBGROUP_NAME",
    "LABEL_MANAGED_BY",
    "LABEL_NAME",
    "LABEL_PART_OF",
    "LABEL_PCSG",
    "LABEL_PCSG_REPLICA_INDEX",
    "LABEL_PCS_REPLICA_INDEX",
    "LABEL_PODCLIQUE",
    "LABEL_PODCLIQUE_POD_INDEX",
    "LABEL_PODGANG",
    "LABEL_POD_TEMPLATE_HASH",
    "LABEL_SCHEDULER_NAME",
    "MANAGED_BY_VALUE",
    "SCHEDULING_GATE_PODGANG_PENDING",
    "component_labels",
    "format_selector",
    "headless_service_labels",
    "headless_service_selector",
    "managed_labels",
    "pclq_hpa_pod_selector",
    "pcs_hpa_pod_selector",
    "pcsg_labels",
    "pcsg_member_pclq_labels",
    "pcsg_selector",
    "pod_labels",
    "podgang_labels",
    "standalone_pclq_labels",
]

# --- label keys -------------------------------------------------------------------------------------------------
LABEL_MANAGED_BY = "app.kubernetes.io/managed-by"
LABEL_PART_OF = "app.kubernetes.io/part-of"
LABEL_NAME = "app.kubernetes.io/name"
LABEL_COMPONENT = "app.kubernetes.io/component"
LABEL_PCS_REPLICA_INDEX = "grove.io/podcliqueset-replica-index"
LABEL_PODGANG = "grove.io/podgang"
LABEL_BASE_PODGANG = "grove.io/base-podgang"
LABEL_POD_TEMPLATE_HASH = "grove.io/pod-template-hash"
LABEL_PCSG = "grove.io/podcliquescalinggroup"
LABEL_PCSG_REPLICA_INDEX = "grove.io/podcliquescalinggroup-replica-index"
LABEL_PODCLIQUE = "grove.io/podclique"
LABEL_PODCLIQUE_POD_INDEX = "grove.io/podclique-pod-index"
LABEL_SCHEDULER_NAME = "grove.io/scheduler-name"
LABEL_KAI_SUBGROUP_NAME = "kai.scheduler/subgroup-name"
LABEL_KAI_QUEUE = "kai.scheduler/queue"
MANAGED_BY_VALUE = "grove-operator"

# --- app.kubernetes.io/component values ---------------------------------------------------------------------------
COMPONENT_PCS_PODCLIQUE = "pcs-podclique"
COMPONENT_PCSG_PODCLIQUE = "pcsg-podclique"
COMPONENT_PCSG = "pcs-podcliquescalinggroup"
COMPONENT_PODGANG = "podgang"
COMPONENT_HEADLESS_SERVICE = "pcs-headless-service"
COMPONENT_SERVICE_ACCOUNT = "pod-service-account"
COMPONENT_ROLE = "pod-role"
COMPONENT_ROLE_BINDING = "pod-role-binding"
COMPONENT_SA_TOKEN_SECRET = "pod-sa-token-secret"
COMPONENT_HPA = "pcs-hpa"
COMPONENT_RESOURCE_CLAIM = "resource-claim"

# --- annotations --------------------------------------------------------------------------------------------------
ANNOTATION_TOPOLOGY_NAME = "grove.io/topology-name"
ANNOTATION_RECONCILE_TRIGGER = "grove.io/reconcile-trigger"
ANNOTATION_DISABLE_MANAGED_RESOURCE_PROTECTION = "grove.io/disable-managed-resource-protection"
ANNOTATION_MNNVL_GROUP = "grove.io/mnnvl-group"
ANNOTATION_MOVABLE = "grove.io/movable"
"""`"false"` on a PodGang (or on a pod that is a gang of its own): grove-scheduler's defragmentation report never
proposes moving it."""
ANNOTATION_KAI_SKIP_PODGROUPER = "kai.scheduler/skip-podgrouper"
ANNOTATION_KAI_POD_GROUP_NAME = "pod-group-name"
ANNOTATION_VOLCANO_K8S_GROUP_NAME = "scheduling.k8s.io/group-name"
ANNOTATION_VOLCANO_GROUP_NAME = "scheduling.volcano.sh/group-name"
ANNOTATION_SERVICE_ACCOUNT_NAME = "kubernetes.io/service-account.name"

# --- finalizers (§3.11) -------------------------------------------------------------------------------------------
FINALIZER_PCS = "grove.io/podcliqueset.grove.io"
FINALIZER_PCLQ = "grove.io/podclique.grove.io"
FINALIZER_PCSG = "grove.io/podcliquescalinggroup.grove.io"
FINALIZER_COMPUTE_DOMAIN = "grove.io/computedomain-finalizer"

# --- environment variables injected into pods (§2.4) --------------------------------------------------------------
ENV_PCS_NAME = "GROVE_PCS_NAME"
ENV_PCS_INDEX = "GROVE_PCS_INDEX"
ENV_PCLQ_NAME = "GROVE_PCLQ_NAME"
ENV_HEADLESS_SERVICE = "GROVE_HEADLESS_SERVICE"
ENV_PCLQ_POD_INDEX = "GROVE_PCLQ_POD_INDEX"
ENV_PCSG_NAME = "GROVE_PCSG_NAME"
ENV_PCSG_INDEX = "GROVE_PCSG_INDEX"
ENV_PCSG_TEMPLATE_NUM_PODS = "GROVE_PCSG_TEMPLATE_NUM_PODS"
ENV_INIT_CONTAINER_IMAGE = "GROVE_INIT_CONTAINER_IMAGE"
"""Operator Deployment env: image repository of `grove-initc` (the tag is the operator version)."""

SCHEDULING_GATE_PODGANG_PENDING = "grove.io/podgang-pending-creation"
INIT_CONTAINER_NAME = "grove-initc"

# What the operator mounts into `grove-initc` and the program reads (grove-reference §3.5): the pod's namespace and
# PodGang as downward-API files, and the PodCliqueSet's service-account token where in-cluster clients look for it.
INIT_POD_INFO_VOLUME = "pod-info-vol"
INIT_POD_INFO_MOUNT_PATH = "/var/grove/pod-info"
INIT_POD_INFO_NAMESPACE_FILE = "namespace"
INIT_POD_INFO_PODGANG_FILE = "podgangname"
INIT_SA_TOKEN_VOLUME = "sa-token-secret-vol"
INIT_SA_TOKEN_MOUNT_PATH = "/var/run/secrets/kubernetes.io/serviceaccount"


def managed_labels(pcs_name: str) -> dict[str, str]:
    """The two labels every object managed for a PCS carries."""
    return {LABEL_MANAGED_BY: MANAGED_BY_VALUE, LABEL_PART_OF: pcs_name}


def _merge_template(template_labels: Mapping[str, str] | None, grove_labels: dict[str, str]) -> dict[str, str]:
    """User template labels first, Grove keys overwrite them ("Grove keys win")."""
    merged = dict(template_labels or {})
    merged.update(grove_labels)
    return merged


def standalone_pclq_labels(
    pcs_name: str,
    pcs_replica: int,
    pclq_name: str,
    podgang: str,
    pod_template_hash: str,
    template_labels: Mapping[str, str] | None = None,
) -> dict[str, str]:
    """Labels of a PodClique owned directly by the PCS."""
    return _merge_template(
        template_labels,
        {
            **managed_labels(pcs_name),
            LABEL_NAME: pclq_name,
            LABEL_COMPONENT: COMPONENT_PCS_PODCLIQUE,
            LABEL_PCS_REPLICA_INDEX: str(pcs_replica),
            LABEL_PODGANG: podgang,
            LABEL_POD_TEMPLATE_HASH: pod_template_hash,
        },
    )


def pcsg_member_pclq_labels(
    pcs_name: str,
    pcs_replica: int,
    pcsg_fqn: str,
    pcsg_replica: int,
    pclq_name: str,
    podgang: str,
    pod_template_hash: str,
    base_podgang: str | None = None,
    template_labels: Mapping[str, str] | None = None,
) -> dict[str, str]:
    """Labels of a PodClique owned by a PCSG; `base_podgang` only when the PCLQ sits in a scaled gang."""
    labels = {
        **managed_labels(pcs_name),
        LABEL_NAME: pclq_name,
        LABEL_COMPONENT: COMPONENT_PCSG_PODCLIQUE,
        LABEL_PCSG: pcsg_fqn,
        LABEL_PCSG_REPLICA_INDEX: str(pcsg_replica),
        LABEL_PCS_REPLICA_INDEX: str(pcs_replica),
        LABEL_PODGANG: podgang,
        LABEL_POD_TEMPLATE_HASH: pod_template_hash,
    }
    if base_podgang is not None:
        labels[LABEL_BASE_PODGANG] = base_podgang
    return _merge_template(template_labels, labels)


def pod_labels(pclq_labels: Mapping[str, str], pclq_name: str, pod_index: int) -> dict[str, str]:
    """Labels of a pod: its PodClique's labels plus the PodClique name and the pod index."""
    labels = dict(pclq_labels)
    labels[LABEL_PODCLIQUE] = pclq_name
    labels[LABEL_PODCLIQUE_POD_INDEX] = str(pod_index)
    return labels


def pcsg_labels(pcs_name: str, pcs_replica: int, pcsg_fqn: str) -> dict[str, str]:
    """Labels of a PodCliqueScalingGroup."""
    return {
        **managed_labels(pcs_name),
        LABEL_NAME: pcsg_fqn,
        LABEL_COMPONENT: COMPONENT_PCSG,
        LABEL_PCS_REPLICA_INDEX: str(pcs_replica),
    }


def podgang_labels(pcs_name: str, scheduler_name: str, pcs_labels: Mapping[str, str] | None = None) -> dict[str, str]:
    """Labels of a PodGang: the PCS's own non-`grove.io/` labels, the managed pair, component and backend."""
    mirrored = {k: v for k, v in (pcs_labels or {}).items() if not k.startswith("grove.io/")}
    mirrored.update(managed_labels(pcs_name))
    mirrored[LABEL_COMPONENT] = COMPONENT_PODGANG
    mirrored[LABEL_SCHEDULER_NAME] = scheduler_name
    return mirrored


def headless_service_labels(pcs_name: str, pcs_replica: int, service_name: str) -> dict[str, str]:
    """Labels of the headless service of one PCS replica."""
    return {
        **managed_labels(pcs_name),
        LABEL_NAME: service_name,
        LABEL_COMPONENT: COMPONENT_HEADLESS_SERVICE,
        LABEL_PCS_REPLICA_INDEX: str(pcs_replica),
    }


def headless_service_selector(pcs_name: str, pcs_replica: int) -> dict[str, str]:
    """Pod selector of the headless service of one PCS replica."""
    return {**managed_labels(pcs_name), LABEL_PCS_REPLICA_INDEX: str(pcs_replica)}


def component_labels(pcs_name: str, component: str, name: str) -> dict[str, str]:
    """Labels of the per-PCS helpers (SA, Role, RoleBinding, Secret, HPA, ResourceClaim); ':' becomes '-'."""
    return {**managed_labels(pcs_name), LABEL_NAME: name.replace(":", "-"), LABEL_COMPONENT: component}


def format_selector(labels: Mapping[str, str]) -> str:
    """Render an equality selector `k=v,k=v` in the mapping's order (the form status selectors use)."""
    return ",".join(f"{k}={v}" for k, v in labels.items())


def pcs_hpa_pod_selector(pcs_name: str) -> str:
    """`status.hpaPodSelector` of a PodCliqueSet."""
    return format_selector(managed_labels(pcs_name))


def pclq_hpa_pod_selector(pcs_name: str, pclq_name: str) -> str:
    """`status.hpaPodSelector` of a standalone PodClique."""
    return format_selector({**managed_labels(pcs_name), LABEL_PODCLIQUE: pclq_name})


def pcsg_selector(pcs_name: str, pcsg_fqn: str) -> str:
    """`status.selector` of a PodCliqueScalingGroup."""
    return format_selector({**managed_labels(pcs_name), LABEL_PCSG: pcsg_fqn})

"""Names of every object Grove derives from a PodCliqueSet (legacy scheme of upstream main@fcc3b3bb).

The operator creates these objects and the scheduler, init container and tests look them up, so the rules live in
exactly one place. PodGang naming goes through `podgang_name` alone, so the epoch-based scheme of upstream
alpha.12 can later be added there without touching callers.
"""

from __future__ import annotations

__all__ = [
    "CLUSTER_DOMAIN",
    "MAX_COMBINED_NAME_LENGTH",
    "base_podgang_name",
    "combined_name_length_error",
    "headless_service_fqdn",
    "headless_service_name",
    "hpa_name",
    "legacy_sa_token_secret_name",
    "pcsg_member_pclq_name",
    "pcsg_name",
    "pod_fqdn",
    "pod_generate_name",
    "pod_hostname",
    "pod_subdomain",
    "podgang_name",
    "resource_claim_name",
    "role_binding_name",
    "role_name",
    "sa_token_secret_name",
    "scaled_podgang_name",
    "service_account_name",
    "standalone_pclq_name",
    "topology_constraint_group_config_name",
]

CLUSTER_DOMAIN = "cluster.local"
MAX_COMBINED_NAME_LENGTH = 45
"""Upper bound on len(pcs)+len(clique) (+len(pcsg)): leaves room for indices, dashes and the pod suffix in 63."""


def _check_index(name: str, value: int) -> None:
    """Reject negative replica/pod indices early: they would produce names that collide or are invalid."""
    if value < 0:
        raise ValueError(f"{name} must be >= 0, got {value}")


def standalone_pclq_name(pcs_name: str, pcs_replica: int, clique_name: str) -> str:
    """`<pcs>-<i>-<clique>`: a PodClique that belongs directly to a PCS replica."""
    _check_index("pcs_replica", pcs_replica)
    return f"{pcs_name}-{pcs_replica}-{clique_name}"


def pcsg_name(pcs_name: str, pcs_replica: int, scaling_group_name: str) -> str:
    """`<pcs>-<i>-<pcsg>`: the PodCliqueScalingGroup of one PCS replica (its fully qualified name)."""
    _check_index("pcs_replica", pcs_replica)
    return f"{pcs_name}-{pcs_replica}-{scaling_group_name}"


def pcsg_member_pclq_name(pcsg_fqn: str, pcsg_replica: int, clique_name: str) -> str:
    """`<pcs>-<i>-<pcsg>-<j>-<clique>`: a member PodClique of PCSG replica `j`."""
    _check_index("pcsg_replica", pcsg_replica)
    return f"{pcsg_fqn}-{pcsg_replica}-{clique_name}"


def podgang_name(
    pcs_name: str,
    pcs_replica: int,
    *,
    pcsg_fqn: str | None = None,
    pcsg_replica: int = 0,
    pcsg_min_available: int = 1,
) -> str:
    """The PodGang a PodClique belongs to; the single place that encodes the PodGang naming scheme.

    Standalone cliques and PCSG replicas `j < minAvailable` live in the base gang `<pcs>-<i>`; PCSG replica
    `j >= minAvailable` gets its own scaled gang `<pcsg-fqn>-<j - minAvailable>`.
    """
    _check_index("pcs_replica", pcs_replica)
    _check_index("pcsg_replica", pcsg_replica)
    if pcsg_min_available < 1:
        raise ValueError(f"pcsg_min_available must be >= 1, got {pcsg_min_available}")
    if pcsg_fqn is None or pcsg_replica < pcsg_min_available:
        return f"{pcs_name}-{pcs_replica}"
    return f"{pcsg_fqn}-{pcsg_replica - pcsg_min_available}"


def base_podgang_name(pcs_name: str, pcs_replica: int) -> str:
    """The base PodGang of a PCS replica."""
    return podgang_name(pcs_name, pcs_replica)


def scaled_podgang_name(pcs_name: str, pcs_replica: int, pcsg_fqn: str, pcsg_replica: int, min_available: int) -> str:
    """The scaled PodGang of PCSG replica `pcsg_replica` (which must be >= `min_available`)."""
    if pcsg_replica < min_available:
        raise ValueError(f"PCSG replica {pcsg_replica} < minAvailable {min_available} is part of the base gang")
    return podgang_name(
        pcs_name, pcs_replica, pcsg_fqn=pcsg_fqn, pcsg_replica=pcsg_replica, pcsg_min_available=min_available
    )


def topology_constraint_group_config_name(pcsg_fqn: str, pcsg_replica: int) -> str:
    """`<pcsg-fqn>-<j>`: name of a PCSG replica's constraint group inside the base PodGang."""
    _check_index("pcsg_replica", pcsg_replica)
    return f"{pcsg_fqn}-{pcsg_replica}"


def headless_service_name(pcs_name: str, pcs_replica: int) -> str:
    """`<pcs>-<i>`: the headless service of a PCS replica."""
    _check_index("pcs_replica", pcs_replica)
    return f"{pcs_name}-{pcs_replica}"


def headless_service_fqdn(pcs_name: str, pcs_replica: int, namespace: str, cluster_domain: str = CLUSTER_DOMAIN) -> str:
    """`<pcs>-<i>.<ns>.svc.cluster.local`: the value of GROVE_HEADLESS_SERVICE."""
    return f"{headless_service_name(pcs_name, pcs_replica)}.{namespace}.svc.{cluster_domain}"


def pod_generate_name(pclq_name: str) -> str:
    """`<pclq>-`: pods get a random 5-character suffix from the API server."""
    return f"{pclq_name}-"


def pod_hostname(pclq_name: str, pod_index: int) -> str:
    """`<pclq>-<podIndex>`: the stable DNS host name of a pod."""
    _check_index("pod_index", pod_index)
    return f"{pclq_name}-{pod_index}"


def pod_subdomain(pcs_name: str, pcs_replica: int) -> str:
    """`<pcs>-<i>`: pods resolve through their replica's headless service."""
    return headless_service_name(pcs_name, pcs_replica)


def pod_fqdn(
    pclq_name: str,
    pod_index: int,
    pcs_name: str,
    pcs_replica: int,
    namespace: str,
    cluster_domain: str = CLUSTER_DOMAIN,
) -> str:
    """`<pclq>-<idx>.<pcs>-<i>.<ns>.svc.cluster.local`."""
    host = pod_hostname(pclq_name, pod_index)
    return f"{host}.{headless_service_fqdn(pcs_name, pcs_replica, namespace, cluster_domain)}"


def service_account_name(pcs_name: str) -> str:
    """The ServiceAccount whose token `grove-initc` uses: named after the PCS."""
    return pcs_name


def role_name(pcs_name: str) -> str:
    """`grove.io:pcs:<pcs>`: the Role that lets `grove-initc` watch pods."""
    return f"grove.io:pcs:{pcs_name}"


def role_binding_name(pcs_name: str) -> str:
    """`grove.io:pcs:<pcs>`: binds the Role to the PCS ServiceAccount."""
    return role_name(pcs_name)


def sa_token_secret_name(pcs_name: str) -> str:
    """`<pcs>-ic-sat`: the service-account token Secret mounted into `grove-initc`."""
    return f"{pcs_name}-ic-sat"


def legacy_sa_token_secret_name(pcs_name: str) -> str:
    """`<pcs>-initc-sa-token-secret`: the older Secret name that upstream migrates away from."""
    return f"{pcs_name}-initc-sa-token-secret"


def hpa_name(target_fqn: str) -> str:
    """An HPA is named after its target (a PodClique or PodCliqueScalingGroup FQN)."""
    return target_fqn


def resource_claim_name(owner_name: str, template_name: str, replica_index: int | None = None) -> str:
    """`<owner>-all-<tmpl>` for AllReplicas sharing, `<owner>-<idx>-<tmpl>` for PerReplica sharing."""
    if replica_index is None:
        return f"{owner_name}-all-{template_name}"
    _check_index("replica_index", replica_index)
    return f"{owner_name}-{replica_index}-{template_name}"


def combined_name_length_error(pcs_name: str, clique_name: str, scaling_group_name: str | None = None) -> str | None:
    """Why the combined name is too long (the webhook's 45-character rule), or None when it fits."""
    parts = [pcs_name, clique_name] if scaling_group_name is None else [pcs_name, scaling_group_name, clique_name]
    total = sum(len(p) for p in parts)
    if total <= MAX_COMBINED_NAME_LENGTH:
        return None
    what = "PodCliqueSet, scaling group and clique" if scaling_group_name is not None else "PodCliqueSet and clique"
    return f"combined length of {what} names is {total}, must be at most {MAX_COMBINED_NAME_LENGTH}"

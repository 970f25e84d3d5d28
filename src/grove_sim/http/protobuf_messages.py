"""The protobuf field tables of the kinds kubectl 1.32 sends as protobuf: field number to JSON name and value kind.

Field numbers are those of the ``k8s.io/api`` and ``k8s.io/apimachinery`` ``generated.proto`` files as compiled
into kubectl 1.32. ``keep`` marks the fields Go's JSON encoding writes even when empty (pointers and the few
fields without ``omitempty``); ``grove_sim.http.protobuf`` decodes bodies with these tables.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Final

__all__ = ["MESSAGES", "Field", "supported_kinds"]


@dataclass(frozen=True, slots=True)
class Field:
    """How one protobuf field maps to JSON: its name, value kind, message type and emptiness rule."""

    name: str
    kind: (
        str  # str | bytes | int | bool | time | quantity | intorstr | fieldsv1 | msg | inline | map | map_bytes | map_q
    )
    msg: str = ""
    repeated: bool = False
    keep: bool = False


def _s(name: str, *, keep: bool = False, rep: bool = False) -> Field:
    """A string field."""
    return Field(name, "str", repeated=rep, keep=keep)


def _i(name: str, *, keep: bool = False) -> Field:
    """An int32/int64 field."""
    return Field(name, "int", keep=keep)


def _b(name: str, *, keep: bool = False) -> Field:
    """A bool field."""
    return Field(name, "bool", keep=keep)


def _m(name: str, msg: str, *, rep: bool = False) -> Field:
    """A nested message field."""
    return Field(name, "msg", msg=msg, repeated=rep)


_META: Final = _m("metadata", "ObjectMeta")
_LOCAL_REF: Final = Field("", "inline", msg="LocalObjectReference")

MESSAGES: Final[dict[str, dict[int, Field]]] = {
    "ObjectMeta": {
        1: _s("name"),
        2: _s("generateName"),
        3: _s("namespace"),
        4: _s("selfLink"),
        5: _s("uid"),
        6: _s("resourceVersion"),
        7: _i("generation"),
        8: Field("creationTimestamp", "time"),
        9: Field("deletionTimestamp", "time"),
        10: _i("deletionGracePeriodSeconds", keep=True),
        11: Field("labels", "map"),
        12: Field("annotations", "map"),
        13: _m("ownerReferences", "OwnerReference", rep=True),
        14: _s("finalizers", rep=True),
        17: _m("managedFields", "ManagedFieldsEntry", rep=True),
    },
    "OwnerReference": {
        5: _s("apiVersion", keep=True),
        1: _s("kind", keep=True),
        3: _s("name", keep=True),
        4: _s("uid", keep=True),
        6: _b("controller", keep=True),
        7: _b("blockOwnerDeletion", keep=True),
    },
    "ManagedFieldsEntry": {
        1: _s("manager"),
        2: _s("operation"),
        3: _s("apiVersion"),
        4: Field("time", "time"),
        6: _s("fieldsType"),
        7: Field("fieldsV1", "fieldsv1"),
        8: _s("subresource"),
    },
    "Condition": {
        1: _s("type", keep=True),
        2: _s("status", keep=True),
        3: _i("observedGeneration"),
        4: Field("lastTransitionTime", "time"),
        5: _s("reason", keep=True),
        6: _s("message", keep=True),
    },
    "LocalObjectReference": {1: _s("name")},
    "ObjectReference": {
        1: _s("kind"),
        2: _s("namespace"),
        3: _s("name"),
        4: _s("uid"),
        5: _s("apiVersion"),
        6: _s("resourceVersion"),
        7: _s("fieldPath"),
    },
    # Namespace, ConfigMap, Secret, ServiceAccount
    "Namespace": {1: _META, 2: _m("spec", "NamespaceSpec"), 3: _m("status", "NamespaceStatus")},
    "NamespaceSpec": {1: _s("finalizers", rep=True)},
    "NamespaceStatus": {1: _s("phase"), 2: _m("conditions", "NamespaceCondition", rep=True)},
    "NamespaceCondition": {
        1: _s("type", keep=True),
        2: _s("status", keep=True),
        4: Field("lastTransitionTime", "time"),
        5: _s("reason"),
        6: _s("message"),
    },
    "ConfigMap": {
        1: _META,
        2: Field("data", "map"),
        3: Field("binaryData", "map_bytes"),
        4: _b("immutable", keep=True),
    },
    "Secret": {
        1: _META,
        2: Field("data", "map_bytes"),
        3: _s("type"),
        4: Field("stringData", "map"),
        5: _b("immutable", keep=True),
    },
    "ServiceAccount": {
        1: _META,
        2: _m("secrets", "ObjectReference", rep=True),
        3: _m("imagePullSecrets", "LocalObjectReference", rep=True),
        4: _b("automountServiceAccountToken", keep=True),
    },
    # Service
    "Service": {1: _META, 2: _m("spec", "ServiceSpec"), 3: _m("status", "ServiceStatus")},
    "ServiceSpec": {
        1: _m("ports", "ServicePort", rep=True),
        2: Field("selector", "map"),
        3: _s("clusterIP"),
        18: _s("clusterIPs", rep=True),
        4: _s("type"),
        5: _s("externalIPs", rep=True),
        7: _s("sessionAffinity"),
        8: _s("loadBalancerIP"),
        9: _s("loadBalancerSourceRanges", rep=True),
        10: _s("externalName"),
        11: _s("externalTrafficPolicy"),
        12: _i("healthCheckNodePort"),
        13: _b("publishNotReadyAddresses"),
        19: _s("ipFamilies", rep=True),
        17: _s("ipFamilyPolicy", keep=True),
        20: _b("allocateLoadBalancerNodePorts", keep=True),
        21: _s("loadBalancerClass", keep=True),
        22: _s("internalTrafficPolicy", keep=True),
        23: _s("trafficDistribution", keep=True),
    },
    "ServicePort": {
        1: _s("name"),
        2: _s("protocol"),
        6: _s("appProtocol", keep=True),
        3: _i("port", keep=True),
        4: Field("targetPort", "intorstr"),
        5: _i("nodePort"),
    },
    "ServiceStatus": {1: _m("loadBalancer", "LoadBalancerStatus"), 2: _m("conditions", "Condition", rep=True)},
    "LoadBalancerStatus": {1: _m("ingress", "LoadBalancerIngress", rep=True)},
    "LoadBalancerIngress": {1: _s("ip"), 2: _s("hostname"), 3: _s("ipMode", keep=True)},
    # Pod (kubectl 1.32/1.33 ``run`` sends JSON, but other protobuf clients send pods)
    "Pod": {1: _META, 2: _m("spec", "PodSpec"), 3: _m("status", "PodStatus")},
    "PodSpec": {
        20: _m("initContainers", "Container", rep=True),
        2: _m("containers", "Container", rep=True),
        3: _s("restartPolicy"),
        4: _i("terminationGracePeriodSeconds", keep=True),
        5: _i("activeDeadlineSeconds", keep=True),
        6: _s("dnsPolicy"),
        7: Field("nodeSelector", "map"),
        8: _s("serviceAccountName"),
        9: _s("serviceAccount"),
        21: _b("automountServiceAccountToken", keep=True),
        10: _s("nodeName"),
        11: _b("hostNetwork"),
        12: _b("hostPID"),
        13: _b("hostIPC"),
        27: _b("shareProcessNamespace", keep=True),
        15: _m("imagePullSecrets", "LocalObjectReference", rep=True),
        16: _s("hostname"),
        17: _s("subdomain"),
        19: _s("schedulerName"),
        22: _m("tolerations", "Toleration", rep=True),
        23: _m("hostAliases", "HostAlias", rep=True),
        24: _s("priorityClassName"),
        25: _i("priority", keep=True),
        28: _m("readinessGates", "PodReadinessGate", rep=True),
        29: _s("runtimeClassName", keep=True),
        30: _b("enableServiceLinks", keep=True),
        31: _s("preemptionPolicy", keep=True),
        32: Field("overhead", "map_q"),
        35: _b("setHostnameAsFQDN", keep=True),
        37: _b("hostUsers", keep=True),
        38: _m("schedulingGates", "PodSchedulingGate", rep=True),
        40: _m("resources", "ResourceRequirements"),
    },
    "Container": {
        1: _s("name", keep=True),
        2: _s("image"),
        3: _s("command", rep=True),
        4: _s("args", rep=True),
        5: _s("workingDir"),
        6: _m("ports", "ContainerPort", rep=True),
        19: _m("envFrom", "EnvFromSource", rep=True),
        7: _m("env", "EnvVar", rep=True),
        8: _m("resources", "ResourceRequirements"),
        24: _s("restartPolicy", keep=True),
        9: _m("volumeMounts", "VolumeMount", rep=True),
        13: _s("terminationMessagePath"),
        20: _s("terminationMessagePolicy"),
        14: _s("imagePullPolicy"),
        16: _b("stdin"),
        17: _b("stdinOnce"),
        18: _b("tty"),
    },
    "ContainerPort": {
        1: _s("name"),
        2: _i("hostPort"),
        3: _i("containerPort", keep=True),
        4: _s("protocol"),
        5: _s("hostIP"),
    },
    "EnvVar": {1: _s("name", keep=True), 2: _s("value"), 3: _m("valueFrom", "EnvVarSource")},
    "EnvVarSource": {
        1: _m("fieldRef", "ObjectFieldSelector"),
        2: _m("resourceFieldRef", "ResourceFieldSelector"),
        3: _m("configMapKeyRef", "KeySelector"),
        4: _m("secretKeyRef", "KeySelector"),
    },
    "ObjectFieldSelector": {1: _s("apiVersion"), 2: _s("fieldPath", keep=True)},
    "ResourceFieldSelector": {1: _s("containerName"), 2: _s("resource", keep=True), 3: Field("divisor", "quantity")},
    "KeySelector": {1: _LOCAL_REF, 2: _s("key", keep=True), 3: _b("optional", keep=True)},
    "EnvFromSource": {1: _s("prefix"), 2: _m("configMapRef", "RefSource"), 3: _m("secretRef", "RefSource")},
    "RefSource": {1: _LOCAL_REF, 2: _b("optional", keep=True)},
    "ResourceRequirements": {
        1: Field("limits", "map_q"),
        2: Field("requests", "map_q"),
        3: _m("claims", "ResourceClaim", rep=True),
    },
    "ResourceClaim": {1: _s("name", keep=True), 2: _s("request")},
    "VolumeMount": {
        1: _s("name", keep=True),
        2: _b("readOnly"),
        7: _s("recursiveReadOnly", keep=True),
        3: _s("mountPath", keep=True),
        4: _s("subPath"),
        5: _s("mountPropagation", keep=True),
        6: _s("subPathExpr"),
    },
    "Toleration": {
        1: _s("key"),
        2: _s("operator"),
        3: _s("value"),
        4: _s("effect"),
        5: _i("tolerationSeconds", keep=True),
    },
    "HostAlias": {1: _s("ip", keep=True), 2: _s("hostnames", rep=True)},
    "PodReadinessGate": {1: _s("conditionType", keep=True)},
    "PodSchedulingGate": {1: _s("name", keep=True)},
    "PodStatus": {
        1: _s("phase"),
        2: _m("conditions", "PodCondition", rep=True),
        3: _s("message"),
        4: _s("reason"),
        11: _s("nominatedNodeName"),
        5: _s("hostIP"),
        6: _s("podIP"),
        7: Field("startTime", "time"),
        9: _s("qosClass"),
    },
    # rbac.authorization.k8s.io/v1, scheduling.k8s.io/v1, ResourceQuota and apps/v1 Deployment (kubectl create)
    "Role": {1: _META, 2: _m("rules", "PolicyRule", rep=True)},
    "ClusterRole": {1: _META, 2: _m("rules", "PolicyRule", rep=True), 3: _m("aggregationRule", "AggregationRule")},
    "PolicyRule": {
        1: _s("verbs", rep=True, keep=True),
        2: _s("apiGroups", rep=True),
        3: _s("resources", rep=True),
        4: _s("resourceNames", rep=True),
        5: _s("nonResourceURLs", rep=True),
    },
    "AggregationRule": {1: _m("clusterRoleSelectors", "LabelSelector", rep=True)},
    "RoleBinding": {1: _META, 2: _m("subjects", "Subject", rep=True), 3: _m("roleRef", "RoleRef")},
    "ClusterRoleBinding": {1: _META, 2: _m("subjects", "Subject", rep=True), 3: _m("roleRef", "RoleRef")},
    "Subject": {1: _s("kind", keep=True), 2: _s("apiGroup"), 3: _s("name", keep=True), 4: _s("namespace")},
    "RoleRef": {1: _s("apiGroup", keep=True), 2: _s("kind", keep=True), 3: _s("name", keep=True)},
    "PriorityClass": {
        1: _META,
        2: _i("value", keep=True),
        3: _b("globalDefault"),
        4: _s("description"),
        5: _s("preemptionPolicy", keep=True),
    },
    "ResourceQuota": {1: _META, 2: _m("spec", "ResourceQuotaSpec"), 3: _m("status", "ResourceQuotaStatus")},
    "ResourceQuotaSpec": {
        1: Field("hard", "map_q"),
        2: _s("scopes", rep=True),
        3: _m("scopeSelector", "ScopeSelector"),
    },
    "ScopeSelector": {1: _m("matchExpressions", "ScopedResourceSelectorRequirement", rep=True)},
    "ScopedResourceSelectorRequirement": {
        1: _s("scopeName", keep=True),
        2: _s("operator", keep=True),
        3: _s("values", rep=True),
    },
    "ResourceQuotaStatus": {1: Field("hard", "map_q"), 2: Field("used", "map_q")},
    "LabelSelector": {1: Field("matchLabels", "map"), 2: _m("matchExpressions", "LabelSelectorRequirement", rep=True)},
    "LabelSelectorRequirement": {1: _s("key", keep=True), 2: _s("operator", keep=True), 3: _s("values", rep=True)},
    "Deployment": {1: _META, 2: _m("spec", "DeploymentSpec"), 3: _m("status", "DeploymentStatus")},
    "DeploymentSpec": {
        1: _i("replicas", keep=True),
        2: _m("selector", "LabelSelector"),
        3: _m("template", "PodTemplateSpec"),
        4: _m("strategy", "DeploymentStrategy"),
        5: _i("minReadySeconds"),
        6: _i("revisionHistoryLimit", keep=True),
        7: _b("paused"),
        9: _i("progressDeadlineSeconds", keep=True),
    },
    "PodTemplateSpec": {1: _META, 2: _m("spec", "PodSpec")},
    "DeploymentStrategy": {1: _s("type"), 2: _m("rollingUpdate", "RollingUpdateDeployment")},
    "RollingUpdateDeployment": {1: Field("maxUnavailable", "intorstr"), 2: Field("maxSurge", "intorstr")},
    "DeploymentStatus": {
        1: _i("observedGeneration"),
        2: _i("replicas"),
        3: _i("updatedReplicas"),
        7: _i("readyReplicas"),
        4: _i("availableReplicas"),
        5: _i("unavailableReplicas"),
        8: _i("collisionCount", keep=True),
    },
    # authorization.k8s.io/v1 self reviews (kubectl auth can-i, can-i --list)
    "SelfSubjectAccessReview": {
        1: _META,
        2: _m("spec", "SelfSubjectAccessReviewSpec"),
        3: _m("status", "SubjectAccessReviewStatus"),
    },
    "SelfSubjectAccessReviewSpec": {
        1: _m("resourceAttributes", "ResourceAttributes"),
        2: _m("nonResourceAttributes", "NonResourceAttributes"),
    },
    "ResourceAttributes": {
        1: _s("namespace"),
        2: _s("verb"),
        3: _s("group"),
        4: _s("version"),
        5: _s("resource"),
        6: _s("subresource"),
        7: _s("name"),
    },
    "NonResourceAttributes": {1: _s("path"), 2: _s("verb")},
    "SubjectAccessReviewStatus": {
        1: _b("allowed", keep=True),
        4: _b("denied"),
        2: _s("reason"),
        3: _s("evaluationError"),
    },
    "SelfSubjectRulesReview": {
        1: _META,
        2: _m("spec", "SelfSubjectRulesReviewSpec"),
        3: _m("status", "SubjectRulesReviewStatus"),
    },
    "SelfSubjectRulesReviewSpec": {1: _s("namespace")},
    "SubjectRulesReviewStatus": {3: _b("incomplete", keep=True), 4: _s("evaluationError")},
    "PodDisruptionBudget": {
        1: _META,
        2: _m("spec", "PodDisruptionBudgetSpec"),
        3: _m("status", "PodDisruptionBudgetStatus"),
    },
    "PodDisruptionBudgetSpec": {
        1: Field("minAvailable", "intorstr"),
        2: _m("selector", "LabelSelector"),
        3: Field("maxUnavailable", "intorstr"),
        4: _s("unhealthyPodEvictionPolicy"),
    },
    "PodDisruptionBudgetStatus": {
        1: _i("observedGeneration"),
        3: _i("disruptionsAllowed", keep=True),
        4: _i("currentHealthy", keep=True),
        5: _i("desiredHealthy", keep=True),
        6: _i("expectedPods", keep=True),
    },
    "PodCondition": {
        1: _s("type", keep=True),
        2: _s("status", keep=True),
        3: Field("lastProbeTime", "time"),
        4: Field("lastTransitionTime", "time"),
        5: _s("reason"),
        6: _s("message"),
    },
}

# The (apiVersion, kind) pairs a body may carry: what ``kubectl create <generator>`` sends, plus Pod.
_TOP_LEVEL: Final = frozenset(
    {("v1", kind) for kind in ("Namespace", "ConfigMap", "Secret", "ServiceAccount", "Service", "Pod", "ResourceQuota")}
    | {("rbac.authorization.k8s.io/v1", kind) for kind in ("Role", "ClusterRole", "RoleBinding", "ClusterRoleBinding")}
    | {("scheduling.k8s.io/v1", "PriorityClass"), ("apps/v1", "Deployment"), ("policy/v1", "PodDisruptionBudget")}
    | {("authorization.k8s.io/v1", kind) for kind in ("SelfSubjectAccessReview", "SelfSubjectRulesReview")}
)


def supported_kinds() -> frozenset[tuple[str, str]]:
    """The ``(apiVersion, kind)`` pairs whose protobuf bodies can be decoded."""
    return _TOP_LEVEL

"""Per-kind row printers for built-in resources, following kubectl's ``pkg/printers/internalversion``.

kubectl renders server-side Tables verbatim, so ``kubectl get pods`` only looks like a real cluster if the
simulated server computes the same cells: the pod STATUS reason, ``ready/total``, node roles and so on. Each printer
is a pure function ``(object, age) -> cells``; :mod:`grove_sim.http.tables` owns the Table envelope. Like the real
server, every printer always emits the wide (priority 1) cells too; kubectl hides them without ``-o wide``.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from datetime import datetime
from typing import Any, Final

__all__ = ["PRINTERS", "Column", "Printer", "field_at", "object_name", "parse_time"]

Column = dict[str, Any]
Ager = Callable[[Any], str]  # timestamp string (or None) -> human age
RowFn = Callable[[Mapping[str, Any], Ager], list[Any]]
Printer = tuple[list[Column], RowFn]

_NAME_DESC: Final = "Name must be unique within a namespace."
_AGE_DESC: Final = "CreationTimestamp is a timestamp representing the server time when this object was created."


def col(name: str, description: str, *, type_: str = "string", priority: int = 0, fmt: str = "") -> Column:
    """A ``meta.k8s.io/v1`` TableColumnDefinition."""
    return {"name": name, "type": type_, "format": fmt, "description": description, "priority": priority}


NAME_COLUMN: Final = col("Name", _NAME_DESC, fmt="name")
AGE_COLUMN: Final = col("Age", _AGE_DESC)


def parse_time(value: Any) -> datetime | None:
    """Parse an RFC 3339 timestamp as the apiserver writes it; None for absent or malformed values."""
    if not isinstance(value, str) or not value:
        return None
    try:
        return datetime.fromisoformat(value.replace("Z", "+00:00"))
    except ValueError:
        return None


def _get(obj: Mapping[str, Any], *path: str) -> Any:
    current: Any = obj
    for key in path:
        if not isinstance(current, Mapping):
            return None
        current = current.get(key)
    return current


def _name(obj: Mapping[str, Any]) -> str:
    return str(_get(obj, "metadata", "name") or "")


# ---------------------------------------------------------------------------------------------------------------------
# Pods


field_at = _get
"""Public name of ``_get`` for the printers of other kinds."""
object_name = _name


def _restartable_init(container: Mapping[str, Any] | None) -> bool:
    return container is not None and container.get("restartPolicy") == "Always"


def _condition_true(conditions: Sequence[Mapping[str, Any]], kind: str) -> bool:
    return any(c.get("type") == kind and c.get("status") == "True" for c in conditions)


def _pod_row(pod: Mapping[str, Any], age: Ager) -> list[Any]:
    spec: Mapping[str, Any] = pod.get("spec") or {}
    status: Mapping[str, Any] = pod.get("status") or {}
    conditions: list[Mapping[str, Any]] = list(status.get("conditions") or [])
    init_specs: list[Mapping[str, Any]] = list(spec.get("initContainers") or [])
    init_by_name = {c.get("name"): c for c in init_specs}
    total = len(spec.get("containers") or []) + sum(_restartable_init(c) for c in init_specs)
    ready = 0
    restarts = 0
    restartable_restarts = 0
    last_restart: datetime | None = None
    last_restartable: datetime | None = None
    phase = str(status.get("phase") or "")
    reason = str(status.get("reason") or phase)
    if any(c.get("type") == "PodScheduled" and c.get("reason") == "SchedulingGated" for c in conditions) or (
        spec.get("schedulingGates") and not spec.get("nodeName")
    ):
        reason = "SchedulingGated"

    def later(current: datetime | None, container: Mapping[str, Any]) -> datetime | None:
        finished = parse_time(_get(container, "lastState", "terminated", "finishedAt"))
        return finished if finished is not None and (current is None or finished > current) else current

    initializing = False
    init_statuses: list[Mapping[str, Any]] = list(status.get("initContainerStatuses") or [])
    for position, container in enumerate(init_statuses):
        count = int(container.get("restartCount") or 0)
        restarts += count
        last_restart = later(last_restart, container)
        restartable = _restartable_init(init_by_name.get(container.get("name")))
        if restartable:
            restartable_restarts += count
            last_restartable = later(last_restartable, container)
        state: Mapping[str, Any] = container.get("state") or {}
        terminated: Mapping[str, Any] | None = state.get("terminated")
        waiting: Mapping[str, Any] | None = state.get("waiting")
        if terminated is not None and int(terminated.get("exitCode") or 0) == 0:
            continue
        if restartable and container.get("started"):
            ready += bool(container.get("ready"))
            continue
        if terminated is not None:
            if terminated.get("reason"):
                reason = f"Init:{terminated['reason']}"
            elif terminated.get("signal"):
                reason = f"Init:Signal:{terminated['signal']}"
            else:
                reason = f"Init:ExitCode:{terminated.get('exitCode', 0)}"
        elif waiting is not None and waiting.get("reason") and waiting.get("reason") != "PodInitializing":
            reason = f"Init:{waiting['reason']}"
        else:
            reason = f"Init:{position}/{len(init_specs)}"
        initializing = True
        break

    if not initializing or _condition_true(conditions, "Initialized"):
        restarts = restartable_restarts
        last_restart = last_restartable
        has_running = False
        for container in reversed(list(status.get("containerStatuses") or [])):
            restarts += int(container.get("restartCount") or 0)
            last_restart = later(last_restart, container)
            state = container.get("state") or {}
            waiting = state.get("waiting")
            terminated = state.get("terminated")
            if waiting is not None and waiting.get("reason"):
                reason = str(waiting["reason"])
            elif terminated is not None and terminated.get("reason"):
                reason = str(terminated["reason"])
            elif terminated is not None:
                signal = terminated.get("signal")
                reason = f"Signal:{signal}" if signal else f"ExitCode:{terminated.get('exitCode', 0)}"
            elif container.get("ready") and state.get("running") is not None:
                has_running = True
                ready += 1
        if reason == "Completed" and has_running:
            reason = "Running" if _condition_true(conditions, "Ready") else "NotReady"

    deleting = _get(pod, "metadata", "deletionTimestamp")
    if deleting and status.get("reason") == "NodeLost":
        reason = "Unknown"
    elif deleting and phase not in ("Succeeded", "Failed"):
        reason = "Terminating"

    restarts_text = str(restarts)
    if restarts and last_restart is not None:
        restarts_text = f"{restarts} ({age(last_restart.isoformat())} ago)"

    pod_ips = status.get("podIPs") or []
    pod_ip = (pod_ips[0].get("ip") if pod_ips else status.get("podIP")) or "<none>"
    gates = spec.get("readinessGates") or []
    gates_text = "<none>"
    if gates:
        by_type: dict[Any, Any] = {}
        for condition in conditions:
            by_type.setdefault(condition.get("type"), condition.get("status"))
        true_count = sum(by_type.get(g.get("conditionType")) == "True" for g in gates)
        gates_text = f"{true_count}/{len(gates)}"
    return [
        _name(pod),
        f"{ready}/{total}",
        reason,
        restarts_text,
        age(_get(pod, "metadata", "creationTimestamp")),
        pod_ip,
        spec.get("nodeName") or "<none>",
        status.get("nominatedNodeName") or "<none>",
        gates_text,
    ]


_POD_COLUMNS: Final = [
    NAME_COLUMN,
    col("Ready", "The aggregate readiness state of this pod for accepting traffic."),
    col("Status", "The aggregate status of the containers in this pod."),
    col("Restarts", "The number of times the containers in this pod have been restarted and when the last one was."),
    AGE_COLUMN,
    col("IP", "IP address allocated to the pod. Routable at least within the cluster.", priority=1),
    col("Node", "NodeName is a request to schedule this pod onto a specific node.", priority=1),
    col("Nominated Node", "The node the scheduler nominated for this pod after preemption.", priority=1),
    col("Readiness Gates", "If specified, all readiness gates will be evaluated for pod readiness.", priority=1),
]

# ---------------------------------------------------------------------------------------------------------------------
# Nodes


def _node_roles(labels: Mapping[str, str]) -> str:
    roles = set()
    for key, value in labels.items():
        if key.startswith("node-role.kubernetes.io/"):
            role = key.removeprefix("node-role.kubernetes.io/")
            if role:
                roles.add(role)
        elif key == "kubernetes.io/role" and value:
            roles.add(value)
    return ",".join(sorted(roles)) or "<none>"


def _node_address(node: Mapping[str, Any], kind: str) -> str:
    for address in _get(node, "status", "addresses") or []:
        if address.get("type") == kind:
            return str(address.get("address") or "<none>")
    return "<none>"


def _node_row(node: Mapping[str, Any], age: Ager) -> list[Any]:
    states = []
    for condition in _get(node, "status", "conditions") or []:
        if condition.get("type") == "Ready":
            states = ["Ready" if condition.get("status") == "True" else "NotReady"]
    if not states:
        states = ["Unknown"]
    if _get(node, "spec", "unschedulable"):
        states.append("SchedulingDisabled")
    info: Mapping[str, Any] = _get(node, "status", "nodeInfo") or {}
    return [
        _name(node),
        ",".join(states),
        _node_roles(_get(node, "metadata", "labels") or {}),
        age(_get(node, "metadata", "creationTimestamp")),
        info.get("kubeletVersion") or "",
        _node_address(node, "InternalIP"),
        _node_address(node, "ExternalIP"),
        info.get("osImage") or "<unknown>",
        info.get("kernelVersion") or "<unknown>",
        info.get("containerRuntimeVersion") or "<unknown>",
    ]


_NODE_COLUMNS: Final = [
    NAME_COLUMN,
    col("Status", "The status of the node"),
    col("Roles", "The roles of the node"),
    AGE_COLUMN,
    col("Version", "Kubelet Version reported by the node."),
    col("Internal-IP", "List of addresses reachable to the node.", priority=1),
    col("External-IP", "List of addresses reachable to the node.", priority=1),
    col("OS-Image", "OS Image reported by the node from /etc/os-release.", priority=1),
    col("Kernel-Version", "Kernel Version reported by the node from 'uname -r'.", priority=1),
    col("Container-Runtime", "ContainerRuntime Version reported by the node.", priority=1),
]

# ---------------------------------------------------------------------------------------------------------------------
# Other built-ins


def _namespace_row(ns: Mapping[str, Any], age: Ager) -> list[Any]:
    return [_name(ns), _get(ns, "status", "phase") or "", age(_get(ns, "metadata", "creationTimestamp"))]


def _event_source(event: Mapping[str, Any]) -> str:
    component = _get(event, "source", "component") or event.get("reportingController") or ""
    host = _get(event, "source", "host") or event.get("reportingInstance") or ""
    return f"{component}, {host}" if host else str(component)


def _event_row(event: Mapping[str, Any], age: Ager) -> list[Any]:
    first_seen = age(event.get("firstTimestamp") or event.get("deprecatedFirstTimestamp") or event.get("eventTime"))
    last_ts = event.get("lastTimestamp") or event.get("deprecatedLastTimestamp")
    last_seen = age(last_ts) if last_ts else first_seen
    count = event.get("count") or event.get("deprecatedCount") or 0
    series = event.get("series")
    if isinstance(series, Mapping):
        last_seen = age(series.get("lastObservedTime"))
        count = series.get("count") or count
    elif not count:
        count = 1
    involved: Mapping[str, Any] = event.get("involvedObject") or event.get("regarding") or {}
    kind = str(involved.get("kind") or "").lower()
    target = f"{kind}/{involved['name']}" if involved.get("name") else kind
    message = str(event.get("message") or event.get("note") or "").strip()
    return [
        last_seen,
        event.get("type") or "",
        event.get("reason") or "",
        target,
        involved.get("fieldPath") or "",
        _event_source(event),
        message,
        first_seen,
        int(count),
        _name(event),
    ]


_EVENT_COLUMNS: Final = [
    col("Last Seen", "The time at which the most recent occurrence of this event was recorded."),
    col("Type", "Type of this event (Normal, Warning)."),
    col("Reason", "A short, machine understandable string that gives the reason for the transition."),
    col("Object", "The object that this event is about."),
    col("Subobject", "The field path of the object this event is about.", priority=1),
    col("Source", "The component reporting this event.", priority=1),
    col("Message", "A human-readable description of the status of this operation."),
    col("First Seen", "The time at which the event was first recorded.", priority=1),
    col("Count", "The number of times this event has occurred.", priority=1),
    col("Name", _NAME_DESC, priority=1, fmt="name"),
]


def _service_external_ip(spec: Mapping[str, Any], status: Mapping[str, Any]) -> str:
    kind = spec.get("type") or "ClusterIP"
    external = list(spec.get("externalIPs") or [])
    if kind == "ExternalName":
        return str(spec.get("externalName") or "<none>")
    if kind == "LoadBalancer":
        ingress = [i.get("ip") or i.get("hostname") for i in _get(status, "loadBalancer", "ingress") or []]
        found = [str(x) for x in [*ingress, *external] if x]
        return ",".join(found) if found else "<pending>"
    return ",".join(external) if external else "<none>"


def _service_ports(ports: Sequence[Mapping[str, Any]]) -> str:
    parts = []
    for port in ports:
        protocol = port.get("protocol") or "TCP"
        node_port = port.get("nodePort")
        parts.append(f"{port.get('port')}:{node_port}/{protocol}" if node_port else f"{port.get('port')}/{protocol}")
    return ",".join(parts) if parts else "<none>"


def _service_row(svc: Mapping[str, Any], age: Ager) -> list[Any]:
    spec: Mapping[str, Any] = svc.get("spec") or {}
    selector: Mapping[str, str] = spec.get("selector") or {}
    return [
        _name(svc),
        spec.get("type") or "ClusterIP",
        spec.get("clusterIP") or "<none>",
        _service_external_ip(spec, svc.get("status") or {}),
        _service_ports(spec.get("ports") or []),
        age(_get(svc, "metadata", "creationTimestamp")),
        ",".join(f"{k}={v}" for k, v in sorted(selector.items())) or "<none>",
    ]


_SERVICE_COLUMNS: Final = [
    NAME_COLUMN,
    col("Type", "The type of the service."),
    col("Cluster-IP", "The IP address of the service."),
    col("External-IP", "The external IPs of the service."),
    col("Port(s)", "The ports exposed by the service."),
    AGE_COLUMN,
    col("Selector", "Route service traffic to pods with label keys and values matching this selector.", priority=1),
]


def _simple(*cells: Callable[[Mapping[str, Any]], Any]) -> RowFn:
    """A row of name, the given cells, then age."""

    def row(obj: Mapping[str, Any], age: Ager) -> list[Any]:
        return [_name(obj), *(cell(obj) for cell in cells), age(_get(obj, "metadata", "creationTimestamp"))]

    return row


def _hpa_metric(spec: Mapping[str, Any], status: Mapping[str, Any] | None) -> str:
    kind = spec.get("type")
    source_key = {"Resource": "resource", "Pods": "pods", "Object": "object", "External": "external"}.get(str(kind))
    if source_key is None:
        return "<unknown type>"
    source: Mapping[str, Any] = spec.get(source_key) or {}
    target: Mapping[str, Any] = source.get("target") or {}
    current: Mapping[str, Any] = (_get(status, source_key, "current") or {}) if status else {}
    if kind == "Resource" and "averageValue" not in target:
        now = f"{current['averageUtilization']}%" if "averageUtilization" in current else "<unknown>"
        goal = f"{target['averageUtilization']}%" if "averageUtilization" in target else "<auto>"
        return f"{source.get('name', '')}: {now}/{goal}"
    field = "averageValue" if "averageValue" in target else "value"
    now = str(current.get(field, "<unknown>"))
    return f"{now}/{target.get(field, '<unknown>')}"


def _hpa_targets(hpa: Mapping[str, Any]) -> str:
    specs: list[Mapping[str, Any]] = list(_get(hpa, "spec", "metrics") or [])
    if not specs:
        return "<none>"
    statuses: list[Mapping[str, Any]] = list(_get(hpa, "status", "currentMetrics") or [])
    shown = [_hpa_metric(s, statuses[i] if i < len(statuses) else None) for i, s in enumerate(specs)]
    if len(shown) > 2:
        return f"{', '.join(shown[:2])} + {len(shown) - 2} more..."
    return ", ".join(shown)


def _hpa_row(hpa: Mapping[str, Any], age: Ager) -> list[Any]:
    ref: Mapping[str, Any] = _get(hpa, "spec", "scaleTargetRef") or {}
    min_replicas = _get(hpa, "spec", "minReplicas")
    return [
        _name(hpa),
        f"{ref.get('kind', '')}/{ref.get('name', '')}",
        _hpa_targets(hpa),
        "<unset>" if min_replicas is None else int(min_replicas),
        int(_get(hpa, "spec", "maxReplicas") or 0),
        int(_get(hpa, "status", "currentReplicas") or 0),
        age(_get(hpa, "metadata", "creationTimestamp")),
    ]


def _endpoints(obj: Mapping[str, Any]) -> str:
    """``ip:port`` pairs as kubectl prints Endpoints: the first three, then ``+ N more...``."""
    pairs = [
        f"{address.get('ip')}:{port.get('port')}"
        for subset in obj.get("subsets") or []
        for port in subset.get("ports") or [{}]
        for address in subset.get("addresses") or []
    ]
    if not pairs:
        return "<none>"
    more = f" + {len(pairs) - 3} more..." if len(pairs) > 3 else ""
    return ",".join(pairs[:3]) + more


def _slice_endpoints(obj: Mapping[str, Any]) -> str:
    addresses = [a for e in obj.get("endpoints") or [] for a in e.get("addresses") or []]
    if not addresses:
        return "<unset>"
    more = f" + {len(addresses) - 3} more..." if len(addresses) > 3 else ""
    return ",".join(addresses[:3]) + more


def _crd_row(crd: Mapping[str, Any], age: Ager) -> list[Any]:
    return [_name(crd), _get(crd, "metadata", "creationTimestamp") or ""]


PRINTERS: Final[dict[tuple[str, str], Printer]] = {
    ("", "pods"): (_POD_COLUMNS, _pod_row),
    ("", "nodes"): (_NODE_COLUMNS, _node_row),
    ("", "namespaces"): ([NAME_COLUMN, col("Status", "The status of the namespace"), AGE_COLUMN], _namespace_row),
    ("", "events"): (_EVENT_COLUMNS, _event_row),
    ("events.k8s.io", "events"): (_EVENT_COLUMNS, _event_row),
    ("", "services"): (_SERVICE_COLUMNS, _service_row),
    ("", "endpoints"): (
        [NAME_COLUMN, col("Endpoints", "Endpoints of the service"), AGE_COLUMN],
        _simple(_endpoints),
    ),
    ("discovery.k8s.io", "endpointslices"): (
        [
            NAME_COLUMN,
            col("AddressType", "Type of address"),
            col("Ports", "Ports of the slice"),
            col("Endpoints", "Addresses of the slice"),
            AGE_COLUMN,
        ],
        _simple(
            lambda o: str(o.get("addressType") or ""),
            lambda o: ",".join(str(p.get("port", "<unset>")) for p in o.get("ports") or []) or "<unset>",
            _slice_endpoints,
        ),
    ),
    ("", "configmaps"): (
        [NAME_COLUMN, col("Data", "Number of keys in the configmap.", type_="string"), AGE_COLUMN],
        _simple(lambda o: len(o.get("data") or {}) + len(o.get("binaryData") or {})),
    ),
    ("", "secrets"): (
        [NAME_COLUMN, col("Type", "The type of the secret"), col("Data", "Number of keys in the secret."), AGE_COLUMN],
        _simple(lambda o: str(o.get("type") or ""), lambda o: len(o.get("data") or {})),
    ),
    ("", "serviceaccounts"): (
        [NAME_COLUMN, col("Secrets", "Secrets is a list of the secrets used by this service account."), AGE_COLUMN],
        _simple(lambda o: len(o.get("secrets") or [])),
    ),
    ("coordination.k8s.io", "leases"): (
        [
            NAME_COLUMN,
            col("Holder", "HolderIdentity contains the identity of the holder of a current lease."),
            AGE_COLUMN,
        ],
        _simple(lambda o: str(_get(o, "spec", "holderIdentity") or "")),
    ),
    ("apiextensions.k8s.io", "customresourcedefinitions"): (
        [NAME_COLUMN, col("Created At", _AGE_DESC, type_="date")],
        _crd_row,
    ),
    ("autoscaling", "horizontalpodautoscalers"): (
        [
            NAME_COLUMN,
            col("Reference", "The reference to the autoscaled resource."),
            col("Targets", "The current and target metric values."),
            col("MinPods", "The lower limit for the number of pods.", type_="string"),
            col("MaxPods", "The upper limit for the number of pods.", type_="integer"),
            col("Replicas", "Current number of replicas of pods managed by this autoscaler.", type_="integer"),
            AGE_COLUMN,
        ],
        _hpa_row,
    ),
    ("scheduling.k8s.io", "priorityclasses"): (
        [
            NAME_COLUMN,
            col("Value", "The integer value of this priority class.", type_="integer"),
            col("Global-Default", "Whether this is the default priority class.", type_="boolean"),
            AGE_COLUMN,
        ],
        _simple(lambda o: int(o.get("value") or 0), lambda o: bool(o.get("globalDefault", False))),
    ),
}

GENERIC: Final[Printer] = ([NAME_COLUMN, AGE_COLUMN], _simple())

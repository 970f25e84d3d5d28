"""Server-side Table output: human ages, pod/node/built-in printers, CRD printer columns and the Table envelope."""

from __future__ import annotations

import json
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

import pytest
import yaml
from hypothesis import given
from hypothesis import strategies as st

from grove_sim.http.tables import build_table, human_duration, printer_columns_for
from grove_sim.machinery.jsonpath import JsonPathError

NOW = datetime(2026, 11, 22, 12, 0, 0, tzinfo=UTC)


def ts(ago: timedelta) -> str:
    """An RFC 3339 timestamp ``ago`` before NOW."""
    return (NOW - ago).strftime("%Y-%m-%dT%H:%M:%SZ")


# ---------------------------------------------------------------------------------------------------------------------
# human_duration


@pytest.mark.parametrize(
    ("seconds", "expected"),
    [
        # Golden values of k8s.io/apimachinery/pkg/util/duration TestHumanDuration.
        pytest.param(1, "1s", id="1s"),
        pytest.param(70, "70s", id="70s"),
        pytest.param(190, "3m10s", id="3m10s"),
        pytest.param(70 * 60, "70m", id="70m"),
        pytest.param(47 * 3600, "47h", id="47h"),
        pytest.param(49 * 3600, "2d1h", id="2d1h"),
        pytest.param((8 * 24 + 2) * 3600, "8d", id="8d"),
        pytest.param(367 * 24 * 3600, "367d", id="367d"),
        pytest.param((365 * 2 * 24 + 25) * 3600, "2y1d", id="2y1d"),
        pytest.param((365 * 8 * 24 + 2) * 3600, "8y", id="8y"),
        # Boundaries of the same algorithm.
        pytest.param(0, "0s", id="zero"),
        pytest.param(-1.5, "0s", id="clock-skew-tolerated"),
        pytest.param(-2, "<invalid>", id="future"),
        pytest.param(119.9, "119s", id="truncates"),
        pytest.param(120, "2m", id="2m"),
        pytest.param(9 * 60 + 59, "9m59s", id="9m59s"),
        pytest.param(3 * 3600 + 60, "3h1m", id="3h1m"),
        pytest.param(8 * 3600 + 59 * 60, "8h", id="8h"),
        pytest.param(2 * 365 * 24 * 3600, "2y", id="2y"),
    ],
)
def test_human_duration(seconds: float, expected: str) -> None:
    """human_duration matches apimachinery's HumanDuration."""
    assert human_duration(seconds) == expected


@given(st.floats(min_value=0, max_value=20 * 365 * 86400))
def test_human_duration_is_short(seconds: float) -> None:
    """Ages never exceed two units, so they fit kubectl's AGE column."""
    text = human_duration(seconds)
    assert 2 <= len(text) <= 7
    assert sum(c.isalpha() for c in text) <= 2


# ---------------------------------------------------------------------------------------------------------------------
# Pods


def pod(**overrides: Any) -> dict[str, Any]:
    """A running single-container pod, with overrides merged into spec/status/metadata."""
    obj: dict[str, Any] = {
        "apiVersion": "v1",
        "kind": "Pod",
        "metadata": {"name": "p", "namespace": "default", "creationTimestamp": ts(timedelta(minutes=5))},
        "spec": {"containers": [{"name": "main"}], "nodeName": "node-1"},
        "status": {
            "phase": "Running",
            "podIP": "10.0.0.5",
            "podIPs": [{"ip": "10.0.0.5"}],
            "conditions": [{"type": "Ready", "status": "True"}],
            "containerStatuses": [{"name": "main", "ready": True, "restartCount": 0, "state": {"running": {}}}],
        },
    }
    for section, values in overrides.items():
        obj[section] = {**obj[section], **values}
    return obj


def pod_cells(obj: dict[str, Any]) -> list[Any]:
    """The single row's cells of a pods Table."""
    table = build_table("pods", "", [obj], printer_columns=None, include_object="Metadata", now=NOW)
    cells: list[Any] = table["rows"][0]["cells"]
    return cells


def test_pod_columns_include_wide_ones() -> None:
    """Pod tables carry kubectl's columns, with IP/Node/Nominated Node/Readiness Gates at priority 1."""
    table = build_table("pods", "", [pod()], printer_columns=None, include_object="Metadata", now=NOW)
    names = [(c["name"], c["priority"]) for c in table["columnDefinitions"]]
    assert names == [
        ("Name", 0),
        ("Ready", 0),
        ("Status", 0),
        ("Restarts", 0),
        ("Age", 0),
        ("IP", 1),
        ("Node", 1),
        ("Nominated Node", 1),
        ("Readiness Gates", 1),
    ]
    assert table["columnDefinitions"][0]["format"] == "name"
    assert table["rows"][0]["cells"] == ["p", "1/1", "Running", "0", "5m", "10.0.0.5", "node-1", "<none>", "<none>"]


GATED = pod(
    spec={"containers": [{"name": "main"}], "schedulingGates": [{"name": "grove.io/podgang-pending-creation"}]},
    status={"phase": "Pending", "conditions": [], "containerStatuses": []},
)
GATED["spec"].pop("nodeName")


@pytest.mark.parametrize(
    ("obj", "ready", "status", "restarts"),
    [
        pytest.param(GATED, "0/1", "SchedulingGated", "0", id="scheduling-gated"),
        pytest.param(
            pod(status={"phase": "Pending", "conditions": [{"type": "PodScheduled", "reason": "SchedulingGated"}]}),
            "1/1",
            "SchedulingGated",
            "0",
            id="scheduling-gated-condition",
        ),
        pytest.param(
            pod(
                metadata={
                    "name": "p",
                    "creationTimestamp": ts(timedelta(hours=1)),
                    "deletionTimestamp": ts(timedelta()),
                }
            ),
            "1/1",
            "Terminating",
            "0",
            id="terminating",
        ),
        pytest.param(
            pod(
                spec={"initContainers": [{"name": "init"}], "containers": [{"name": "main"}]},
                status={
                    "phase": "Pending",
                    "initContainerStatuses": [{"name": "init", "state": {"running": {}}, "restartCount": 0}],
                    "containerStatuses": [
                        {"name": "main", "state": {"waiting": {"reason": "PodInitializing"}}, "ready": False}
                    ],
                },
            ),
            "0/1",
            "Init:0/1",
            "0",
            id="init-running",
        ),
        pytest.param(
            pod(
                spec={"initContainers": [{"name": "init"}], "containers": [{"name": "main"}]},
                status={
                    "phase": "Pending",
                    "initContainerStatuses": [
                        {"name": "init", "state": {"waiting": {"reason": "CrashLoopBackOff"}}, "restartCount": 2}
                    ],
                    "containerStatuses": [],
                },
            ),
            "0/1",
            "Init:CrashLoopBackOff",
            "2",
            id="init-crashloop",
        ),
        pytest.param(
            pod(
                status={
                    "containerStatuses": [
                        {
                            "name": "main",
                            "ready": False,
                            "restartCount": 3,
                            "state": {"waiting": {"reason": "CrashLoopBackOff"}},
                            "lastState": {"terminated": {"exitCode": 1, "finishedAt": ts(timedelta(seconds=30))}},
                        }
                    ]
                }
            ),
            "0/1",
            "CrashLoopBackOff",
            "3 (30s ago)",
            id="crashloop-with-last-restart",
        ),
        pytest.param(
            pod(
                status={
                    "phase": "Succeeded",
                    "containerStatuses": [{"name": "main", "state": {"terminated": {"reason": "Completed"}}}],
                }
            ),
            "0/1",
            "Completed",
            "0",
            id="completed",
        ),
        pytest.param(
            pod(
                status={
                    "phase": "Failed",
                    "containerStatuses": [{"name": "main", "state": {"terminated": {"exitCode": 137}}}],
                }
            ),
            "0/1",
            "ExitCode:137",
            "0",
            id="exit-code",
        ),
        pytest.param(
            pod(status={"phase": "Pending", "containerStatuses": [], "conditions": []}),
            "0/1",
            "Pending",
            "0",
            id="pending",
        ),
    ],
)
def test_pod_status_column(obj: dict[str, Any], ready: str, status: str, restarts: str) -> None:
    """READY, STATUS and RESTARTS follow kubectl's printPod logic."""
    cells = pod_cells(obj)
    assert (cells[1], cells[2], cells[3]) == (ready, status, restarts)


def test_pod_wide_cells_for_unbound_pod_and_readiness_gates() -> None:
    """Wide cells show <none> for a pod without IP or node, and true/total readiness gates."""
    obj = pod(
        spec={"containers": [{"name": "main"}], "readinessGates": [{"conditionType": "grove.io/ready"}]},
        status={"phase": "Pending", "podIPs": [], "podIP": None, "nominatedNodeName": "node-2", "conditions": []},
    )
    obj["spec"].pop("nodeName")
    assert pod_cells(obj)[5:] == ["<none>", "<none>", "node-2", "0/1"]


def test_completed_pod_rows_carry_conditions() -> None:
    """Succeeded and Failed pods carry the Completed row condition, as the real server sends."""
    table = build_table(
        "pods", "", [pod(status={"phase": "Succeeded"}), pod()], printer_columns=None, include_object="None", now=NOW
    )
    assert table["rows"][0]["conditions"][0]["type"] == "Completed"
    assert "conditions" not in table["rows"][1]


# ---------------------------------------------------------------------------------------------------------------------
# Nodes


def node(ready: str | None, *, unschedulable: bool = False, labels: dict[str, str] | None = None) -> dict[str, Any]:
    """A node with the given Ready condition status."""
    conditions = [] if ready is None else [{"type": "Ready", "status": ready}]
    return {
        "metadata": {"name": "node-0", "creationTimestamp": ts(timedelta(days=3, hours=2)), "labels": labels or {}},
        "spec": {"unschedulable": unschedulable},
        "status": {
            "conditions": conditions,
            "addresses": [{"type": "InternalIP", "address": "10.1.0.1"}],
            "nodeInfo": {"kubeletVersion": "v1.32.5", "osImage": "grove-sim", "containerRuntimeVersion": "sim://1"},
        },
    }


@pytest.mark.parametrize(
    ("obj", "status", "roles"),
    [
        pytest.param(node("True"), "Ready", "<none>", id="ready"),
        pytest.param(node("True", unschedulable=True), "Ready,SchedulingDisabled", "<none>", id="cordoned"),
        pytest.param(node("False"), "NotReady", "<none>", id="not-ready"),
        pytest.param(node(None), "Unknown", "<none>", id="no-condition"),
        pytest.param(
            node("True", labels={"node-role.kubernetes.io/control-plane": "", "node-role.kubernetes.io/gpu": "true"}),
            "Ready",
            "control-plane,gpu",
            id="roles",
        ),
    ],
)
def test_node_rows(obj: dict[str, Any], status: str, roles: str) -> None:
    """Node STATUS and ROLES follow kubectl's printNode, with wide columns filled from status."""
    table = build_table("nodes", "", [obj], printer_columns=None, include_object="Metadata", now=NOW)
    assert [c["name"] for c in table["columnDefinitions"]][:5] == ["Name", "Status", "Roles", "Age", "Version"]
    assert table["rows"][0]["cells"] == [
        "node-0",
        status,
        roles,
        "3d2h",
        "v1.32.5",
        "10.1.0.1",
        "<none>",
        "grove-sim",
        "<unknown>",
        "sim://1",
    ]


# ---------------------------------------------------------------------------------------------------------------------
# Custom resources

PCLQ_COLUMNS: list[dict[str, Any]] = [
    {"name": "Replicas", "type": "integer", "jsonPath": ".spec.replicas"},
    {"name": "Ready", "type": "integer", "jsonPath": ".status.readyReplicas"},
    {"name": "Phase", "type": "string", "jsonPath": '.status.conditions[?(@.type=="Available")].status'},
    {"name": "Domains", "type": "string", "jsonPath": ".spec.levels[*].domain", "priority": 1},
    {"name": "Ratio", "type": "number", "jsonPath": ".spec.ratio", "description": "custom"},
    {"name": "Suspended", "type": "boolean", "jsonPath": ".spec.suspend"},
    {"name": "Age", "type": "date", "jsonPath": ".metadata.creationTimestamp"},
]


def test_custom_resource_printer_columns() -> None:
    """CRD columns follow Name with typed cells; missing values are null and only the first match is shown."""
    objects = [
        {
            "metadata": {"name": "a", "creationTimestamp": ts(timedelta(hours=2))},
            "spec": {"replicas": 3, "levels": [{"domain": "zone"}, {"domain": "rack"}], "ratio": 1, "suspend": False},
            "status": {"readyReplicas": 2, "conditions": [{"type": "Available", "status": "True"}]},
        },
        {"metadata": {"name": "b", "creationTimestamp": ts(timedelta(seconds=9))}, "spec": {"replicas": 1.0}},
    ]
    table = build_table(
        "podcliques", "grove.io", objects, printer_columns=PCLQ_COLUMNS, include_object="Metadata", now=NOW
    )
    definitions = table["columnDefinitions"]
    assert [c["name"] for c in definitions] == [
        "Name",
        "Replicas",
        "Ready",
        "Phase",
        "Domains",
        "Ratio",
        "Suspended",
        "Age",
    ]
    assert definitions[4]["priority"] == 1
    assert definitions[1]["description"] == "Custom resource definition column (in JSONPath format): .spec.replicas"
    assert definitions[5]["description"] == "custom"
    assert table["rows"][0]["cells"] == ["a", 3, 2, "True", "zone", 1.0, False, "120m"]
    assert table["rows"][1]["cells"] == ["b", 1, None, None, None, None, None, "9s"]


def test_custom_resource_without_columns_gets_name_and_age() -> None:
    """A CRD without additionalPrinterColumns is served with Name and Age, like the real apiserver."""
    obj = {"metadata": {"name": "x", "creationTimestamp": ts(timedelta(minutes=61))}}
    table = build_table("things", "example.dev", [obj], printer_columns=[], include_object="None", now=NOW)
    assert [c["name"] for c in table["columnDefinitions"]] == ["Name", "Age"]
    assert table["rows"] == [{"cells": ["x", "61m"]}]


# ---------------------------------------------------------------------------------------------------------------------
# Other built-ins and the envelope


@pytest.mark.parametrize(
    ("resource", "group", "obj", "columns", "cells"),
    [
        pytest.param(
            "namespaces",
            "",
            {"metadata": {"name": "ns"}, "status": {"phase": "Active"}},
            ["Name", "Status", "Age"],
            ["ns", "Active", "<unknown>"],
            id="namespace",
        ),
        pytest.param(
            "services",
            "",
            {
                "metadata": {"name": "svc", "creationTimestamp": ts(timedelta(seconds=5))},
                "spec": {"clusterIP": "None", "ports": [{"port": 80}], "selector": {"b": "2", "a": "1"}},
            },
            ["Name", "Type", "Cluster-IP", "External-IP", "Port(s)", "Age", "Selector"],
            ["svc", "ClusterIP", "None", "<none>", "80/TCP", "5s", "a=1,b=2"],
            id="service",
        ),
        pytest.param(
            "events",
            "",
            {
                "metadata": {"name": "e1"},
                "type": "Warning",
                "reason": "Unschedulable",
                "message": " no fit ",
                "involvedObject": {"kind": "PodGang", "name": "g"},
                "source": {"component": "grove-scheduler"},
                "firstTimestamp": ts(timedelta(minutes=3)),
                "lastTimestamp": ts(timedelta(minutes=1)),
                "count": 4,
            },
            ["Last Seen", "Type", "Reason", "Object", "Subobject", "Source", "Message", "First Seen", "Count", "Name"],
            ["60s", "Warning", "Unschedulable", "podgang/g", "", "grove-scheduler", "no fit", "3m", 4, "e1"],
            id="event",
        ),
        pytest.param(
            "configmaps",
            "",
            {"metadata": {"name": "cm"}, "data": {"a": "1", "b": "2"}},
            ["Name", "Data", "Age"],
            ["cm", 2, "<unknown>"],
            id="configmap",
        ),
        pytest.param(
            "secrets",
            "",
            {"metadata": {"name": "s"}, "type": "Opaque", "data": {"k": "dg=="}},
            ["Name", "Type", "Data", "Age"],
            ["s", "Opaque", 1, "<unknown>"],
            id="secret",
        ),
        pytest.param(
            "leases",
            "coordination.k8s.io",
            {"metadata": {"name": "l"}, "spec": {"holderIdentity": "op-1"}},
            ["Name", "Holder", "Age"],
            ["l", "op-1", "<unknown>"],
            id="lease",
        ),
        pytest.param(
            "customresourcedefinitions",
            "apiextensions.k8s.io",
            {"metadata": {"name": "podcliques.grove.io", "creationTimestamp": "2026-11-22T08:00:00Z"}},
            ["Name", "Created At"],
            ["podcliques.grove.io", "2026-11-22T08:00:00Z"],
            id="crd",
        ),
        pytest.param(
            "horizontalpodautoscalers",
            "autoscaling",
            {
                "metadata": {"name": "h"},
                "spec": {
                    "scaleTargetRef": {"kind": "PodClique", "name": "pc"},
                    "minReplicas": 1,
                    "maxReplicas": 4,
                    "metrics": [
                        {"type": "Resource", "resource": {"name": "cpu", "target": {"averageUtilization": 80}}}
                    ],
                },
            },
            ["Name", "Reference", "Targets", "MinPods", "MaxPods", "Replicas", "Age"],
            ["h", "PodClique/pc", "cpu: <unknown>/80%", 1, 4, 0, "<unknown>"],
            id="hpa",
        ),
        pytest.param(
            "priorityclasses",
            "scheduling.k8s.io",
            {"metadata": {"name": "high"}, "value": 1000, "globalDefault": True},
            ["Name", "Value", "Global-Default", "Age"],
            ["high", 1000, True, "<unknown>"],
            id="priorityclass",
        ),
        pytest.param(
            "deployments",
            "apps",
            {
                "metadata": {"name": "d", "creationTimestamp": ts(timedelta(days=400))},
                "spec": {
                    "replicas": 3,
                    "selector": {"matchLabels": {"app": "d"}},
                    "template": {"spec": {"containers": [{"name": "c", "image": "nginx"}]}},
                },
                "status": {"readyReplicas": 2, "updatedReplicas": 3, "availableReplicas": 2},
            },
            ["Name", "Ready", "Up-to-date", "Available", "Age", "Containers", "Images", "Selector"],
            ["d", "2/3", 3, 2, "400d", "c", "nginx", "app=d"],
            id="deployment",
        ),
        pytest.param(
            "roles",
            "rbac.authorization.k8s.io",
            {"metadata": {"name": "r", "creationTimestamp": ts(timedelta(days=400))}},
            ["Name", "Age"],
            ["r", "400d"],
            id="generic",
        ),
    ],
)
def test_builtin_printers(resource: str, group: str, obj: dict[str, Any], columns: list[str], cells: list[Any]) -> None:
    """Each built-in resource gets kubectl's columns and cells."""
    table = build_table(resource, group, [obj], printer_columns=None, include_object="None", now=NOW)
    assert [c["name"] for c in table["columnDefinitions"]] == columns
    assert table["rows"][0]["cells"] == cells


@pytest.mark.parametrize(
    ("include", "expected"),
    [
        pytest.param(
            "Metadata",
            {"kind": "PartialObjectMetadata", "apiVersion": "meta.k8s.io/v1", "metadata": {"name": "p"}},
            id="metadata",
        ),
        pytest.param("Object", {"kind": "Pod", "metadata": {"name": "p"}, "spec": {}}, id="object"),
        pytest.param("None", None, id="none"),
        pytest.param(
            "bogus",
            {"kind": "PartialObjectMetadata", "apiVersion": "meta.k8s.io/v1", "metadata": {"name": "p"}},
            id="default",
        ),
    ],
)
def test_include_object(include: str, expected: dict[str, Any] | None) -> None:
    """includeObject picks PartialObjectMetadata (default), the full object, or nothing."""
    obj = {"kind": "Pod", "metadata": {"name": "p"}, "spec": {}}
    table = build_table("pods", "", [obj], printer_columns=None, include_object=include, now=NOW)
    assert table["rows"][0].get("object") == expected


def test_table_envelope_and_headerless_watch_rows() -> None:
    """The envelope is a meta.k8s.io/v1 Table; header=False drops column definitions; all of it is JSON."""
    table = build_table("pods", "", [pod(), GATED], printer_columns=None, include_object="Object", now=NOW)
    assert (table["kind"], table["apiVersion"], table["metadata"]) == ("Table", "meta.k8s.io/v1", {})
    assert len(table["rows"]) == 2
    assert json.loads(json.dumps(table)) == table
    bare = build_table("pods", "", [pod()], printer_columns=None, include_object="None", now=NOW, header=False)
    assert bare["columnDefinitions"] == []
    assert len(bare["rows"][0]["cells"]) == 9


def test_naive_now_is_treated_as_utc() -> None:
    """A naive ``now`` is read as UTC so ages stay correct."""
    naive = NOW.replace(tzinfo=None)
    table = build_table("pods", "", [pod()], printer_columns=None, include_object="None", now=naive)
    assert table["rows"][0]["cells"][4] == "5m"


def test_project_crd_printer_columns_render() -> None:
    """Every CRD in crds/ yields a Table whose rows have one cell per column definition."""
    crd_dir = Path(__file__).resolve().parents[3] / "crds"
    crds = sorted(crd_dir.glob("*.yaml"))
    obj = {"metadata": {"name": "x", "creationTimestamp": ts(timedelta(minutes=3))}, "spec": {}, "status": {}}
    for path in crds:
        crd = yaml.safe_load(path.read_text())
        for version in crd["spec"]["versions"]:
            columns = version.get("additionalPrinterColumns") or []
            table = build_table(
                crd["spec"]["names"]["plural"],
                crd["spec"]["group"],
                [obj],
                printer_columns=columns,
                include_object="Metadata",
                now=NOW,
            )
            assert len(table["rows"][0]["cells"]) == len(table["columnDefinitions"]) >= 2
            assert table["rows"][0]["cells"][0] == "x"
            assert "3m" in table["rows"][0]["cells"]


def test_bad_printer_column_path_is_reported() -> None:
    """An unparsable printer column JSONPath raises JsonPathError, so the server can reject the CRD."""
    with pytest.raises(JsonPathError):
        printer_columns_for([{"name": "X", "type": "string", "jsonPath": ".spec[?(@.a ~ 1)]"}])

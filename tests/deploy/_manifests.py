"""The rendered manifests of `deploy/` as the tests read them: `kubectl kustomize` output, one object per document,
and the command line a Deployment's container would run, so tests start the real programs with the manifests' own
flags."""

from __future__ import annotations

import os
import re
import subprocess
from collections.abc import Iterable, Mapping
from pathlib import Path
from typing import Any

import yaml

ROOT = Path(__file__).resolve().parents[2]
DEPLOY = ROOT / "deploy"
OVERLAYS = ("sim", "production", "scheduler-only")
KUBECTL = "/usr/bin/kubectl"
NAMESPACE = "grove-system"

Obj = dict[str, Any]


def render(path: Path) -> list[Obj]:
    """`kubectl kustomize PATH` as a list of objects (fails the test with kubectl's message)."""
    result = subprocess.run([KUBECTL, "kustomize", str(path)], capture_output=True, text=True, check=False, timeout=60)
    assert result.returncode == 0, f"kubectl kustomize {path} failed:\n{result.stderr}"
    return [doc for doc in yaml.safe_load_all(result.stdout) if doc]


def overlay(name: str) -> list[Obj]:
    """The objects of `deploy/overlays/<name>`."""
    return render(DEPLOY / "overlays" / name)


def production_with(directory: Path, *components: str, images: str = "") -> list[Obj]:
    """The production overlay with ``components`` of deploy/components added (and ``images:`` YAML), rendered
    through a kustomization written in ``directory``, as a user's overlay would be."""
    base = os.path.relpath(DEPLOY / "overlays" / "production", directory)
    paths = [os.path.relpath(DEPLOY / "components" / c, directory) for c in components]
    text = f"resources: [{base}]\n" + (f"components: [{', '.join(paths)}]\n" if paths else "") + images
    (directory / "kustomization.yaml").write_text(text)
    return render(directory)


def one(objects: Iterable[Obj], kind: str, name: str) -> Obj:
    """The object of ``kind`` named ``name``."""
    found = [o for o in objects if o["kind"] == kind and o["metadata"]["name"] == name]
    assert len(found) == 1, f"expected one {kind} {name}, found {len(found)}"
    return found[0]


def key(obj: Obj) -> tuple[str, str, str, str]:
    """(apiVersion, kind, namespace, name): what `kubectl apply` identifies an object by."""
    meta = obj["metadata"]
    return obj["apiVersion"], obj["kind"], meta.get("namespace") or "", meta["name"]


def container(deployment: Obj) -> Obj:
    """The Deployment's only container."""
    containers = deployment["spec"]["template"]["spec"]["containers"]
    assert len(containers) == 1
    return dict(containers[0])


def environment(objects: Iterable[Obj], deployment: Obj, pod_ip: str) -> dict[str, str]:
    """The container's environment as kubelet would build it: literal values, the downward API (pod IP and
    namespace) and ConfigMap keys resolved from the rendered ConfigMaps."""
    configmaps = {o["metadata"]["name"]: o.get("data") or {} for o in objects if o["kind"] == "ConfigMap"}
    fields = {"status.podIP": pod_ip, "metadata.namespace": deployment["metadata"].get("namespace") or NAMESPACE}
    env: dict[str, str] = {}
    for var in container(deployment).get("env") or ():
        source = var.get("valueFrom") or {}
        if "value" in var:
            env[var["name"]] = str(var["value"])
        elif "fieldRef" in source:
            env[var["name"]] = fields[source["fieldRef"]["fieldPath"]]
        elif "configMapKeyRef" in source:
            ref = source["configMapKeyRef"]
            env[var["name"]] = str(configmaps[ref["name"]][ref["key"]])
        else:
            raise AssertionError(f"unexpected env source {var}")
    return env


_VAR = re.compile(r"\$\(([A-Za-z_][A-Za-z0-9_]*)\)")


def command_line(deployment: Obj, env: Mapping[str, str]) -> list[str]:
    """command + args with `$(VAR)` expanded from ``env``, as kubelet expands them."""
    spec = container(deployment)
    words = [*spec.get("command", ()), *spec.get("args", ())]
    return [_VAR.sub(lambda m: env.get(m.group(1), m.group(0)), str(w)) for w in words]


def with_free_ports(argv: list[str], webhook_port: int) -> list[str]:
    """The same flags with every listener on a port of the test's choosing (any free one; the webhook port given),
    so the test runs beside others on one machine."""
    out = []
    for word in argv:
        flag, sep, value = word.partition("=")
        if sep and flag.endswith("-bind-address") and flag != "--webhook-bind-address":
            host = value.rpartition(":")[0]
            word = f"{flag}={host}:0"
        elif sep and flag == "--webhook-port":
            word = f"{flag}={webhook_port}"
        out.append(word)
    return out


def to_yaml(objects: Iterable[Obj]) -> str:
    """Objects as one multi-document YAML stream."""
    return yaml.safe_dump_all(list(objects), sort_keys=False)

"""`kubectl grove convert -f FILE`: the `grove.io/v1alpha1` PodCliqueSet equivalent to a first-API PodGangSet.

A PodGangSet is one clique: the PodCliqueSet has one replica whose only clique (`worker`) runs `replicas` pods of
the template with `minAvailable` as the clique's minimum, so its base PodGang asks the scheduler for the same
gang. The pod spec is the one the operator gives PodGangSet pods (`grove_api.gangpod`): node affinity merged,
the terms of the PodCliques in the same file that select the template's labels added, extended-resource limits
filled in; applied, it yields the same pods (names and Grove's labels aside). docs/first-api.md maps each field.
"""

from __future__ import annotations

import json
import sys
from collections.abc import Iterable
from pathlib import Path
from typing import Any

import pydantic
import yaml

from grove_api import DynamoPodClique, PodGangSet
from grove_api.gangpod import gang_pod_spec
from grove_kubectl.session import CommandError

__all__ = ["CLIQUE_NAME", "convert", "convert_file", "render"]

Obj = dict[str, Any]
CLIQUE_NAME = "worker"


def convert(pgs: PodGangSet, podcliques: Iterable[DynamoPodClique]) -> Obj:
    """The PodCliqueSet of one PodGangSet."""
    template = pgs.spec.template
    labels = dict(template.metadata.labels or {}) if template.metadata else {}
    spec, _ = gang_pod_spec(pgs, labels, podcliques)
    clique: Obj = {"name": CLIQUE_NAME}
    if labels:
        clique["labels"] = labels
    if template.metadata and template.metadata.annotations:
        clique["annotations"] = dict(template.metadata.annotations)
    clique["spec"] = {
        "roleName": CLIQUE_NAME,
        "replicas": pgs.spec.replicas,
        "minAvailable": pgs.spec.effective_min_available(),
        "podSpec": spec,
    }
    metadata: Obj = {"name": pgs.metadata.name}
    if pgs.metadata.namespace:
        metadata["namespace"] = pgs.metadata.namespace
    return {
        "apiVersion": "grove.io/v1alpha1",
        "kind": "PodCliqueSet",
        "metadata": metadata,
        "spec": {"replicas": 1, "template": {"cliques": [clique]}},
    }


def _documents(path: str) -> list[Any]:
    try:
        text = sys.stdin.read() if path == "-" else Path(path).read_text(encoding="utf-8")
        return [d for d in yaml.safe_load_all(text) if d is not None]
    except OSError as exc:
        raise CommandError(f"the path {path!r} cannot be read: {exc.strerror}") from exc
    except yaml.YAMLError as exc:
        raise CommandError(f"{path}: not YAML: {exc}") from exc


def convert_file(path: str) -> list[Obj]:
    """Every PodGangSet of the file (a `kind: List` is unpacked) as a PodCliqueSet, in file order."""
    docs: list[Any] = []
    for doc in _documents(path):
        docs += doc.get("items") or [] if isinstance(doc, dict) and doc.get("kind") == "List" else [doc]
    first_api = [d for d in docs if isinstance(d, dict) and d.get("apiVersion") == PodGangSet.API_VERSION]
    try:
        cliques = [DynamoPodClique.model_validate(d) for d in first_api if d.get("kind") == "PodClique"]
        sets = [PodGangSet.model_validate(d) for d in first_api if d.get("kind") == "PodGangSet"]
    except pydantic.ValidationError as exc:
        raise CommandError(f"{path}: {exc}") from exc
    if not sets:
        raise CommandError(f"{path}: no {PodGangSet.API_VERSION} PodGangSet to convert")
    return [convert(pgs, cliques) for pgs in sets]


def render(objects: list[Obj], fmt: str) -> str:
    """YAML documents (default) or JSON (a `List` when there are several), as kubectl prints them."""
    if fmt == "json":
        body: Any = objects[0] if len(objects) == 1 else {"apiVersion": "v1", "kind": "List", "items": objects}
        return json.dumps(body, indent=2) + "\n"
    return "".join("---\n" * (i > 0) + yaml.safe_dump(o, sort_keys=False) for i, o in enumerate(objects))

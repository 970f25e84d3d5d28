"""Generate the CustomResourceDefinitions in `crds/` from the API models (`make crds`).

`crds/` is what every cluster (real, or the simulated one via `kubectl apply -f crds/`) validates Grove objects
against, so it must be exactly what the models say. The schema comes from `_schema.model_schema`; the per-kind
table in `_crdspec` adds names, subresources, columns, defaults and CEL. Output is deterministic so a test can
compare the files on disk with a fresh generation.

Usage: `python -m grove_api.crdgen [OUTPUT_DIR]` (default `crds`).
"""

from __future__ import annotations

import sys
from collections.abc import Sequence
from pathlib import Path
from typing import Any

import yaml

from grove_api._crdspec import CRD_KINDS, TYPE_EXTRAS, CRDKind
from grove_api._schema import Schema, deep_merge, model_schema

__all__ = ["crd_filename", "generate", "generate_crd", "main", "render", "write_crds"]

_GENERATED = (
    "*grove.io_*.yaml",
    "grove.dynamo.ai_*.yaml",
    "scheduling.run.ai_*.yaml",
    "scheduling.koordinator.sh_*.yaml",
)
"""File patterns of Grove CRDs in the output directory (stale ones are removed)."""


def _node_at(schema: Schema, path: str) -> Schema:
    """The schema node at a dotted JSON path (`a.b[].c`), failing loudly when the table names a missing field."""
    node = schema
    for step in path.split("."):
        into_items = step.endswith("[]")
        name = step.removesuffix("[]")
        try:
            node = node["properties"][name]
        except KeyError:
            raise KeyError(f"CRD extras path {path!r}: no property {name!r}") from None
        if into_items:
            node = node["items"]
    return node


def _root_schema(kind: CRDKind) -> Schema:
    """The openAPIV3Schema of a kind: model schema, plain apiVersion/kind strings, then the path extras."""
    schema = model_schema(kind.model, TYPE_EXTRAS)
    schema["description"] = kind.description
    properties = schema["properties"]
    properties["apiVersion"] = {"type": "string", "description": "Versioned schema of this object."}
    properties["kind"] = {"type": "string", "description": "REST resource this object represents."}
    properties["metadata"] = {"type": "object"}
    for path, extra in kind.path_extras.items():
        deep_merge(_node_at(schema, path), extra)
    return schema


def generate_crd(kind: CRDKind) -> dict[str, Any]:
    """One apiextensions.k8s.io/v1 CustomResourceDefinition as a plain dict."""
    subresources: dict[str, Any] = {"status": {}}
    if kind.scale is not None:
        subresources["scale"] = {
            "specReplicasPath": kind.scale.spec_replicas,
            "statusReplicasPath": kind.scale.status_replicas,
            "labelSelectorPath": kind.scale.label_selector,
        }
    names: dict[str, Any] = {
        "kind": kind.kind,
        "listKind": f"{kind.kind}List",
        "plural": kind.plural,
        "singular": kind.singular,
    }
    if kind.short_names:
        names["shortNames"] = list(kind.short_names)
    if kind.categories:
        names["categories"] = list(kind.categories)
    return {
        "apiVersion": "apiextensions.k8s.io/v1",
        "kind": "CustomResourceDefinition",
        "metadata": {"name": f"{kind.plural}.{kind.group}"},
        "spec": {
            "group": kind.group,
            "names": names,
            "scope": kind.scope,
            "versions": [
                {
                    "name": kind.version,
                    "served": True,
                    "storage": True,
                    "schema": {"openAPIV3Schema": _root_schema(kind)},
                    "subresources": subresources,
                    "additionalPrinterColumns": [c.to_dict() for c in kind.printer_columns],
                }
            ],
        },
    }


def generate() -> list[dict[str, Any]]:
    """All Grove CRDs, in a fixed order."""
    return [generate_crd(kind) for kind in CRD_KINDS]


def crd_filename(crd: dict[str, Any]) -> str:
    """`<group>_<plural>.yaml`, the controller-gen naming convention."""
    spec = crd["spec"]
    return f"{spec['group']}_{spec['names']['plural']}.yaml"


def render(crd: dict[str, Any]) -> str:
    """Deterministic YAML text of one CRD."""
    return "---\n" + yaml.safe_dump(crd, sort_keys=False, default_flow_style=False, width=120)


def write_crds(output_dir: Path) -> list[Path]:
    """Write every CRD into `output_dir`, remove stale Grove CRD files, and return the paths written."""
    output_dir.mkdir(parents=True, exist_ok=True)
    written: list[Path] = []
    for crd in generate():
        path = output_dir / crd_filename(crd)
        path.write_text(render(crd), encoding="utf-8")
        written.append(path)
    expected = {p.name for p in written}
    for pattern in _GENERATED:
        for stale in output_dir.glob(pattern):
            if stale.name not in expected:
                stale.unlink()
    return written


def main(argv: Sequence[str] | None = None) -> int:
    """CLI entry point: write the CRDs into the directory given (default `crds`)."""
    args = list(sys.argv[1:] if argv is None else argv)
    if len(args) > 1 or (args and args[0].startswith("-")):
        print("usage: python -m grove_api.crdgen [OUTPUT_DIR]", file=sys.stderr)
        return 2
    for path in write_crds(Path(args[0] if args else "crds")):
        print(path)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())

"""The connection and the reads every command makes, resolved as kubectl resolves them.

Why one place: `--kubeconfig`, `--context`, `-n` and `-A` must mean what they mean to kubectl (the context's
namespace when `-n` is absent, `default` when the context names none), and each command reads a handful of
collections once rather than object by object.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import yaml
from kubernetes_asyncio import client as k8s

from grove_runtime import errors
from grove_runtime.client import KubeClient
from grove_runtime.kubeconfig import KubeconfigError, load_configuration, resolve
from grove_runtime.resources import ResourceType

__all__ = ["CommandError", "Session", "context_namespace"]

Obj = dict[str, Any]


class CommandError(Exception):
    """What the user asked cannot be answered; the message is printed as kubectl prints errors."""


def context_namespace(path: Path, context: str | None) -> str:
    """The namespace of `context` (or the current context) in a kubeconfig file, `default` when it names none."""
    try:
        doc = yaml.safe_load(path.read_text(encoding="utf-8")) or {}
    except (OSError, yaml.YAMLError):
        return "default"
    name = context or doc.get("current-context")
    for entry in doc.get("contexts") or ():
        if isinstance(entry, Mapping) and entry.get("name") == name:
            return str((entry.get("context") or {}).get("namespace") or "default")
    return "default"


@dataclass
class Session:
    """An open client and the namespace scope of one command (`namespace` None: every namespace)."""

    client: KubeClient
    namespace: str | None

    @classmethod
    async def open(
        cls, kubeconfig: str | None, context: str | None, namespace: str | None, all_namespaces: bool
    ) -> Session:
        """Connect like kubectl; a missing or broken configuration is a `CommandError`."""
        try:
            source = resolve(kubeconfig)
            configuration, _ = await load_configuration(kubeconfig, context=context)
        except KubeconfigError as exc:
            raise CommandError(str(exc)) from exc
        if all_namespaces:
            scope: str | None = None
        elif namespace:
            scope = namespace
        else:
            scope = context_namespace(source.path, context) if source.kind != "in-cluster" else "default"
        return cls(KubeClient(k8s.ApiClient(configuration=configuration)), scope)

    async def close(self) -> None:
        """Close the connection."""
        await self.client.close()

    async def list(self, rt: ResourceType, namespace: str | None = None, *, everywhere: bool = False) -> list[Obj]:
        """Objects of `rt` in `namespace` (default: the command's scope); a kind the cluster lacks is empty."""
        where = None if everywhere or not rt.namespaced else (namespace or self.namespace)
        try:
            result = await self.client.list(rt, where)
        except errors.NotFound:
            return []
        items: list[Obj] = list(result.get("items") or [])
        return items

    async def get(self, rt: ResourceType, name: str, namespace: str | None = None) -> Obj:
        """One object; NotFound becomes kubectl's `Error from server (NotFound)` wording."""
        where = namespace or self.namespace or "default"
        try:
            return await self.client.get(rt, name, where if rt.namespaced else "")
        except errors.NotFound as exc:
            raise CommandError(f'{rt.plural}.{rt.group or "core"} "{name}" not found in namespace "{where}"') from exc

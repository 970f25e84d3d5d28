"""Deterministic template hashes that decide when a rollout is needed (grove-reference §3.8).

The PodCliqueSet generation hash covers every clique's pod template; the per-clique pod-template hash covers one.
Only labels, annotations and the pod spec (with the PCS `priorityClassName` mixed in) take part, so changing
replicas, minAvailable, autoscaling or topology never triggers a rollout. FNV-64a over a canonical JSON dump gives
a stable value across processes (Python's `hash` is salted); the result is encoded with Kubernetes' "safe"
alphabet so it can be used as a label value.
"""

from __future__ import annotations

import functools
import json
from collections.abc import Iterable
from typing import Any

from grove_api import PodCliqueSetTemplateSpec, PodCliqueTemplateSpec

__all__ = ["clique_hashes", "fnv64a", "generation_hash", "pod_template_hash", "safe_encode"]

_FNV_OFFSET = 0xCBF29CE484222325
_FNV_PRIME = 0x100000001B3
_MASK = (1 << 64) - 1
_SAFE_ALPHABET = "bcdfghjklmnpqrstvwxz2456789"


def fnv64a(data: bytes) -> int:
    """The 64-bit FNV-1a hash of `data` (the same function Go's hash/fnv New64a computes)."""
    value = _FNV_OFFSET
    for byte in data:
        value ^= byte
        value = (value * _FNV_PRIME) & _MASK
    return value


def safe_encode(text: str) -> str:
    """Map each character onto an alphabet without vowels or look-alikes, like k8s `rand.SafeEncodeString`."""
    return "".join(_SAFE_ALPHABET[ord(ch) % len(_SAFE_ALPHABET)] for ch in text)


def _template_document(clique: PodCliqueTemplateSpec, priority_class_name: str | None) -> dict[str, Any]:
    """The part of a clique that defines its pods: labels, annotations, pod spec with the PCS priority class."""
    pod_spec = dict(clique.spec.pod_spec)
    if priority_class_name:
        pod_spec["priorityClassName"] = priority_class_name
    else:
        pod_spec.pop("priorityClassName", None)
    return {
        "metadata": {"labels": dict(clique.labels or {}), "annotations": dict(clique.annotations or {})},
        "spec": pod_spec,
    }


@functools.lru_cache(maxsize=1024)
def _hash_bytes(data: bytes) -> str:
    """Safe-encoded FNV-64a of `data`; memoised because every reconcile of a 500-replica PCS hashes the same
    template 500 times and byte-wise FNV in Python costs far more than the JSON dump that feeds it."""
    return safe_encode(str(fnv64a(data)))


def _hash_documents(documents: Iterable[dict[str, Any]]) -> str:
    """FNV-64a over the canonical JSON of each document in order, safe-encoded."""
    data = b"".join(
        json.dumps(doc, sort_keys=True, separators=(",", ":"), ensure_ascii=False).encode() for doc in documents
    )
    return _hash_bytes(data)


def pod_template_hash(clique: PodCliqueTemplateSpec, priority_class_name: str | None = None) -> str:
    """The `grove.io/pod-template-hash` of one clique: changes exactly when its pods must be replaced."""
    return _hash_documents([_template_document(clique, priority_class_name)])


def generation_hash(template: PodCliqueSetTemplateSpec) -> str:
    """The PodCliqueSet `currentGenerationHash`: one hash over every clique's pod template, in template order."""
    return _hash_documents(_template_document(c, template.priority_class_name) for c in template.cliques)


def clique_hashes(template: PodCliqueSetTemplateSpec) -> dict[str, str]:
    """Every clique's pod-template hash, by clique name: what its PodCliques and pods carry when up to date."""
    return {c.name: pod_template_hash(c, template.priority_class_name) for c in template.cliques}

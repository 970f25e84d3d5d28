"""The store's ownership rule: a stored object (and everything reachable from it) is never mutated after the write.

Writers share untouched subtrees between versions (copy-on-write) and the JSON of a write is encoded once for
the response and every watcher, so a single in-place mutation anywhere would silently corrupt history, watch
replay and other readers. These tests drive every write path of ``Core`` and check each committed version
against a deep copy taken when it was committed.
"""

from __future__ import annotations

import copy
import json
from typing import Any

from grove_sim.registry import subresources
from grove_sim.registry.core import Core
from grove_sim.registry.patching import JSON_PATCH, MERGE_PATCH, STRATEGIC_PATCH
from grove_sim.registry.resources import Registry, ResourceInfo
from grove_sim.storage.store import ENCODED_EVENTS, Event, Store, dumps

NS = "default"


class _Recorder:
    """Keeps every committed event with deep copies of its objects as they were at commit time."""

    def __init__(self) -> None:
        self.events: list[tuple[Event, dict[str, Any], dict[str, Any] | None]] = []

    def __call__(self, event: Event) -> None:
        self.events.append((event, copy.deepcopy(event.obj), copy.deepcopy(event.old)))

    def assert_unchanged(self) -> None:
        for event, obj, old in self.events:
            assert event.obj == obj, f"{event.type} rv={event.rv} was mutated after commit"
            assert event.old == old, f"previous version of rv={event.rv} was mutated after commit"


def _core() -> tuple[Core, _Recorder]:
    core = Core(Store(), Registry())
    recorder = _Recorder()
    core.store.add_listener(recorder)
    namespaces = _info(core, "", "v1", "namespaces")
    core.create(namespaces, "", {"metadata": {"name": NS}})
    return core, recorder


def _info(core: Core, group: str, version: str, plural: str) -> ResourceInfo:
    info = core.registry.get(group, version, plural)
    assert info is not None
    return info


def _pod(name: str) -> dict[str, Any]:
    return {
        "metadata": {"name": name, "labels": {"app": "x"}, "finalizers": ["example.dev/hold"]},
        "spec": {"containers": [{"name": "c", "image": "busybox", "resources": {"requests": {"cpu": "1"}}}]},
    }


def test_pod_write_paths_never_mutate_committed_versions() -> None:
    """Create, SMP/merge/JSON patches, status writes, bind, PUT, graceful delete and finalizer removal on a pod."""
    core, recorder = _core()
    pods = _info(core, "", "v1", "pods")
    body = _pod("p")
    body_before = copy.deepcopy(body)
    core.create(pods, NS, body)
    assert body == body_before
    smp = {"status": {"conditions": [{"type": "Probe", "status": "True"}]}}
    core.patch(pods, NS, "p", STRATEGIC_PATCH, smp, subresource="status")
    core.patch(pods, NS, "p", MERGE_PATCH, {"metadata": {"labels": {"tier": "web"}}})
    core.patch(pods, NS, "p", JSON_PATCH, [{"op": "add", "path": "/metadata/annotations", "value": {"a": "b"}}])
    core.patch(pods, NS, "p", STRATEGIC_PATCH, {"metadata": {"labels": {"app": None}}})
    subresources.bind(core, NS, "p", {"metadata": {"name": "p"}, "target": {"name": "node-1"}})
    current = core.get(pods, NS, "p")
    put = json.loads(dumps(current))
    put["metadata"]["labels"]["put"] = "yes"
    core.update(pods, NS, "p", put)
    core.patch(pods, NS, "p", STRATEGIC_PATCH, {"status": {"phase": "Running"}}, subresource="status")
    core.delete(pods, NS, "p", {"gracePeriodSeconds": 30})
    marked = core.get(pods, NS, "p")
    assert marked["metadata"]["deletionTimestamp"]
    core.remove_finalizer(pods, marked, "example.dev/hold")
    core.delete(pods, NS, "p", {"gracePeriodSeconds": 0})
    assert core.store.get(pods.key, NS, "p") is None
    assert [e.type for e, _, _ in recorder.events].count("MODIFIED") >= 8
    recorder.assert_unchanged()


def test_configmap_patches_that_leave_metadata_alone_never_mutate_it() -> None:
    """A data-only patch shares metadata with the old version; the new resourceVersion must not leak into it."""
    core, recorder = _core()
    configmaps = _info(core, "", "v1", "configmaps")
    core.create(configmaps, NS, {"metadata": {"name": "cm"}, "data": {"a": "1"}})
    core.patch(configmaps, NS, "cm", MERGE_PATCH, {"data": {"b": "2"}})
    core.patch(configmaps, NS, "cm", STRATEGIC_PATCH, {"data": {"a": None}})
    core.patch(configmaps, NS, "cm", MERGE_PATCH, {"data": {"b": "2"}})
    assert core.get(configmaps, NS, "cm")["data"] == {"b": "2"}
    versions = [e.obj["metadata"]["resourceVersion"] for e, _, _ in recorder.events if e.key == configmaps.key]
    assert len(versions) == 3
    assert len(set(versions)) == 3
    recorder.assert_unchanged()


def test_status_patch_shares_untouched_subtrees_with_the_previous_version() -> None:
    """A status write stores a new top level, metadata and status, and shares the spec with the old version."""
    core, _ = _core()
    pods = _info(core, "", "v1", "pods")
    old = core.create(pods, NS, _pod("shared"))
    smp = {"status": {"conditions": [{"type": "Probe", "status": "True"}]}}
    new, _ = core.patch(pods, NS, "shared", STRATEGIC_PATCH, smp, subresource="status")
    assert new is core.get(pods, NS, "shared")
    assert new["spec"] is old["spec"]
    assert new["metadata"] is not old["metadata"]
    assert new["metadata"]["resourceVersion"] != old["metadata"]["resourceVersion"]
    assert "conditions" not in (old.get("status") or {})


GADGET_CRD: dict[str, Any] = {
    "apiVersion": "apiextensions.k8s.io/v1",
    "kind": "CustomResourceDefinition",
    "metadata": {"name": "gadgets.example.dev"},
    "spec": {
        "group": "example.dev",
        "scope": "Namespaced",
        "names": {"plural": "gadgets", "singular": "gadget", "kind": "Gadget"},
        "versions": [
            {
                "name": "v1",
                "served": True,
                "storage": True,
                "subresources": {
                    "status": {},
                    "scale": {"specReplicasPath": ".spec.replicas", "statusReplicasPath": ".status.replicas"},
                },
                "schema": {
                    "openAPIV3Schema": {
                        "type": "object",
                        "properties": {
                            "spec": {
                                "type": "object",
                                "properties": {
                                    "replicas": {"type": "integer", "default": 1},
                                    "color": {"type": "string"},
                                },
                            },
                            "status": {"type": "object", "properties": {"replicas": {"type": "integer"}}},
                        },
                    }
                },
            }
        ],
    },
}


def test_custom_resource_writes_never_mutate_committed_versions() -> None:
    """Custom resources are defaulted and pruned in place by their schema, so their patches copy the target."""
    core, recorder = _core()
    crds = _info(core, "apiextensions.k8s.io", "v1", "customresourcedefinitions")
    core.create(crds, "", GADGET_CRD)
    widgets = _info(core, "example.dev", "v1", "gadgets")
    core.create(widgets, NS, {"apiVersion": "example.dev/v1", "kind": "Gadget", "metadata": {"name": "w"}})
    core.patch(widgets, NS, "w", MERGE_PATCH, {"spec": {"color": "red", "unknown": 1}})
    core.patch(widgets, NS, "w", JSON_PATCH, [{"op": "replace", "path": "/spec/replicas", "value": 3}])
    core.patch(widgets, NS, "w", MERGE_PATCH, {"status": {"replicas": 3}}, subresource="status")
    subresources.patch_scale(core, widgets, NS, "w", MERGE_PATCH, {"spec": {"replicas": 5}})
    stored = core.get(widgets, NS, "w")
    assert stored["spec"] == {"replicas": 5, "color": "red"}
    assert stored["status"] == {"replicas": 3}
    recorder.assert_unchanged()


def test_write_response_reuses_the_event_encoding() -> None:
    """The object a write stored is encoded once: ``encoded`` returns the event's bytes; other objects re-encode."""
    core, recorder = _core()
    pods = _info(core, "", "v1", "pods")
    stored = core.create(pods, NS, _pod("enc"))
    event = recorder.events[-1][0]
    assert core.store.encoded(stored) is event.object_json()
    assert json.loads(event.object_json()) == stored
    lookalike = copy.deepcopy(stored)
    assert core.store.encoded(lookalike) == event.object_json()
    assert core.store.encoded(lookalike) is not event.object_json()
    dry = core.create(pods, NS, _pod("dry"), dry_run=True)
    assert json.loads(core.store.encoded(dry)) == dry


def test_watch_lines_are_built_once_and_old_encodings_are_released() -> None:
    """Every watcher gets the same line object; beyond ENCODED_EVENTS an event re-encodes identically on replay."""
    store = Store()
    key = ("", "configmaps")
    events = []
    old = None
    for i in range(ENCODED_EVENTS + 2):
        obj = {"metadata": {"name": "cm", "namespace": NS}, "data": {"i": str(i)}}
        events.append(store.put(key, obj, old))
        old = obj
        events[-1].line()
    first, latest = events[0], events[-1]
    assert latest.line() is latest.line()
    assert latest.line("ADDED") is latest.line("ADDED")
    assert latest.line("ADDED") != latest.line()
    assert first._json is None
    assert json.loads(first.line()) == {"type": "ADDED", "object": first.obj}
    assert latest._json is not None

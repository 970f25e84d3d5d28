"""The chaos driver acts on what the observer shows, and what it shows moves on under it: a PodCliqueSet it saw
settled may be gone by the time it acts (its settled list is reused for a moment, to spare the CPU)."""

from __future__ import annotations

import random
from typing import Any, cast

from benchmarks.chaos.observer import Observer
from benchmarks.chaos.workload import Driver

from grove_api.labels import LABEL_PART_OF


class Recorder:
    """Takes the driver's requests and records their verbs."""

    def __init__(self) -> None:
        self.calls: list[str] = []

    def __getattr__(self, verb: str) -> Any:
        async def call(*args: Any, **kwargs: Any) -> dict[str, Any]:
            self.calls.append(verb)
            return {}

        return call


async def test_a_settled_podcliqueset_deleted_since_is_left_alone() -> None:
    """No KeyError (which stopped a whole chaos run) when the PodCliqueSet went between the two reads."""
    observer = Observer(client=cast(Any, None))
    observer.objects["pcs"]["ns/a"] = {"metadata": {"name": "a", "namespace": "ns"}, "spec": {"replicas": 1}}
    observer.objects["pods"]["ns/a-0"] = {
        "metadata": {"name": "a-0", "namespace": "ns", "labels": {LABEL_PART_OF: "a"}},
        "spec": {"nodeName": "n"},
    }
    client = Recorder()
    driver = Driver(cast(Any, client), observer, "ns", random.Random(0), live=0, rolling_updates=True)
    assert driver._settled_now() == ["a"]
    del observer.objects["pcs"]["ns/a"]
    for _ in range(50):
        driver._settled_cache = (driver._settled_cache[0], ["a"])  # the list read a moment before the deletion
        await driver.step()
    assert client.calls == []

"""Recreating a scaling-group replica deletes its member PodCliques and expects to see them go; a deletion that
fails (an API error) or finds the member gone will never be seen, so its expectation must be given back, or the
group's rolling update and gang termination wait for the expectations' timeout (minutes; found by the chaos suite)."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

import pytest

from grove_api import PodCliqueScalingGroup
from grove_api import labels as glabels
from grove_operator.config import OperatorConfig
from grove_operator.kinds import PODCLIQUES
from grove_operator.lifecycle.lane import member_deletions
from grove_operator.reconcile.context import SyncContext
from grove_operator.reconcile.failures import ComponentError
from grove_operator.scalinggroup.lifecycle import ScalingGroupReplicas
from grove_operator.wiring import build
from grove_runtime import errors
from grove_runtime.clock import FakeClock
from grove_runtime.keys import ObjectKey
from grove_runtime.resources import ResourceType

NS = "ns"
GROUP = "s-0-sg"
PCSG: dict[str, Any] = {
    "apiVersion": "grove.io/v1alpha1",
    "kind": "PodCliqueScalingGroup",
    "metadata": {"name": GROUP, "namespace": NS, "uid": "pcsg-uid", "generation": 1, "resourceVersion": "1"},
    "spec": {"replicas": 2, "minAvailable": 1, "cliqueNames": ["lead", "work", "side"]},
}


def member(clique: str, replica: int) -> dict[str, Any]:
    return {
        "apiVersion": "grove.io/v1alpha1",
        "kind": "PodClique",
        "metadata": {
            "name": f"{GROUP}-{replica}-{clique}",
            "namespace": NS,
            "uid": f"uid-{clique}-{replica}",
            "resourceVersion": "2",
            "labels": {glabels.LABEL_PCSG: GROUP, glabels.LABEL_PCSG_REPLICA_INDEX: str(replica)},
            "ownerReferences": [
                {"apiVersion": "grove.io/v1alpha1", "kind": "PodCliqueScalingGroup", "name": GROUP,
                 "uid": "pcsg-uid", "controller": True}
            ],
        },
        "spec": {"roleName": clique, "replicas": 1, "podSpec": {"containers": [{"name": "c", "image": "i"}]}},
    }  # fmt: skip


class Deletes:
    """Deletes: `work` is refused with a conflict, `side` is already gone, the rest succeed."""

    def __init__(self) -> None:
        self.deleted: list[str] = []

    async def delete(self, rt: ResourceType, name: str, namespace: str = "", **kwargs: Any) -> Mapping[str, Any]:
        if name.endswith("-work"):
            raise errors.Conflict(f'Operation cannot be fulfilled on podcliques.grove.io "{name}"')
        if name.endswith("-side"):
            raise errors.NotFound(f'podcliques.grove.io "{name}" not found')
        self.deleted.append(name)
        return {}


async def test_a_failed_or_needless_member_deletion_gives_its_expectation_back() -> None:
    client = Deletes()
    app = build(OperatorConfig(leader_elect=False, metrics_port=None), client, clock=FakeClock())  # type: ignore[arg-type]
    for replica in (0, 1):
        for clique in ("lead", "work", "side"):
            app.cache.informer(PODCLIQUES).store.upsert(member(clique, replica))
    key = ObjectKey(NS, GROUP)
    ctx = SyncContext.of(app.deps, key, PCSG, PodCliqueScalingGroup.model_validate(PCSG))

    with pytest.raises(ComponentError):
        await ScalingGroupReplicas()._recreate(ctx, [1])

    assert client.deleted == [f"{GROUP}-1-lead"]
    deletions = ObjectKey(NS, member_deletions(GROUP))
    assert app.expectations.pending(deletions) == (0, 1), "only the deletion that happened is still to be seen"

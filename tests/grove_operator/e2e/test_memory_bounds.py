"""No object may grow the operator's memory after it is gone: the parse memo drops a deleted object's entries."""

from __future__ import annotations

from grove_operator.kinds import PODCLIQUES, PODCLIQUESETS
from grove_runtime.client import KubeClient

from ._harness import OperatorThread, create_pcs, load_sample, names, wait_for


async def test_parse_memo_returns_to_baseline_after_pcs_are_deleted(
    operator: OperatorThread, kube: KubeClient, namespace: str
) -> None:
    """Three PodCliqueSets worked on and deleted leave no parse of theirs (nor of their children) behind."""
    assert operator.app is not None
    memo = operator.app.deps.parsed
    sample = load_sample("user-guide/01_core-concepts/single-node-aggregated.yaml")
    for index in range(3):
        await create_pcs(kube, namespace, {**sample, "metadata": {**sample["metadata"], "name": f"mem-{index}"}})

    async def parsed() -> int | None:
        held = operator.call(lambda: memo.held(namespace))
        return held if held >= 6 and len(await names(kube, PODCLIQUES, namespace)) == 3 else None

    await wait_for(parsed, "the PodCliqueSets and their PodCliques parsed")
    for index in range(3):
        await kube.delete(PODCLIQUESETS, f"mem-{index}", namespace)

    async def forgotten() -> bool | None:
        gone = not await names(kube, PODCLIQUESETS, namespace) and not await names(kube, PODCLIQUES, namespace)
        return True if gone and operator.call(lambda: memo.held(namespace)) == 0 else None

    await wait_for(forgotten, "no parse of a deleted object left")

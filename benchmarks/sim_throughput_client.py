"""The kubernetes-asyncio cross-check phase: kubelet-style status patches sent the way a real Python client does.

The raw-aiohttp phases show what the server can do; this one shows what an operator or scheduler built on
kubernetes-asyncio will see, model serialisation and ``V1Pod`` deserialisation included. A dict body on
``patch_namespaced_pod_status`` is sent as a strategic merge patch (apiserver-notes §3). The client gets its own
``Configuration`` (never the process-global default) and a connection pool as large as the concurrency.
"""

from __future__ import annotations

import time
from collections.abc import Sequence
from pathlib import Path

from kubernetes_asyncio import client, config
from kubernetes_asyncio.client.rest import ApiException

from benchmarks.sim_throughput_phases import PhaseResult, RequestError, run_phase

__all__ = ["kubernetes_asyncio_patch_phase"]


async def kubernetes_asyncio_patch_phase(
    kubeconfig: Path,
    namespace: str,
    names: Sequence[str],
    concurrency: int,
    known_rvs: set[int],
    *,
    progress: bool = False,
) -> PhaseResult:
    """Patch a condition into the status of every named pod via ``CoreV1Api``; records the new resourceVersions."""
    cfg = client.Configuration()
    await config.load_kube_config(config_file=str(kubeconfig), client_configuration=cfg, persist_config=False)
    cfg.connection_pool_maxsize = concurrency
    stamp = time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime())
    async with client.ApiClient(cfg) as api:
        core = client.CoreV1Api(api)

        async def patch(k: int) -> None:
            body = {
                "status": {
                    "conditions": [
                        {
                            "type": "grove.io/ClientProbe",
                            "status": "True",
                            "reason": "BenchmarkProbe",
                            "message": f"kubernetes-asyncio probe {k}",
                            "lastTransitionTime": stamp,
                        }
                    ]
                }
            }
            try:
                pod = await core.patch_namespaced_pod_status(names[k], namespace, body)
            except ApiException as exc:
                raise RequestError(f"patch {names[k]}: HTTP {exc.status}: {str(exc.body)[:300]}") from exc
            known_rvs.add(int(pod.metadata.resource_version))

        return await run_phase("k8s-asyncio patches", len(names), concurrency, patch, progress=progress)

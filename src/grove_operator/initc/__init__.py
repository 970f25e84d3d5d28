"""`grove-initc`: the init container that holds a pod until the PodCliques it starts after are ready.

The operator appends it to every pod of a PodClique with a non-empty `startsAfter` (grove-reference §3.5), with one
`--podcliques=<parent>:<minAvailable>` per parent, the pod's namespace and PodGang as downward-API files under
`/var/grove/pod-info`, and the PodCliqueSet's service-account token where in-cluster clients look for it. It
watches the pods of its own PodGang and exits 0 once every parent has at least its minimum of Ready pods.

It imports only `grove_api.labels` and `grove_runtime`'s light client, informer and logging: one process runs per
waiting pod, so it never loads the operator, the pydantic models or kubernetes-asyncio's generated client.
"""

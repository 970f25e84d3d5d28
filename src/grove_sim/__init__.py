"""grove-sim: a simulated Kubernetes cluster (API server, store, watch, garbage collection, kubelets).

It knows nothing about Grove. The sub-packages form layers, enforced by import-linter in ``make test``; each may
import only those below it:

- ``cli``, ``testing``: the entry points (``grove-sim up``, ``SimCluster`` for tests);
- ``server``: the assembly of one simulated cluster;
- ``http`` | ``controllers``: the API over HTTP, and the in-process controllers (kubelet, GC, namespaces, tokens),
  both clients of the registry and independent of each other;
- ``registry``: the write pipeline every change goes through (create/update/patch/delete, subresources, the
  served kinds);
- ``storage`` | ``validation`` | ``schema``: the versioned store and its watchers; kube-apiserver's validation of
  object metadata and the built-in kinds; structural schemas and CEL for custom resources;
- ``machinery`` | ``cluster``: pure libraries (Status errors, quantities, selectors, patches, JSONPath, Go value
  rendering) and the Node objects of a cluster shape.
"""

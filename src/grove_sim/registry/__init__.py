"""The write pipeline of the simulated apiserver: what kube-apiserver's generic registry and strategies do.

``Core`` implements create/update/patch/delete with optimistic concurrency, generations, finalizers and graceful
deletion; ``defaults`` and ``admission`` default, prepare and validate objects (built-in kinds and metadata through
``grove_sim.validation``, custom resources through their schema); ``patching`` turns a PATCH body into the new
document; ``templates`` lets the replicas of a workload share the pod spec admitted once; ``subresources`` holds
binding, scale and finalize; ``resources`` the served kinds.
"""

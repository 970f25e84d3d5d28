"""The write pipeline of the simulated apiserver: what kube-apiserver's generic registry and strategies do.

``Core`` implements create/update/patch/delete with optimistic concurrency, generations, finalizers and graceful
deletion; ``admission`` prepares and validates objects (custom resources through their schema); ``subresources``
holds binding, scale and finalize; ``resources`` the served kinds.
"""

"""kube-apiserver's validation of what clients write, with its HTTP answers and messages.

Pure functions from a decoded object (and the stored one, on update) to ``field.Error``-like causes: object
metadata for every kind, and for the built-in kinds grove-sim serves the rules a client can get wrong (pod specs and
their immutability, services, configmaps and secrets, RBAC, leases, priority classes, HPAs). Messages are upstream's
(``k8s.io/apimachinery/pkg/util/validation`` and ``pkg/apis/core/validation``), so a client sees from grove-sim
the same 422 it would get from a real cluster. ``builtin.validate`` is the entry point.
"""

"""The Kubernetes API over HTTP: routing, request parsing, discovery, Table output and the verb handlers.

The only layer that speaks HTTP (aiohttp). It turns requests into calls on ``grove_sim.registry`` and answers the
way kube-apiserver does, down to Status bodies, Tables, protobuf request bodies and chunked watch streams.
"""

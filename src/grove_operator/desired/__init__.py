"""Desired state of every object the operator derives from a PodCliqueSet, as pure functions.

Reconcilers compare these JSON-ready dicts with what the informer cache holds and create or patch the difference;
keeping the builders free of I/O lets tests check upstream naming, labels, env vars and gangs without a client.

Conventions shared by every module in this package:

* Grove kinds come in as `grove_api` models (callers parse cache dicts with `Model.model_validate`); core kinds
  (Pods, Services, ...) come in as plain dicts straight from the cache.
* Every builder returns a fresh plain dict (camelCase keys, no `None` values) ready to send to the API server.
* Builders never read a clock; anything time-dependent is a parameter.
"""

"""Pure status computations for PodClique, PodCliqueScalingGroup and PodCliqueSet (grove-reference §3.6).

Each function takes the parent as a `grove_api` model, its children (pods as plain cache dicts, Grove kinds as
models) and the current time, and returns the complete `status` as a JSON-ready dict. Conditions keep their
`lastTransitionTime` while their status is unchanged, so writing the result only when it differs is idempotent.
"""

"""`kubectl grove`: a kubectl plugin that shows Grove workloads as their users think of them.

kubectl runs `kubectl-grove` (a console script of this package) for `kubectl grove ...`. It speaks only to the
Kubernetes API, as kubectl does, and honours kubectl's `--kubeconfig`, `--context`, `-n`, `-A` and `-o json|yaml`.
Commands: `tree`, `placement`, `why`, `top` and `convert`; the JSON each prints with `-o json` is described by the
models in `grove_kubectl.output` (schema in `docs/kubectl-grove.schema.json`).
"""

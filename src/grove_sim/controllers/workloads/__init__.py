"""Workload controllers of the simulated control plane: Deployments, ReplicaSets, disruption budgets, the default
scheduler, horizontal pod autoscaling and the metrics API they read (kube-controller-manager's and
kube-scheduler's share of a cluster, free of any knowledge of Grove)."""

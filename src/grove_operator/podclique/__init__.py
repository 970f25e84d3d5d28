"""The PodClique controller: pods (creation, scale-in, recreation, gate lifting) and PodClique status."""

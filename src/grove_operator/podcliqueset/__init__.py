"""The PodCliqueSet controller: reconciler flow in `reconciler`, owned kinds in `components`."""

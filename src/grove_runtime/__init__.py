"""grove_runtime."""

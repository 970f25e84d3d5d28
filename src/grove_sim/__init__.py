"""grove_sim."""

"""grove_operator."""

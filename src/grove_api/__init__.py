"""grove_api."""

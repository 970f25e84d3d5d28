"""The PodGang controller: per-gang checks on behalf of the scheduler backend named by the gang."""

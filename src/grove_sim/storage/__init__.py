"""The versioned object store (etcd's role) and the per-request watchers that filter its events.

One global resourceVersion, O(1) lookups, bounded per-collection history for watch replay, and the ownership rule
(stored objects are immutable and share structure) that makes one JSON encoding per write enough.
"""

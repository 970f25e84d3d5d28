"""client-go's event spam filter: a token bucket per (source, involved object), so one object cannot flood Events.

Why: upstream controllers record Events through client-go, whose ``EventSourceObjectSpamFilter`` lets a source
write a burst of 25 Events about one object and then one every five minutes, dropping the rest before they reach
the API server. Without it, a 500-replica PodCliqueSet made grove-operator send a thousand "PodCliqueCreated" and
"PodGangCreated" Events about the one PodCliqueSet per scale-up, an eighth of all its requests. The key is
client-go's ``getSpamKey``: the involved object (kind, namespace, name, uid, apiVersion), not the reason.
"""

from __future__ import annotations

from collections import OrderedDict
from collections.abc import Hashable
from dataclasses import dataclass

from grove_runtime.clock import Clock

__all__ = ["DEFAULT_BURST", "DEFAULT_QPS", "SpamFilter"]

DEFAULT_BURST = 25
DEFAULT_QPS = 1.0 / 300.0
DEFAULT_CACHE_SIZE = 4096


@dataclass(slots=True)
class _Bucket:
    tokens: float
    last: float


class SpamFilter:
    """Token buckets (``burst`` tokens, refilled at ``qps``) per key, the least recently used evicted first."""

    def __init__(
        self,
        clock: Clock,
        *,
        burst: int = DEFAULT_BURST,
        qps: float = DEFAULT_QPS,
        cache_size: int = DEFAULT_CACHE_SIZE,
    ) -> None:
        self._clock = clock
        self.burst = burst
        self.qps = qps
        self._cache_size = cache_size
        self._buckets: OrderedDict[Hashable, _Bucket] = OrderedDict()

    def allow(self, key: Hashable) -> bool:
        """Take one token for ``key``; False (drop the Event) when its bucket is empty."""
        now = self._clock.monotonic()
        bucket = self._buckets.get(key)
        if bucket is None:
            bucket = self._buckets[key] = _Bucket(float(self.burst), now)
            while len(self._buckets) > self._cache_size:
                self._buckets.popitem(last=False)
        else:
            self._buckets.move_to_end(key)
            bucket.tokens = min(float(self.burst), bucket.tokens + (now - bucket.last) * self.qps)
            bucket.last = now
        if bucket.tokens < 1.0:
            return False
        bucket.tokens -= 1.0
        return True

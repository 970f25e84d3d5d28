"""What faults to inject: the JSON document ``grove-sim up --faults`` and ``PUT /sim/faults`` take.

::

    {"seed": 7,
     "errors": [{"code": 503, "rate": 0.05, "verbs": ["create"], "resources": ["pods", "pods/binding"]},
                {"code": 429, "rate": 0.02, "retryAfterSeconds": 1}],
     "latency": {"seconds": 0.05, "rate": 0.5, "verbs": ["list"]},
     "dropWatches": {"rate": 0.5, "afterSeconds": 2.0},
     "expireRewatches": {"rate": 0.2},
     "paused": false,
     "exemptUsers": ["system:serviceaccount:chaos:observer"]}

Error codes are those a client must survive: 500 InternalError, 503 ServiceUnavailable, 429 TooManyRequests (with
``Retry-After``) and 409 Conflict. ``verbs`` and ``resources`` (``pods``, ``pods/binding``, ``deployments.apps``,
``*``) narrow a rule to resource requests of those; without them a rule applies to every resource request.
Errors, latency and watch faults hit resource requests only; a pause holds every request but the ``/sim/`` and
``/metrics`` paths. ``exemptUsers`` names users (as authenticated, e.g. a service account) whose requests no fault
touches, not even a pause: an observer checking a cluster under faults reads it through such an account. A bad
document is a ``ValueError`` naming the field, which the endpoint answers as a 400.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any, Final

__all__ = ["ERROR_CODES", "ErrorRule", "FaultConfig", "LatencyRule", "Scope", "parse_faults"]

ERROR_CODES: Final = (409, 429, 500, 503)


@dataclass(frozen=True, slots=True)
class Scope:
    """Which resource requests a rule applies to (empty sets: all)."""

    verbs: frozenset[str] = frozenset()
    resources: frozenset[str] = frozenset()

    def matches(self, verb: str, group: str, resource: str) -> bool:
        """Whether a request (``resource`` possibly ``plural/subresource``) is in scope."""
        if self.verbs and verb not in self.verbs and "*" not in self.verbs:
            return False
        if not self.resources or "*" in self.resources:
            return True
        qualified = f"{resource.split('/', 1)[0]}.{group}" if group else resource
        if group and "/" in resource:
            qualified = f"{qualified}/{resource.split('/', 1)[1]}"
        return resource in self.resources or qualified in self.resources

    def to_dict(self) -> dict[str, Any]:
        out: dict[str, Any] = {}
        if self.verbs:
            out["verbs"] = sorted(self.verbs)
        if self.resources:
            out["resources"] = sorted(self.resources)
        return out


@dataclass(frozen=True, slots=True)
class ErrorRule:
    """Answer a share ``rate`` of the requests in ``scope`` with ``code`` instead of serving them."""

    code: int
    rate: float
    scope: Scope = Scope()
    retry_after: int = 1


@dataclass(frozen=True, slots=True)
class LatencyRule:
    """Delay a share ``rate`` of the requests in ``scope`` by ``seconds`` before serving them."""

    seconds: float
    rate: float = 1.0
    scope: Scope = Scope()


@dataclass(frozen=True, slots=True)
class FaultConfig:
    """Every fault in force; the default injects nothing."""

    seed: int = 0
    errors: tuple[ErrorRule, ...] = ()
    latency: LatencyRule | None = None
    drop_watch_rate: float = 0.0
    drop_watch_after: float = 1.0
    expire_rewatch_rate: float = 0.0
    paused: bool = False
    exempt_users: frozenset[str] = frozenset()

    @property
    def active(self) -> bool:
        """Whether any request can be affected (the request path skips everything otherwise)."""
        return bool(self.errors or self.latency or self.drop_watch_rate or self.expire_rewatch_rate or self.paused)

    def to_dict(self) -> dict[str, Any]:
        """The JSON document this configuration was parsed from (normalised)."""
        out: dict[str, Any] = {"seed": self.seed, "paused": self.paused}
        out["errors"] = [
            {"code": r.code, "rate": r.rate, **({"retryAfterSeconds": r.retry_after} if r.code == 429 else {}),
             **r.scope.to_dict()}
            for r in self.errors
        ]  # fmt: skip
        if self.latency is not None:
            out["latency"] = {
                "seconds": self.latency.seconds,
                "rate": self.latency.rate,
                **self.latency.scope.to_dict(),
            }
        if self.drop_watch_rate:
            out["dropWatches"] = {"rate": self.drop_watch_rate, "afterSeconds": self.drop_watch_after}
        if self.expire_rewatch_rate:
            out["expireRewatches"] = {"rate": self.expire_rewatch_rate}
        if self.exempt_users:
            out["exemptUsers"] = sorted(self.exempt_users)
        return out


def _number(doc: dict[str, Any], key: str, at: str, default: float, *, upper: float | None = None) -> float:
    value = doc.get(key, default)
    if isinstance(value, bool) or not isinstance(value, int | float) or value < 0:
        raise ValueError(f"{at}.{key}: must be a non-negative number")
    if upper is not None and value > upper:
        raise ValueError(f"{at}.{key}: must be at most {upper}")
    return float(value)


def _scope(doc: dict[str, Any], at: str) -> Scope:
    sets = []
    for key in ("verbs", "resources"):
        values = doc.get(key, [])
        if not isinstance(values, list) or not all(isinstance(v, str) and v for v in values):
            raise ValueError(f"{at}.{key}: must be a list of non-empty strings")
        sets.append(frozenset(values))
    return Scope(sets[0], sets[1])


def _section(doc: dict[str, Any], key: str) -> dict[str, Any] | None:
    value = doc.get(key)
    if value is None:
        return None
    if not isinstance(value, dict):
        raise ValueError(f"{key}: must be an object")
    return value


def parse_faults(doc: Any) -> FaultConfig:
    """The configuration a JSON document describes (see the module doc); ``ValueError`` names a bad field."""
    if not isinstance(doc, dict):
        raise ValueError("the fault configuration must be a JSON object")
    known = {"seed", "errors", "latency", "dropWatches", "expireRewatches", "paused", "exemptUsers"}
    unknown = sorted(set(doc) - known)
    if unknown:
        raise ValueError(f"unknown field {unknown[0]!r} (expected {', '.join(sorted(known))})")
    seed = doc.get("seed", 0)
    if isinstance(seed, bool) or not isinstance(seed, int):
        raise ValueError("seed: must be an integer")
    paused = doc.get("paused", False)
    if not isinstance(paused, bool):
        raise ValueError("paused: must be a boolean")
    exempt = doc.get("exemptUsers", [])
    if not isinstance(exempt, list) or not all(isinstance(user, str) and user for user in exempt):
        raise ValueError("exemptUsers: must be a list of non-empty strings")
    raw_errors = doc.get("errors", [])
    if not isinstance(raw_errors, list):
        raise ValueError("errors: must be a list")
    rules = []
    for index, rule in enumerate(raw_errors):
        at = f"errors[{index}]"
        if not isinstance(rule, dict):
            raise ValueError(f"{at}: must be an object")
        code = rule.get("code")
        if code not in ERROR_CODES:
            raise ValueError(f"{at}.code: must be one of {', '.join(map(str, ERROR_CODES))}")
        rate = _number(rule, "rate", at, 0.0, upper=1.0)
        retry_after = int(_number(rule, "retryAfterSeconds", at, 1))
        rules.append(ErrorRule(int(code), rate, _scope(rule, at), retry_after))
    latency = None
    if (section := _section(doc, "latency")) is not None:
        latency = LatencyRule(
            _number(section, "seconds", "latency", 0.0),
            _number(section, "rate", "latency", 1.0, upper=1.0),
            _scope(section, "latency"),
        )
    drop = _section(doc, "dropWatches") or {}
    expire = _section(doc, "expireRewatches") or {}
    return FaultConfig(
        seed=seed,
        errors=tuple(rules),
        latency=latency if latency is not None and latency.seconds > 0 else None,
        drop_watch_rate=_number(drop, "rate", "dropWatches", 0.0, upper=1.0),
        drop_watch_after=_number(drop, "afterSeconds", "dropWatches", 1.0),
        expire_rewatch_rate=_number(expire, "rate", "expireRewatches", 0.0, upper=1.0),
        paused=paused,
        exempt_users=frozenset(exempt),
    )

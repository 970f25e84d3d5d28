"""Leader election on a ``coordination.k8s.io/v1`` Lease, so only one replica runs the controllers.

Protocol (client-go's ``LeaderElector`` with a LeaseLock):

* **acquire**: create the Lease if absent; otherwise take it over when it is free (empty holder) or expired.
  Expiry is judged on *this* process's monotonic clock from the moment it last saw the lease record change
  (holder or renewTime), never by comparing wall clocks across machines. Writes are PUTs carrying the observed
  resourceVersion: a 409 means another candidate won the race.
* **renew** every ``retry_period`` while leading; if no renewal has succeeded for ``renew_deadline``, leadership is
  lost (:meth:`LeaderElector.hold` returns and the manager exits the process).
* **fence**: :meth:`LeaderElector.leading` is true only until ``renew_deadline`` after the last successful renewal
  (on the monotonic clock, measured from when that renewal was sent), which is ``lease_duration - renew_deadline``
  before any other candidate may take the lease over. Every write that acts on the cluster (binds, rollback
  deletes, status) checks it right before it is sent, so a process frozen past its lease (SIGSTOP, a long pause)
  does nothing on waking, even before its renewal loop has noticed the loss; and ``hold`` gives up without
  renewing once the deadline has passed.
* **release** on clean shutdown: empty ``holderIdentity`` so a successor need not wait for expiry.

While the Lease cannot be written at all (its namespace does not exist yet, the API fails), ``acquire`` retries with
a backoff that doubles up to ``lease_duration``; each change of state (waiting for the namespace, for the holder,
for the API; leading) is logged once, not every attempt.
"""

from __future__ import annotations

import datetime as dt
import os
import socket
from dataclasses import dataclass
from typing import Any

import structlog

from grove_runtime import errors
from grove_runtime.client import Client
from grove_runtime.clock import Clock, LoopClock
from grove_runtime.kubeconfig import DEFAULT_LEASE_NAMESPACE
from grove_runtime.resources import LEASES

Obj = dict[str, Any]
log = structlog.get_logger("grove_runtime.leaderelection")


class LeadershipLost(Exception):
    """Raised when the lease could not be renewed in time (by the manager), or by a fenced write after that."""


def default_identity() -> str:
    """A candidate's identity unless configured: ``$HOSTNAME`` (a pod's name, as the kubelet sets it; the
    machine's host name otherwise, as controller-runtime does) and the process id, so a Lease names the pod that
    holds it and stays unique among candidates on one host."""
    return f"{os.environ.get('HOSTNAME') or socket.gethostname()}-{os.getpid()}"


@dataclass(frozen=True, slots=True)
class LeaseSettings:
    """Which Lease a program elects its leader on, and how (client-go's defaults: 15 s, 10 s, 2 s).

    Why one type: both programs take the same flags (`grove_runtime.cmdline.add_leader_election_flags`) and build
    their elector the same way (:meth:`elector`).
    """

    name: str
    namespace: str = DEFAULT_LEASE_NAMESPACE
    identity: str | None = None
    lease_duration: float = 15.0
    renew_deadline: float = 10.0
    retry_period: float = 2.0

    def elector(self, client: Client, clock: Clock | None = None) -> LeaderElector:
        """An elector for this Lease; the identity defaults to :func:`default_identity`."""
        return LeaderElector(
            client,
            namespace=self.namespace,
            name=self.name,
            identity=self.identity or default_identity(),
            lease_duration=self.lease_duration,
            renew_deadline=self.renew_deadline,
            retry_period=self.retry_period,
            clock=clock,
        )


def unfenced() -> bool:
    """The fence of a process without leader election: it may always act."""
    return True


def _micro_time(t: dt.datetime) -> str:
    return t.astimezone(dt.UTC).strftime("%Y-%m-%dT%H:%M:%S.%fZ")


class LeaderElector:
    """Acquire, hold and release one Lease as ``identity``."""

    def __init__(
        self,
        client: Client,
        *,
        namespace: str,
        name: str,
        identity: str,
        lease_duration: float = 15.0,
        renew_deadline: float = 10.0,
        retry_period: float = 2.0,
        clock: Clock | None = None,
    ) -> None:
        if not lease_duration > renew_deadline > retry_period > 0:
            raise ValueError("need lease_duration > renew_deadline > retry_period > 0")
        self.client = client
        self.namespace = namespace
        self.name = name
        self.identity = identity
        self.lease_duration = lease_duration
        self.renew_deadline = renew_deadline
        self.retry_period = retry_period
        self._clock = clock or LoopClock()
        self._observed_record: tuple[str, str] | None = None
        self._observed_at = 0.0
        self._last_renew = 0.0
        self._state = ""
        self._troubled = False
        self.is_leader = False

    def leading(self) -> bool:
        """Whether this process may act as leader now: it holds the lease and its renew deadline has not passed."""
        return self.is_leader and self._clock.monotonic() < self._last_renew + self.renew_deadline

    def _note(self, state: str, **fields: Any) -> None:
        """Log a change of election state once (attempts that end the same way stay quiet)."""
        if state == self._state:
            return
        self._state = state
        log.info(state, lease=f"{self.namespace}/{self.name}", identity=self.identity, **fields)

    def _spec(self, lease: Obj | None, *, acquire: bool) -> Obj:
        now = _micro_time(self._clock.now())
        old = (lease or {}).get("spec") or {}
        transitions = int(old.get("leaseTransitions") or 0)
        spec: Obj = {
            "holderIdentity": self.identity,
            "leaseDurationSeconds": max(1, round(self.lease_duration)),
            "acquireTime": old.get("acquireTime") or now,
            "renewTime": now,
            "leaseTransitions": transitions,
        }
        if acquire:
            spec["acquireTime"] = now
            if old.get("holderIdentity") and old.get("holderIdentity") != self.identity:
                spec["leaseTransitions"] = transitions + 1
        return spec

    async def try_acquire_or_renew(self) -> bool:
        """One attempt; True if this process holds the lease afterwards."""
        now = self._clock.monotonic()
        try:
            lease = await self.client.get(LEASES, self.name, self.namespace)
        except errors.NotFound:
            body = {
                "apiVersion": "coordination.k8s.io/v1",
                "kind": "Lease",
                "metadata": {"name": self.name, "namespace": self.namespace},
                "spec": self._spec(None, acquire=True),
            }
            try:
                await self.client.create(LEASES, body, self.namespace)
            except errors.Conflict:
                return False
            except errors.NotFound as exc:
                return self._trouble("waiting for the lease namespace to exist", error=str(exc))
            except errors.ApiError as exc:
                return self._trouble("lease create failed", error=repr(exc))
            return self._won(now)
        except errors.ApiError as exc:
            return self._trouble("lease read failed", error=repr(exc))
        self._troubled = False
        spec = lease.get("spec") or {}
        holder = str(spec.get("holderIdentity") or "")
        record = (holder, str(spec.get("renewTime") or ""))
        if record != self._observed_record:
            self._observed_record = record
            self._observed_at = now
        duration = float(spec.get("leaseDurationSeconds") or self.lease_duration)
        held_by_other = bool(holder) and holder != self.identity
        if held_by_other and self._observed_at + duration > now:
            self.is_leader = False
            self._note("waiting for the lease holder", holder=holder)
            return False
        updated = dict(lease)
        updated["spec"] = self._spec(lease, acquire=holder != self.identity)
        try:
            await self.client.update(LEASES, updated)
        except errors.Conflict:
            return False
        except errors.ApiError as exc:
            return self._trouble("lease write failed", error=repr(exc))
        return self._won(now)

    def _trouble(self, state: str, **fields: Any) -> bool:
        """An attempt the API failed (not a lost race): noted once, and `acquire` backs off."""
        self._troubled = True
        self._note(state, **fields)
        return False

    def _won(self, now: float) -> bool:
        self._troubled = False
        if not self.is_leader:
            self._state = ""
            self._note("became leader")
        self._state = "leading"
        self.is_leader = True
        self._last_renew = now
        return True

    async def acquire(self) -> None:
        """Block until this process holds the lease; while the API fails, back off up to ``lease_duration``."""
        delay = self.retry_period
        while not await self.try_acquire_or_renew():
            delay = min(delay * 2, self.lease_duration) if self._troubled else self.retry_period
            await self._clock.sleep(delay)

    async def hold(self) -> None:
        """Renew every ``retry_period``; return when no renewal succeeded for ``renew_deadline`` (leadership lost).

        A process that wakes past its deadline (it was frozen) gives up without trying: the lease may be another's.
        """
        while True:
            await self._clock.sleep(self.retry_period)
            if self.leading() and await self.try_acquire_or_renew():
                continue
            if not self.leading():
                self.is_leader = False
                self._state = "leadership lost"
                log.error("leadership lost", lease=f"{self.namespace}/{self.name}", identity=self.identity)
                return

    async def release(self) -> bool:
        """Give the lease up if we hold it (empty holder); True if released."""
        if not self.is_leader:
            return False
        self.is_leader = False
        try:
            lease = await self.client.get(LEASES, self.name, self.namespace)
            spec = dict(lease.get("spec") or {})
            if spec.get("holderIdentity") != self.identity:
                return False
            spec["holderIdentity"] = ""
            spec["leaseDurationSeconds"] = 1
            spec["renewTime"] = _micro_time(self._clock.now())
            await self.client.update(LEASES, {**lease, "spec": spec})
        except errors.ApiError as exc:
            log.warning("lease release failed", error=repr(exc))
            return False
        log.info("released leadership", lease=f"{self.namespace}/{self.name}", identity=self.identity)
        return True

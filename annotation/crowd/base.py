"""The crowd-provider interface: vendor adapters that services call (local, simulated, MTurk).

An adapter makes the provider-side call and nothing else: it never writes a row and never
imports a service. Services (`annotation/services/`) record every state change and event.
"""

from __future__ import annotations

from abc import ABC, abstractmethod
from decimal import Decimal

from annotation.models import Assignment, Batch, Hit, Worker


class CrowdProvider(ABC):
    """Where a batch's HITs are offered to workers and how their work is reviewed and paid.

    Work always reaches the database through `assignment_submit`, whatever the provider.
    Every method only makes the provider-side call; services record the state change and its
    event. A `remote` provider keeps its own copy of the HITs: publishing and synchronising
    them are services of their own (`annotation/services/mturk.py`).
    """

    name: str
    remote: bool = False

    @abstractmethod
    def expire(self, *, batch: Batch) -> None:
        """Stop offering the batch's HITs now."""

    @abstractmethod
    def extend(self, *, batch: Batch, seconds: int) -> None:
        """Keep the batch's HITs on offer for `seconds` from now."""

    @abstractmethod
    def add_assignments(self, *, hit: Hit, count: int, token: str) -> None:
        """Let `count` more workers do `hit`; `token` makes a retry harmless."""

    @abstractmethod
    def approve(self, *, assignment: Assignment) -> None:
        """Accept the work (and pay it, where the provider pays)."""

    @abstractmethod
    def reject(self, *, assignment: Assignment, feedback: str) -> bool:
        """Reject the work, with feedback for the worker; False when the HIT cannot take
        another worker in its place (the rejection stands either way)."""

    def approve_rejected(self, *, assignment: Assignment, feedback: str) -> None:
        """Reverse a rejection: the work is accepted (and paid, where the provider pays)."""
        return None

    def redo(self, *, assignment: Assignment) -> bool:
        """Let one more worker take `assignment`'s HIT because its work stopped counting;
        False when the HIT cannot take another (its items must go to a new HIT)."""
        return True  # server-side HITs reopen by themselves: excluded work holds no slot

    @abstractmethod
    def bonus(
        self,
        *,
        assignment: Assignment,
        amount: Decimal,
        reason: str,
        token: str,
        look_first: bool = False,
    ) -> None:
        """Pay a bonus once per `token`; `look_first`: an earlier attempt may have paid it."""

    @abstractmethod
    def block(self, *, worker: Worker, reason: str) -> None: ...

    @abstractmethod
    def unblock(self, *, worker: Worker, reason: str) -> None: ...

    def unmark(self, *, qualification_id: str, worker: Worker, reason: str) -> None:
        """Take a provider-side mark (a pool, a project block) away from a worker."""
        return None

    @abstractmethod
    def notify(self, *, workers: list[Worker], subject: str, message: str) -> None: ...

    def grant_pool(self, *, qualification_id: str, worker: Worker) -> None:
        """Mark a worker as a member of a stage's pool at the provider (if it has such marks)."""
        return None

    def worker_url(self, *, batch: Batch, base: str | None = None) -> str | None:
        """A link workers open to take part, if the provider has one (`base`: the site's
        address, default CROWDVL_PUBLIC_URL)."""
        return None


class ServerSideProvider(CrowdProvider):
    """Workers act on this server: HITs are rows here, so no call leaves the server."""

    def expire(self, *, batch: Batch) -> None:
        return None

    def extend(self, *, batch: Batch, seconds: int) -> None:
        return None

    def add_assignments(self, *, hit: Hit, count: int, token: str) -> None:
        return None

    def approve(self, *, assignment: Assignment) -> None:
        return None

    def reject(self, *, assignment: Assignment, feedback: str) -> bool:
        return True  # the HIT reopens here by itself: rejected work holds no slot

    def bonus(
        self,
        *,
        assignment: Assignment,
        amount: Decimal,
        reason: str,
        token: str,
        look_first: bool = False,
    ) -> None:
        return None

    def block(self, *, worker: Worker, reason: str) -> None:
        return None

    def unblock(self, *, worker: Worker, reason: str) -> None:
        return None

    def notify(self, *, workers: list[Worker], subject: str, message: str) -> None:
        return None

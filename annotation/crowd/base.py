"""The crowd-provider interface: local, simulated and (later) MTurk implement it."""

from __future__ import annotations

from abc import ABC, abstractmethod

from annotation.models import Assignment, Batch


class CrowdProvider(ABC):
    """Where a batch's HITs are offered to workers and how their work is reviewed.

    Work always reaches the database through `assignment_submit`, whatever the provider.
    """

    name: str

    @abstractmethod
    def publish(self, *, batch: Batch) -> None:
        """Offer the batch's open HITs to workers."""

    @abstractmethod
    def expire(self, *, batch: Batch) -> None:
        """Stop offering the batch's HITs."""

    def sync(self, *, batch: Batch) -> int:
        """Bring remote results into the database; returns how many assignments changed."""
        return 0

    @abstractmethod
    def approve(self, *, assignment: Assignment) -> None:
        """Tell the provider the work is accepted (and paid, where the provider pays)."""

    @abstractmethod
    def reject(self, *, assignment: Assignment, feedback: str) -> None:
        """Tell the provider the work is rejected, with feedback for the worker."""

    def worker_url(self, *, batch: Batch) -> str | None:
        """A link workers open to take part, if the provider has one."""
        return None


class ServerSideProvider(CrowdProvider):
    """A provider whose workers act on this server: HITs are open rows and need no remote call."""

    def publish(self, *, batch: Batch) -> None:
        return None

    def expire(self, *, batch: Batch) -> None:
        return None

    def approve(self, *, assignment: Assignment) -> None:
        return None

    def reject(self, *, assignment: Assignment, feedback: str) -> None:
        return None

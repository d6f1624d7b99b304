"""How a test plays a server-side provider's workers: through the services, nothing leaves the
server. Each provider's package here has a `player.py` whose `driver(http_client)` returns the
player the contract tests use (tests/annotation/providers/test_base_contract.py)."""

from __future__ import annotations

from typing import Any

from annotation.models import Assignment, Batch
from annotation.services.runs.batches import batch_publish
from annotation.services.work.claim import assignment_claim_next
from annotation.services.work.submit import assignment_submit
from annotation.services.work.worker_identity import worker_get_or_create


class ServerDriver:
    """local and simulated: workers act through the services; nothing leaves the server."""

    def __init__(self, name: str) -> None:
        self.name = name

    def expect(self, operation: str, response: dict | None = None, params: Any = None) -> None:
        return None

    def publish(self, batch: Batch) -> Batch:
        return batch_publish(batch=batch)

    def take(self, batch: Batch, worker_name: str) -> Assignment | None:
        worker = worker_get_or_create(provider=self.name, external_id=worker_name)
        return assignment_claim_next(batch=batch, worker=worker)

    def submit(self, assignment: Assignment, answers: dict[str, str]) -> None:
        assignment_submit(assignment_id=assignment.pk, worker=assignment.worker, answers=answers)

    def done(self) -> None:
        return None

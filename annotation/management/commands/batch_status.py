from typing import Any

from django.core.management.base import CommandParser
from django.shortcuts import get_object_or_404

from annotation.management.arguments import record_id, whole
from annotation.management.base import ServiceCommand
from annotation.models import Batch
from annotation.selectors.runs.batch_live import batch_live_status
from annotation.selectors.runs.batch_reach import batch_reach


class Command(ServiceCommand):
    help = (
        "A batch's assignments now: counts by state (working, timed_out, returned, submitted, "
        "approved, rejected), then the newest claims with the worker's pseudonym, claim time "
        "and elapsed seconds; then who can still fill its open slots under the claim rules "
        "and how many more people it needs."
    )

    def add_arguments(self, parser: CommandParser) -> None:
        parser.add_argument("batch", type=record_id)
        parser.add_argument(
            "--rows", type=whole(0, 10_000), default=20, help="claims to list (default 20)"
        )

    def handle(self, *args: Any, **opts: Any) -> None:
        batch = get_object_or_404(Batch, pk=opts["batch"])
        live = batch_live_status(batch=batch)
        self.stdout.write(f"batch {live.batch}: {live.status}")
        self.stdout.write("  ".join(f"{state} {n}" for state, n in live.counts.items()))
        for row in live.rows[: opts["rows"]]:
            self.stdout.write(
                f"{row.assignment}\tHIT {row.hit}\t{row.worker}\t{row.state}\t"
                f"{row.accepted_at:%Y-%m-%d %H:%M:%S}\t{row.elapsed_seconds} s"
            )
        if batch.status in ("draft", "published", "paused"):
            for line in batch_reach(batch=batch).sentences():
                self.stdout.write(f"- {line}")

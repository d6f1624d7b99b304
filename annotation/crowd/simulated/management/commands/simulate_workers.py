from typing import Any

from django.core.management.base import CommandParser

from annotation.crowd.simulated.crowd import simulate_crowd
from annotation.management.arguments import number, record_id, seed, whole
from annotation.management.base import ServiceCommand
from pipeline.simulate import POPULATIONS, WorkerProfile, population_named


class Command(ServiceCommand):
    help = "Let simulated workers complete a batch published with the 'simulated' provider."

    def add_arguments(self, parser: CommandParser) -> None:
        parser.add_argument("batch", type=record_id)
        parser.add_argument("--workers", type=whole(1, 10_000), default=10)
        parser.add_argument("--accuracy", type=number(0.0, 1.0), default=0.9)
        parser.add_argument(
            "--population",
            help="a worker population instead of one accuracy: "
            + ", ".join(POPULATIONS)
            + " or uniform-<accuracy>",
        )
        parser.add_argument(
            "--seconds", type=number(0.1, 86_400.0), default=20.0, help="mean seconds per answer"
        )
        parser.add_argument("--seed", type=seed, default=0)

    def handle(self, *args: Any, **opts: Any) -> None:
        batch = self.batch_of(opts["batch"], provider="simulated")
        report = simulate_crowd(
            batch=batch,
            workers=opts["workers"],
            seed=opts["seed"],
            profile=WorkerProfile(accuracy=opts["accuracy"], seconds_per_answer=opts["seconds"]),
            population=population_named(opts["population"]) if opts["population"] else None,
        )
        self.stdout.write(
            f"{report.workers} workers submitted {report.assignments} assignments ({report.answers} answers)"
        )

from typing import Any

from django.core.management.base import CommandParser

from annotation.crowd.prolific.adjustments import prolific_pay_adjust
from annotation.crowd.prolific.pay import declared_pay, median_pay
from annotation.crowd.prolific.provider import prolific_provider
from annotation.management.arguments import record_id
from annotation.management.base import ServiceCommand


class Command(ServiceCommand):
    help = (
        "A Prolific batch's pay as Prolific computes it: the declared time and rate, and the rate "
        "at the median completion time; --adjust pays the adjustment the median asks for "
        "(safe to repeat: what was paid is never paid again)."
    )

    def add_arguments(self, parser: CommandParser) -> None:
        parser.add_argument("batch", type=record_id)
        parser.add_argument("--adjust", action="store_true", help="pay the adjustment")

    def handle(self, *args: Any, **opts: Any) -> None:
        batch = self.batch_of(opts["batch"], provider="prolific")
        client = prolific_provider().client
        self.stdout.write(f"batch {batch.pk}: {declared_pay(batch).describe()}")
        if opts["adjust"]:
            review = prolific_pay_adjust(batch=batch, client=client)
        else:
            review = median_pay(batch=batch, client=client)
        self.stdout.write(f"batch {batch.pk}: {review.describe()}")

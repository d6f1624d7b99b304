from typing import Any

from django.core.management.base import CommandParser

from annotation.crowd.prolific.provider import prolific_provider
from annotation.crowd.prolific.test_study import (
    prolific_test_participant_create,
    prolific_test_study,
)
from annotation.management.arguments import record_id
from annotation.management.base import ServiceCommand


class Command(ServiceCommand):
    help = (
        "Try a draft Prolific batch without spending: make Prolific's test study of it (shown "
        "to the workspace's test participants only); --participant EMAIL first creates a test "
        "participant."
    )

    def add_arguments(self, parser: CommandParser) -> None:
        parser.add_argument("batch", type=record_id)
        parser.add_argument("--participant", metavar="EMAIL", help="create a test participant")

    def handle(self, *args: Any, **opts: Any) -> None:
        batch = self.batch_of(opts["batch"], provider="prolific")
        client = prolific_provider().client
        if opts["participant"]:
            pid = prolific_test_participant_create(email=opts["participant"], client=client)
            self.stdout.write(f"test participant {pid}: sign up at Prolific with that email")
        test = prolific_test_study(batch=batch, client=client)
        self.stdout.write(
            f"batch {batch.pk}: test study {test.study_id} {test.url} (your test participants "
            "follow it; nothing they answer is stored)"
        )

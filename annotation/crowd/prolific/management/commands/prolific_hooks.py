from typing import Any

from django.core.management.base import CommandError, CommandParser

from annotation.crowd.prolific.hook_setup import prolific_hooks_setup
from annotation.crowd.prolific.provider import prolific_provider
from annotation.management.base import ServiceCommand


class Command(ServiceCommand):
    help = (
        "Subscribe this server to Prolific's webhooks (submission.status.change, "
        "study.has_high_return_rate) at <CROWDVL_PUBLIC_URL>/prolific/hooks/: makes the "
        "workspace's hook secret when none is configured (or with --new-secret) and prints it "
        "once for CROWDVL_PROLIFIC_HOOK_SECRET; skips events already subscribed; confirms each "
        "new subscription. Exits 1 when something is left to do."
    )

    def add_arguments(self, parser: CommandParser) -> None:
        parser.add_argument(
            "--new-secret",
            action="store_true",
            help="make a new workspace secret (it replaces the one Prolific signs with now)",
        )
        parser.add_argument(
            "--resubscribe",
            action="store_true",
            help="delete this server's subscriptions of these events first, then subscribe",
        )

    def handle(self, *args: Any, **opts: Any) -> None:
        report = prolific_hooks_setup(
            client=prolific_provider().client,
            new_secret=opts["new_secret"],
            resubscribe=opts["resubscribe"],
        )
        for line in report.lines():
            self.stdout.write(line)
        if not report.complete:
            raise CommandError("the webhooks are not fully set up (see above)")

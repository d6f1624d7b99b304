from typing import Any

from django.core.management.base import CommandError

from annotation.crowd.prolific.provider import prolific_provider
from annotation.crowd.prolific.reconcile import prolific_reconcile
from annotation.management.base import ServiceCommand


class Command(ServiceCommand):
    help = (
        "Compare local records with Prolific's (read only): per study, submissions whose "
        "status differs, submissions completed at Prolific with no work here, work Prolific "
        "does not list, and rewards and bonuses spent. Exits 1 when anything differs."
    )

    def handle(self, *args: Any, **opts: Any) -> None:
        report = prolific_reconcile(client=prolific_provider().client)
        for row in report.rows:
            state = "matches" if row.matches else "DIFFERS"
            self.stdout.write(
                f"batch {row.batch.pk} study {row.study}: {row.submissions} submissions, "
                f"rewards {row.rewards_here} here / {row.rewards_there} there, bonuses "
                f"{row.bonuses_here} / {row.bonuses_there}: {state}"
            )
            for d in row.disagree:
                self.stdout.write(f"  {d['submission']}: {d['here']} here, {d['there']} there")
            for sid in row.no_work_here:
                self.stdout.write(f"  {sid}: completed at Prolific with no work here")
            for pk in row.not_listed:
                self.stdout.write(f"  assignment {pk}: Prolific does not list its submission")
        for batch in report.gone:
            self.stdout.write(f"batch {batch.pk}: Prolific no longer knows its study")
        if report.mismatches or report.gone:
            raise CommandError("local records and Prolific differ (see above)")

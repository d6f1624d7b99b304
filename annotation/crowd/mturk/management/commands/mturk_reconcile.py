from typing import Any

from django.core.management.base import CommandError, CommandParser

from annotation.crowd.mturk.reconcile import mturk_reconcile
from annotation.management.base import ServiceCommand


class Command(ServiceCommand):
    help = (
        "Compare money and HITs with MTurk (read only): per batch, committed and spent "
        "(rewards, fees, bonuses) from local records and as recomputed from MTurk; HITs MTurk "
        "holds that are not recorded here; recorded HITs MTurk no longer lists or knows. Exits 1 "
        "when anything differs."
    )

    def add_arguments(self, parser: CommandParser) -> None:
        parser.add_argument("--environment", choices=["sandbox", "production"])

    def handle(self, *args: Any, **opts: Any) -> None:
        report = mturk_reconcile(environment=opts["environment"])
        out = self.stdout.write
        out(f"MTurk {report.environment}: {len(report.batches)} batches")
        head = (
            f"{'batch':>6} {'committed':>10} {'approved':>14} {'spent here':>11} {'at MTurk':>10}"
        )
        out(head + "  status")
        for row in report.batches:
            approved = f"{row.local.approved}/{row.remote.approved}"
            status = "ok" if row.matches else "DIFFERS"
            if row.submitted_remote:
                status += f" ({row.submitted_remote} awaiting review at MTurk)"
            out(
                f"{row.batch.pk:>6} {row.committed:>10} {approved:>14} "
                f"{row.local.total:>11} {row.remote.total:>10}  {status}"
            )
            if not row.matches:
                for name in ("rewards", "fees", "bonuses", "bonus_fees"):
                    here, there = getattr(row.local, name), getattr(row.remote, name)
                    if here != there:
                        out(f"         {name}: {here} here, {there} at MTurk")
        for item in report.unknown_remote:
            out(f"HIT {item['hit_id']} at MTurk is not recorded here ({item['annotation']})")
        for hit in report.missing_remote:
            out(f"HIT {hit.pk} ({hit.provider_hit_id}) is recorded here but MTurk does not list it")
        for hit in report.gone:
            out(
                f"HIT {hit.pk} ({hit.provider_hit_id}) is no longer known to MTurk: its "
                "assignments and bonuses were not compared"
            )
        if report.other_remote:
            out(
                f"{report.other_remote} other HITs of the account were not made by this installation"
            )
        if report.mismatches or report.unknown_remote or report.missing_remote or report.gone:
            raise CommandError("local records and MTurk differ (see above)")

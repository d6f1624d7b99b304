from typing import Any

from django.core.management.base import CommandError, CommandParser
from django.utils import timezone

from annotation.management.arguments import number, record_id
from annotation.management.base import ServiceCommand
from annotation.models import Job
from annotation.services.jobs.job_recovery import job_cancel, job_resume, jobs_recover
from annotation.services.jobs.jobs import LIVE


class Command(ServiceCommand):
    help = (
        "Background jobs still pending or running, with their last sign of life; `resume N` "
        "sends a job's missing steps again, `cancel N` stops it, `recover` runs the periodic "
        "check (jobs silent for CROWDVL_JOB_STALL_SECONDS) now."
    )

    def add_arguments(self, parser: CommandParser) -> None:
        parser.add_argument("action", nargs="?", choices=["list", "resume", "cancel", "recover"])
        parser.add_argument("job", nargs="?", type=record_id)
        parser.add_argument(
            "--stall-seconds",
            type=number(1.0, 365 * 86_400.0),
            help="with recover: silence that counts as stalled",
        )

    def handle(self, *args: Any, **opts: Any) -> None:
        action = opts["action"] or "list"
        who = "cli"
        if action in ("resume", "cancel") and opts["job"] is None:
            raise CommandError(f"give the job id: manage.py jobs {action} <id>")
        if action == "resume":
            plan = job_resume(job_id=opts["job"], reason="by hand", by=who)
            self.stdout.write(f"job {opts['job']}: {len(plan)} step(s) sent again")
        elif action == "cancel":
            job = job_cancel(job_id=opts["job"], by=who)
            self.stdout.write(f"job {job.pk} {job.name}: {job.state}")
        elif action == "recover":
            resumed = jobs_recover(stall_seconds=opts["stall_seconds"])
            self.stdout.write(f"resumed: {', '.join(map(str, resumed)) or 'none'}")
        else:
            now = timezone.now()
            jobs = Job.objects.filter(state__in=LIVE).order_by("pk")
            for job in jobs:
                seen = job.heartbeat_at or job.started_at or job.created_at
                self.stdout.write(
                    f"job {job.pk} {job.name} run {job.run_id}: {job.state} "
                    f"{job.progress:.0f}% parts {len(job.parts_done)}/{job.parts_total} "
                    f"last sign of life {(now - seen).total_seconds():.0f} s ago"
                    f"{f', resumed {job.resumed}x' if job.resumed else ''}: {job.message}"
                )
            if not jobs:
                self.stdout.write("no pending or running jobs")

"""Shared pieces of the management commands: clear errors and job progress display."""

from __future__ import annotations

import json
import sys
import time
from typing import Any

from django.conf import settings
from django.core.management.base import BaseCommand, CommandError
from django.http import Http404

from annotation.errors import ServiceError
from annotation.models import Batch, Job, JobState
from pipeline.errors import InputError


class ServiceCommand(BaseCommand):
    """A command whose service errors print as one clear line and exit non-zero."""

    # A service's field name -> the option that gave it, where they differ ("version" ->
    # "--export-version"): the error names what the user typed.
    options_of_fields: dict[str, str] = {}

    def execute(self, *args: Any, **options: Any) -> str | None:
        try:
            return super().execute(*args, **options)
        except InputError as exc:
            option = self.options_of_fields.get(exc.field or "")
            raise CommandError(f"{option}: {exc.message}" if option else str(exc)) from exc
        except ServiceError as exc:
            raise CommandError(str(exc)) from exc
        except Http404 as exc:  # get_object_or_404 with an id that does not exist
            raise CommandError(str(exc).replace("matches the given query", "has that id")) from None

    @staticmethod
    def batch_of(pk: int, *, provider: str) -> Batch:
        """The batch `pk` of `provider`, or an error that says which provider it has."""
        batch = Batch.objects.filter(pk=pk).select_related("run").first()
        if batch is None:
            raise CommandError(f"no batch {pk}")
        if batch.provider != provider:
            raise CommandError(
                f"batch {pk} uses the {batch.provider!r} provider; this command is for "
                f"{provider!r} batches"
            )
        return batch

    @staticmethod
    def json_object(text: str, option: str) -> dict[str, Any]:
        """A command-line option holding a JSON object (e.g. a run's --config)."""
        try:
            value = json.loads(text)
        except ValueError as exc:
            raise CommandError(f"{option} is not JSON: {exc}") from None
        if not isinstance(value, dict):
            raise CommandError(f"{option} must be a JSON object")
        return value

    def wait_for_job(self, job: Job, *, poll: float = 0.5, timeout: float | None = None) -> Job:
        """Show a job's progress until it ends; fail the command if the job failed, or give up
        after `timeout` seconds (default `CROWDVL_JOB_WAIT_SECONDS`, an hour)."""
        if timeout is None:
            timeout = float(settings.CROWDVL_JOB_WAIT_SECONDS)
        deadline = time.monotonic() + timeout
        last = None
        tty = sys.stdout.isatty()
        while True:
            job.refresh_from_db()
            line = f"[job {job.pk} {job.name}] {job.progress:5.1f}% {job.message}"
            if line != last:
                self.stdout.write(
                    ("\r" + line.ljust(100)) if tty else line, ending="" if tty else "\n"
                )
                last = line
            if job.state in (JobState.SUCCEEDED, JobState.FAILED, JobState.CANCELLED):
                if tty:
                    self.stdout.write("")
                break
            if time.monotonic() > deadline:
                raise CommandError(
                    f"gave up waiting: job {job.pk} ({job.name}) did not finish within "
                    f"{timeout:.0f} s (it is {job.state} at {job.progress:.0f}%: {job.message}); "
                    "it keeps going in the background, see the run's page or wait again "
                    "(CROWDVL_JOB_WAIT_SECONDS)"
                )
            time.sleep(poll)
        if job.state == JobState.FAILED:
            raise CommandError(f"job {job.pk} failed: {job.error}")
        if job.state == JobState.CANCELLED:
            raise CommandError(f"job {job.pk} was cancelled: {job.message}")
        return job

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
from annotation.models import Batch, Job, JobState, Run
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
            raise CommandError(self._not_found(str(exc), options)) from None

    @staticmethod
    def _not_found(message: str, options: dict[str, Any]) -> str:
        """ "No Batch matches the given query." as "no batch 12": the option named after the
        model holds the id that was asked for."""
        words = message.split()
        model = words[1] if len(words) > 2 and words[0] == "No" else ""
        value = options.get(model.lower()) if model else None
        if value is None:
            return message.replace("matches the given query", "has that id")
        return f"no {model.lower()} {value}"

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
    def run_of(pk: int, *, kind: str) -> Run:
        """The run `pk` of `kind` (a flow's command), or an error that says which kind it is:
        another flow's run would fail later, or worse, not at all."""
        run = Run.objects.filter(pk=pk).first()
        if run is None:
            raise CommandError(f"no run {pk}")
        if run.kind != kind:
            raise CommandError(f"run {pk} is a {run.kind} run; this command is for {kind} runs")
        return run

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

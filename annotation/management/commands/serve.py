"""`make serve`: the web server with one real Celery worker and the beat scheduler beside it, so
jobs run in the background with live progress and the periodic rules (approval holds, sync,
job recovery) run, on any broker, including the file-based one `make serve` picks when none is
set (nothing to install)."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
from typing import Any

from django.conf import settings
from django.core.management import call_command
from django.core.management.base import BaseCommand, CommandError, CommandParser
from django.db import connections

from annotation.management.arguments import whole
from annotation.selectors.links import loopback_warning, public_base_url


def worker_command(*, concurrency: int) -> list[str]:
    """The Celery worker (with beat) that `serve` starts beside the web server."""
    schedule = settings.VAR_DIR / "celerybeat-schedule"
    return [
        *(sys.executable, "-m", "celery", "-A", "config", "worker", "-B", "-s", str(schedule)),
        *("-c", str(concurrency), "-l", "info", "--without-gossip", "--without-mingle"),
    ]


def served_base(addrport: str) -> str:
    """The address `runserver addrport` answers at ("8123", "0.0.0.0:8123", "[::1]:8123")."""
    host, sep, port = addrport.rpartition(":")
    if not sep:
        host, port = "", addrport
    return f"http://{host or '127.0.0.1'}:{port}"


def links_base(addrport: str) -> str:
    """Where links printed and sent while serving point: CROWDVL_PUBLIC_URL where it is set,
    else the address actually served (not the default port 8000, issue 46)."""
    return public_base_url() if settings.CROWDVL_PUBLIC_URL_SET else served_base(addrport)


def per_request_connections() -> None:
    """The development server answers each request in a new thread that nothing closes the
    database connection of: a persistent one (CROWDVL_DB_CONN_MAX_AGE) outlives its thread,
    and under a lab's load PostgreSQL ran out of connections ("too many clients", 500s). So
    each request's connection closes when the request ends, as Django advises for it."""
    for alias in connections:
        connections.settings[alias]["CONN_MAX_AGE"] = 0
    connections.close_all()


class Command(BaseCommand):
    help = (
        "Migrate, start a Celery worker with the beat scheduler, then the web server; "
        "stopping the server stops the worker."
    )

    def add_arguments(self, parser: CommandParser) -> None:
        parser.add_argument("addrport", nargs="?", default="127.0.0.1:8000")
        parser.add_argument("--concurrency", type=whole(1, 64), default=2, help="worker processes")
        parser.add_argument(
            "--no-worker", action="store_true", help="the web server only (a worker runs apart)"
        )

    def handle(self, *args: Any, **options: Any) -> None:
        # Ctrl-C and a service manager's SIGTERM both stop the server and then its worker, even
        # when started from a shell that made background jobs ignore SIGINT.
        signal.signal(signal.SIGINT, signal.default_int_handler)
        signal.signal(signal.SIGTERM, signal.default_int_handler)
        call_command("migrate", interactive=False, verbosity=1)
        base = links_base(options["addrport"])
        if not settings.CROWDVL_PUBLIC_URL_SET:  # the worker's jobs and mails link here too
            settings.CROWDVL_PUBLIC_URL = base
            os.environ["CROWDVL_PUBLIC_URL"] = base
        warning = loopback_warning(base)
        if warning:
            self.stderr.write(self.style.WARNING(warning))
        worker = None
        if not options["no_worker"]:
            if settings.CELERY_TASK_ALWAYS_EAGER:
                raise CommandError(
                    "No CELERY_BROKER_URL: jobs would run inside the click. Set one (`make "
                    "serve` uses filesystem:// by default) or pass --no-worker."
                )
            worker = subprocess.Popen(worker_command(concurrency=options["concurrency"]))
            self.stdout.write(f"Celery worker with beat started (pid {worker.pid}).")
        per_request_connections()
        try:
            # No autoreloader: a reload would start a second worker.
            call_command("runserver", options["addrport"], use_reloader=False)
        finally:
            if worker is not None:
                worker.terminate()  # a warm shutdown: unacknowledged messages go back
                try:
                    worker.wait(timeout=30)
                except subprocess.TimeoutExpired:
                    worker.kill()

"""A real Celery worker process on a private queue against the test database (tests that need
one: stage 1 in subtasks, jobs recovering after a killed worker or lost messages)."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import uuid
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

from django.conf import settings

from tests.factories import database_name

ROOT = Path(__file__).resolve().parents[2]


class CeleryProcess:
    def __init__(
        self,
        *,
        queue: str,
        log: Path,
        concurrency: int = 2,
        beat: bool = False,
        env: dict[str, str] | None = None,
    ) -> None:
        self.log_path = log
        args = [
            sys.executable,
            "-m",
            "celery",
            "-A",
            "config",
            "worker",
            "-c",
            str(concurrency),
            "-Q",
            queue,
            "-n",
            f"{queue}-{os.getpid()}-{id(self)}@%h",
            "--without-gossip",
            "--without-mingle",
            "-l",
            "info",
        ]
        if beat:  # the periodic tasks (jobs.recover) in the same process
            args += ["-B", "-s", str(log.with_suffix(".beat"))]
        full_env = {
            **os.environ,
            "TEST_DATABASE_NAME": database_name(),
            "CELERY_QUEUE": queue,
            "CROWDVL_MEDIA_ROOT": str(settings.MEDIA_ROOT),
            "DJANGO_SECRET_KEY": settings.SECRET_KEY,
            **(env or {}),
        }
        self._log = open(log, "a")  # noqa: SIM115
        # Its own process group, so kill() takes the pool's children with it.
        self.proc = subprocess.Popen(
            args,
            cwd=ROOT,
            env=full_env,
            stdout=self._log,
            stderr=subprocess.STDOUT,
            start_new_session=True,
        )

    def alive(self) -> bool:
        return self.proc.poll() is None

    def log(self) -> str:
        return self.log_path.read_text()

    def freeze(self) -> None:
        """SIGSTOP the worker and its pool: nothing it holds changes until `thaw`."""
        os.killpg(self.proc.pid, signal.SIGSTOP)

    def thaw(self) -> None:
        os.killpg(self.proc.pid, signal.SIGCONT)

    def kill(self) -> None:
        """kill -9 of the worker and its pool, as a crashed machine would."""
        os.killpg(self.proc.pid, signal.SIGKILL)
        self.proc.wait(timeout=20)
        self._log.close()

    def stop(self) -> None:
        if self.alive():
            self.proc.terminate()
            try:
                self.proc.wait(timeout=20)
            except subprocess.TimeoutExpired:
                os.killpg(self.proc.pid, signal.SIGKILL)
                self.proc.wait(timeout=20)
        if not self._log.closed:
            self._log.close()


@contextmanager
def private_queue() -> Iterator[str]:
    """Send this process's tasks to a fresh queue on the Redis broker (not in-process)."""
    from config import celery_app

    if not settings.CELERY_BROKER_URL.startswith("redis://"):
        raise RuntimeError("set CELERY_BROKER_URL to a Redis URL (make test does)")
    queue = f"crowdvl-test-{uuid.uuid4().hex[:8]}"
    conf = celery_app.conf
    old = conf.task_always_eager, conf.task_default_queue
    conf.task_always_eager, conf.task_default_queue = False, queue
    try:
        yield queue
    finally:
        conf.task_always_eager, conf.task_default_queue = old

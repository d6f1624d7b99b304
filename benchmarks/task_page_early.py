"""The worker's task page in one process: Django's handler with the early-answer middleware
(`annotation/crowd/local/lean_path.py`) against the same handler without it (issue 49).

`benchmarks/worker_load.py` measures the page under 32 clients, where the machine's drift moves
a round's ratio by ±20 %. This gives the same page request (a worker's later view of their open
assignment, sessions in the database behind the shared Redis cache, as a deployment has them)
to two handlers built from the project's settings, one with MIDDLEWARE less the early answer,
alternated in blocks: each block's thread CPU per request (PostgreSQL's work not counted) and
the Python calls per request under cProfile (a count that does not drift).

    .venv/bin/python benchmarks/task_page_early.py [--blocks 30] [--requests 200]
        [--database-url postgres://postgres@127.0.0.1:5432/postgres] [--cache-url redis://127.0.0.1:6379/13]

A database (--database-name) is created on that server and dropped afterwards.
"""

from __future__ import annotations

import argparse
import cProfile
import io
import os
import pstats
import statistics
import sys
import tempfile
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from benchmarks import worker_load  # noqa: E402
from benchmarks.harness import results_argument, results_tee  # noqa: E402

FULL = "full stack"
EARLY = "early answer"


def page_request(setup: dict) -> tuple[str, str]:
    """A worker's task page (path, Cookie header) as a later view of it: joined, claimed,
    shown once."""
    from django.test import Client

    client = Client()
    client.get(f"/join/{setup['tokens'][0]}/")
    path = client.get(f"/work/{setup['batch']}/next/")["Location"]
    assert client.get(path).status_code == 200
    return path, "; ".join(f"{k}={v.value}" for k, v in client.cookies.items())


def cpu_per_request(app: Callable, environ: Callable[[], dict], n: int) -> float:
    """Thread CPU seconds per request of `n` requests, each body read and closed."""
    started = time.thread_time()
    for _ in range(n):
        body = app(environ(), _start_response)
        b"".join(body)
        body.close()
    return (time.thread_time() - started) / n


def _start_response(status: str, headers: list, exc_info: Any = None) -> None:
    if not status.startswith("200"):
        raise RuntimeError(f"the page answered {status}")


def calls_per_request(app: Callable, environ: Callable[[], dict], n: int = 500) -> float:
    profile = cProfile.Profile()
    profile.enable()
    cpu_per_request(app, environ, n)
    profile.disable()
    return pstats.Stats(profile, stream=io.StringIO()).total_calls / n  # type: ignore[attr-defined]


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--database-url", default="postgres://postgres@127.0.0.1:5432/postgres")
    parser.add_argument("--database-name", default="crowdvl_bench_early")
    parser.add_argument("--cache-url", default="redis://127.0.0.1:6379/13")
    parser.add_argument("--blocks", type=int, default=30)
    parser.add_argument("--requests", type=int, default=200, help="requests per block")
    results_argument(parser, __file__)
    args = parser.parse_args()
    results_tee(args.results)
    worker_load.DB = args.database_name
    url = worker_load.create_database(args.database_url)
    import redis

    redis.Redis.from_url(args.cache_url).flushdb()
    folder = Path(tempfile.mkdtemp(prefix="crowdvl-early-"))
    os.environ.update(
        {
            "DATABASE_URL": url,
            "DJANGO_SETTINGS_MODULE": "benchmarks.load_settings",
            "DJANGO_SECRET_KEY": "benchmark-" + "x" * 40,
            "DJANGO_DEBUG": "0",
            "CROWDVL_MEDIA_ROOT": str(folder / "media"),
            "CROWDVL_IMAGE_DIRS": str(folder),
            "CELERY_BROKER_URL": "",
            "CROWDVL_CACHE_URL": args.cache_url,
            "CROWDVL_DB_CONN_MAX_AGE": "600",
        }
    )
    os.environ.pop("TEST_DATABASE_NAME", None)
    import django

    django.setup()
    try:
        setup = worker_load.build(200, 1, folder)
        path, cookies = page_request(setup)
        from django.conf import settings
        from django.core.handlers.wsgi import WSGIHandler
        from django.test import RequestFactory, override_settings

        base = RequestFactory()._base_environ(PATH_INFO=path, HTTP_COOKIE=cookies)

        def environ() -> dict:
            return {**base, "wsgi.input": io.BytesIO(b"")}

        assert "lean_path" in settings.MIDDLEWARE[0], "the early answer is not in MIDDLEWARE"
        early = WSGIHandler()  # the handler reads MIDDLEWARE when it is made
        with override_settings(MIDDLEWARE=[m for m in settings.MIDDLEWARE if "lean_path" not in m]):
            full = WSGIHandler()
        apps = {FULL: full, EARLY: early}
        for app in apps.values():  # warm
            cpu_per_request(app, environ, 300)
        per_block: dict[str, list[float]] = {name: [] for name in apps}
        for _ in range(args.blocks):
            for name, app in apps.items():
                per_block[name].append(cpu_per_request(app, environ, args.requests))
        calls = {name: calls_per_request(app, environ) for name, app in apps.items()}
    finally:
        from django.db import connections

        connections.close_all()
        worker_load.drop_database(args.database_url)

    print(
        f"the task page, a later view of an open assignment; {args.blocks} blocks x "
        f"{args.requests} requests each way, alternated; thread CPU per request (PostgreSQL's "
        f"not counted)"
    )
    print()
    print(f"{'way':<22}{'median us':>11}{'q1 us':>9}{'q3 us':>9}{'calls/req':>11}")
    for name, values in per_block.items():
        q1, _, q3 = statistics.quantiles(values)
        print(
            f"{name:<22}{1e6 * statistics.median(values):>11.1f}{1e6 * q1:>9.1f}"
            f"{1e6 * q3:>9.1f}{calls[name]:>11.0f}"
        )
    ratios = [b / a for a, b in zip(per_block[FULL], per_block[EARLY], strict=True)]
    q1, _, q3 = statistics.quantiles(ratios)
    print()
    print(
        f"early answer / full stack, CPU per request: {statistics.median(ratios):.3f}x "
        f"(median of blocks; q1 {q1:.3f}, q3 {q3:.3f}); Python calls per request "
        f"{calls[EARLY] / calls[FULL]:.3f}x"
    )
    print(f"load average (1, 5, 15 min) {', '.join(f'{v:.2f}' for v in os.getloadavg())}")


if __name__ == "__main__":
    main()

"""`make serve` on the embedded default: the web server, one real Celery worker and the beat
scheduler on the file-based broker (nothing to install). A job runs in the background (not
inside the click) and a periodic rule (auto-approval) runs; stopping the server stops the
worker."""

import json
import signal
import socket
import sqlite3
import subprocess
import sys
import time
import urllib.request
from collections.abc import Iterator
from contextlib import closing, contextmanager
from pathlib import Path

import pytest

from tests.annotation.crowd.local.test_views_sqlite_concurrency import _env, _run

pytestmark = pytest.mark.long

ROOT = Path(__file__).resolve().parents[4]


def _state(env: dict[str, str], job: int, assignment: int) -> dict:
    """The job's state and progress and the assignment's state, read from the embedded
    database file itself (read-only): a driver process per poll cost seconds of start-up."""
    path = env["DATABASE_URL"].removeprefix("sqlite:///")
    with closing(sqlite3.connect(f"file:{path}?mode=ro", uri=True, timeout=30)) as db:
        state, progress = db.execute(
            "SELECT state, progress FROM annotation_job WHERE id = ?", (job,)
        ).fetchone()
        (assigned,) = db.execute(
            "SELECT state FROM annotation_assignment WHERE id = ?", (assignment,)
        ).fetchone()
    return {"job": state, "progress": progress, "assignment": assigned}


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


@contextmanager
def serving(
    tmp_path: Path, env: dict[str, str], *extra: str
) -> Iterator[tuple[str, subprocess.Popen]]:
    """`manage.py serve` on a free port, once it answers; stopped (Ctrl-C) on leaving."""
    port = _free_port()
    log = (tmp_path / "serve.log").open("w")
    server = subprocess.Popen(
        [sys.executable, "manage.py", "serve", f"127.0.0.1:{port}", "--concurrency", "1", *extra],
        cwd=ROOT,
        env=env,
        stdout=log,
        stderr=subprocess.STDOUT,
        start_new_session=True,
    )
    base = f"http://127.0.0.1:{port}"
    try:
        deadline = time.monotonic() + 90
        while True:
            try:
                urllib.request.urlopen(f"{base}/accounts/login/", timeout=2)
                break
            except OSError:
                assert time.monotonic() < deadline, (tmp_path / "serve.log").read_text()
                assert server.poll() is None, (tmp_path / "serve.log").read_text()
                time.sleep(0.5)
        yield base, server
    finally:
        server.send_signal(signal.SIGINT)
        server.wait(timeout=60)
        log.close()


def test_serve_runs_jobs_and_periodic_rules_in_a_worker_beside_the_web_server(tmp_path):
    env = _env(tmp_path)
    made = _run(env, "setup", "1")  # no broker yet: stage 1 runs in-process
    due = _run(env, "due", str(made["batch"]))
    served = {
        **env,
        "CELERY_BROKER_URL": "filesystem://",
        "CROWDVL_AUTO_APPROVE_SECONDS": "1",
    }
    with serving(tmp_path, served) as (_, server):
        deadline = time.monotonic() + 90
        coco = tmp_path / "small.json"
        coco.write_text(
            json.dumps(
                {
                    "images": [{"id": 1, "file_name": "1.jpg", "coco_url": "http://x.org/1.jpg"}],
                    "annotations": [{"id": 9, "image_id": 1, "caption": "a cat"}],
                }
            )
        )
        job = _run(served, "import", str(coco))["job"]
        while True:
            now = _state(served, job, due["assignment"])
            if now["job"] == "succeeded" and now["assignment"] == "approved":
                break
            assert time.monotonic() < deadline + 60, (now, (tmp_path / "serve.log").read_text())
            time.sleep(1)
        assert now["progress"] == 100.0
        text = (tmp_path / "serve.log").read_text()
        assert "Celery worker with beat started" in text
        assert "only this machine can open" in text  # links point at a loopback address
    # The worker (its pool and beat children too) went with the server.
    deadline = time.monotonic() + 30
    while True:
        left = subprocess.run(
            ["pgrep", "-a", "-g", str(server.pid)], capture_output=True, text=True
        )
        if not left.stdout.strip() or time.monotonic() > deadline:
            break
        time.sleep(0.5)
    assert not left.stdout.strip(), left.stdout


def test_serve_on_postgresql_leaves_no_connection_behind_its_requests(tmp_path):
    """The development server runs each request in its own thread: with persistent
    connections each thread's stayed open (79 for 10 busy workers, then "too many clients").
    `serve` closes a request's connection when it ends."""
    import os
    from concurrent.futures import ThreadPoolExecutor

    import psycopg

    server_url = os.environ["DATABASE_URL"].rsplit("/", 1)[0] + "/postgres"
    name = f"crowdvl_serve_conns_{os.getpid()}"
    with psycopg.connect(server_url, autocommit=True) as conn:
        conn.execute(f"DROP DATABASE IF EXISTS {name} WITH (FORCE)")
        conn.execute(f"CREATE DATABASE {name}")
    env = _env(tmp_path)
    env["DATABASE_URL"] = server_url.rsplit("/", 1)[0] + "/" + name
    env["CROWDVL_DB_CONN_MAX_AGE"] = "600"
    try:
        with serving(tmp_path, env, "--no-worker") as (base, _):

            def health(_: int) -> int:
                with urllib.request.urlopen(f"{base}/health/", timeout=30) as response:
                    return response.status

            with ThreadPoolExecutor(8) as pool:
                statuses = list(pool.map(health, range(60)))
            with psycopg.connect(server_url, autocommit=True) as conn:
                left = conn.execute(
                    "SELECT count(*) FROM pg_stat_activity WHERE datname = %s", [name]
                ).fetchone()[0]
        assert statuses == [200] * 60
        assert left <= 2, f"{left} connections left open by 60 requests"
    finally:
        with psycopg.connect(server_url, autocommit=True) as conn:
            conn.execute(f"DROP DATABASE IF EXISTS {name} WITH (FORCE)")


def test_links_point_at_the_address_served_unless_the_public_url_is_set(settings):
    """Issue 46: `serve 127.0.0.1:8123` warned and linked with port 8000."""
    from annotation.management.commands.serve import links_base, served_base
    from annotation.selectors.links import loopback_warning

    assert served_base("8123") == "http://127.0.0.1:8123"
    assert served_base("0.0.0.0:9000") == "http://0.0.0.0:9000"
    assert served_base("[::1]:8123") == "http://[::1]:8123"
    settings.CROWDVL_PUBLIC_URL_SET = False
    assert "127.0.0.1:8123" in (loopback_warning(links_base("127.0.0.1:8123")) or "")
    settings.CROWDVL_PUBLIC_URL_SET = True
    settings.CROWDVL_PUBLIC_URL = "https://crowd.lab.org"
    assert links_base("127.0.0.1:8123") == "https://crowd.lab.org"

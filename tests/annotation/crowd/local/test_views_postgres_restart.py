"""PostgreSQL restarting while workers submit: requests fail for a moment, then the app
reconnects by itself (persistent connections with health checks) and nothing is half-written.
The test starts a private server of its own (never the shared one) and restarts it."""

import json
import os
import shutil
import socket
import subprocess
import sys
import time
from pathlib import Path

import pytest

pytestmark = pytest.mark.long

ROOT = Path(__file__).resolve().parents[4]
BIN = Path("/usr/lib/postgresql/15/bin")


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


class PrivateServer:
    def __init__(self, folder: Path) -> None:
        self.folder, self.port = folder, _free_port()
        self.data, self.log = folder / "data", folder / "server.log"
        folder.mkdir(parents=True, exist_ok=True)
        if os.geteuid() == 0:  # PostgreSQL refuses to run as root
            shutil.chown(folder, "postgres")
        self.run(BIN / "initdb", "-D", self.data, "-A", "trust", "-U", "postgres", "--no-sync")
        self.ctl("start", "-w", "-o", f"-p {self.port} -k {folder} -c listen_addresses=127.0.0.1")
        self.run(BIN / "createdb", "-h", "127.0.0.1", "-p", str(self.port), "-U", "postgres", "app")

    def run(self, *args) -> None:
        command = [str(a) for a in args]
        if os.geteuid() == 0:
            command = ["runuser", "-u", "postgres", "--", *command]
        subprocess.run(command, check=True, capture_output=True, timeout=120)

    def ctl(self, *args) -> None:
        self.run(BIN / "pg_ctl", "-D", self.data, "-l", self.log, *args)

    @property
    def url(self) -> str:
        return f"postgres://postgres@127.0.0.1:{self.port}/app"


@pytest.fixture
def server(tmp_path):
    if not (BIN / "initdb").exists():
        pytest.fail(
            f"PostgreSQL 15's server programs are needed in {BIN} (apt-get install postgresql-15)"
        )
    folder = Path("/tmp") / f"crowdvl-pg-{tmp_path.name}-{os.getpid()}"
    server = PrivateServer(folder)
    try:
        yield server
    finally:
        try:
            server.ctl("stop", "-m", "immediate")
        finally:
            shutil.rmtree(folder, ignore_errors=True)


def test_submissions_survive_a_postgresql_restart(server, settings):
    env = {
        **os.environ,
        "DATABASE_URL": server.url,
        "CELERY_BROKER_URL": "",  # tasks in-process: this test is about the database
        "CROWDVL_DB_CONN_MAX_AGE": "60",
        "DJANGO_SECRET_KEY": "test-" + "k" * 50,
        "CROWDVL_MEDIA_ROOT": str(server.folder / "media"),
        # The run's pictures (driver_run.py) under the test's folder, not the checkout's var/.
        "CROWDVL_VAR_DIR": str(server.folder / "var"),
    }
    env.pop("TEST_DATABASE_NAME", None)
    driver = subprocess.Popen(
        [sys.executable, str(ROOT / "tests/annotation/pg_restart_driver.py")],
        cwd=ROOT,
        env=env,
        stdout=subprocess.PIPE,
        stderr=subprocess.STDOUT,
        text=True,
    )
    lines: list[str] = []
    assert driver.stdout is not None
    for line in driver.stdout:
        lines.append(line.rstrip())
        if line.startswith("submitted 40"):
            break
    else:
        pytest.fail("\n".join(lines[-50:]))
    started = time.monotonic()
    server.ctl("restart", "-m", "fast", "-w")
    restarted_in = time.monotonic() - started
    rest, _ = driver.communicate(timeout=180)
    lines += rest.splitlines()
    assert driver.returncode == 0, "\n".join(lines[-50:])
    result = json.loads(lines[-1])
    print(f"restart took {restarted_in:.2f} s; {result}")
    assert result["errors"] >= 1, "the restart did not land among the submissions"
    # Pages requested while the server was away: 503 "try again", never a 500 (issue 32).
    assert result["pages"].get("503", 0) >= 1 and "500" not in result["pages"], result["pages"]
    assert result["db_submitted"] == result["driver_submitted"] > 40
    assert result["partial_assignments"] == 0 and result["orphan_answers"] == 0
    assert result["overfull_hits"] == 0 and result["hits_without_work"] == 0

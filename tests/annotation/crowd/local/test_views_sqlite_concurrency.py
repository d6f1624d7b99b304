"""The embedded default (a SQLite file, no broker) with several workers at once: each worker is
a browser in its own process, claiming, loading and submitting HITs through the real views.
Before WAL, immediate transactions and a busy timeout, two workers at once got "database is
locked" errors (a 500: "Something went wrong") and lost that HIT's answers."""

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

pytestmark = pytest.mark.long

DRIVER = Path(__file__).resolve().parents[2] / "embedded_driver.py"
WORKERS = 4


def _env(tmp_path: Path) -> dict[str, str]:
    env = {
        k: v
        for k, v in os.environ.items()
        if k not in {"DATABASE_URL", "CELERY_BROKER_URL", "TEST_DATABASE_NAME"}
    }
    env["DATABASE_URL"] = f"sqlite:///{tmp_path / 'embedded.sqlite3'}"
    env["CROWDVL_VAR_DIR"] = str(tmp_path / "var")
    env["DJANGO_DEBUG"] = "0"
    env["DJANGO_SECURE_SSL_REDIRECT"] = "0"  # plain http, as `make serve` on a lab's network
    env["DJANGO_SECRET_KEY"] = "embedded-concurrency-test-" + "x" * 40
    return env


def _run(env: dict[str, str], *args: str) -> dict:
    out = subprocess.run(
        [sys.executable, str(DRIVER), *args],
        env=env,
        capture_output=True,
        text=True,
        timeout=300,
        check=True,
    )
    return json.loads(out.stdout.strip().splitlines()[-1])


def test_parallel_workers_on_the_embedded_database_lose_no_answer(tmp_path):
    env = _env(tmp_path)
    made = _run(env, "setup", str(WORKERS))
    batch = str(made["batch"])
    browsers = [
        subprocess.Popen(
            [sys.executable, str(DRIVER), "work", batch, token],
            env=env,
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
            text=True,
        )
        for token in made["tokens"]
    ]
    results = []
    for browser in browsers:
        out, err = browser.communicate(timeout=300)
        assert browser.returncode == 0, err[-3000:]
        results.append(json.loads(out.strip().splitlines()[-1]))
    errors = [e for r in results for e in r["errors"]]
    submitted = sum(r["submitted"] for r in results)
    stored = _run(env, "check", batch)
    assert errors == [], errors
    # Every worker did every HIT (one slot per worker on each), and each submit kept its answers.
    assert submitted == stored["submitted"] > 0
    assert all(r["submitted"] == submitted // WORKERS for r in results), results
    assert stored["partial"] == 0
    assert stored["answers"] == submitted * 2

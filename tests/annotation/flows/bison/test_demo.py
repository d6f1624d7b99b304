"""The demo's BISON run: the same seed gives the same dataset on SQLite and PostgreSQL (issue 48).

Each database gets a fresh installation in its own process (`manage.py demo` with only BISON):
the embedded SQLite default and a scratch PostgreSQL database. Stage 2's triples came from
`.distinct()` in no stated order, so their primary keys, and the stage-3 HITs shuffled from
them, followed each database's plan: 488 verified triples on SQLite, 478 on PostgreSQL, from
one seed. Only the wall clock's times may differ (the export's creation, the provenance
table's submission times) and what follows from them (`_without_times`).
"""

import io
import json
import os
import subprocess
import sys
from pathlib import Path

import psycopg
import pyarrow.parquet as pq
import pytest

pytestmark = pytest.mark.long

ROOT = Path(__file__).resolve().parents[4]
# Pseudonyms are keyed by the installation's secret: one key for both installations.
SECRET = "issue-48-one-secret-for-both-installations-" + "x" * 20


def _demo(var_dir: Path, database_url: str | None) -> subprocess.Popen:
    env = {
        k: v
        for k, v in os.environ.items()
        if k not in ("DATABASE_URL", "CELERY_BROKER_URL", "DJANGO_SETTINGS_MODULE")
    }
    env.update(CROWDVL_VAR_DIR=str(var_dir), DJANGO_SECRET_KEY=SECRET)
    if database_url:
        env["DATABASE_URL"] = database_url
    log = (var_dir.parent / f"{var_dir.name}.log").open("w")
    return subprocess.Popen(
        [sys.executable, "manage.py", "demo", "--skip-eccv", "--skip-cxc", "--skip-quality"],
        cwd=ROOT,
        env=env,
        stdout=log,
        stderr=subprocess.STDOUT,
    )


def _export(var_dir: Path) -> Path:
    (folder,) = (var_dir / "media" / "exports").glob("run-*/bison-v*")
    return folder


def _files(folder: Path) -> dict[str, bytes]:
    return {str(p.relative_to(folder)): p.read_bytes() for p in folder.rglob("*") if p.is_file()}


# Files holding the wall clock's times (a simulated worker submits "now"), and the entries
# of other files that follow from those times (a size, a checksum, a time span).
TIMED_TABLE = "data/label_provenance.parquet"
TIMED_FILES = {"manifest.json", "README.md", TIMED_TABLE}


def _without_times(name: str, data: bytes) -> object:
    """A file as compared: without the wall clock's times and what follows from them (the
    manifest's creation time; the provenance table's submission times; the card's compressed
    size of that table; Croissant's time span and those files' checksums); others byte for
    byte."""
    if name == "manifest.json":
        manifest = json.loads(data)
        manifest.pop("created_at")
        manifest["record_sets"]["label_provenance"].pop("sha256")
        return manifest
    if name == TIMED_TABLE:
        return pq.read_table(io.BytesIO(data)).drop_columns(["submitted_at"]).to_pylist()
    if name == "README.md":
        return [line for line in data.decode().splitlines() if "download_size:" not in line]
    if name == "croissant.json":
        croissant = json.loads(data)
        for entry in croissant["distribution"]:
            if entry.get("name") in TIMED_FILES:
                entry.pop("sha256")
        croissant.pop("rai:dataCollectionTimeframe")
        for key in ("prov:startedAtTime", "prov:endedAtTime"):
            croissant["prov:wasGeneratedBy"].pop(key)
        return croissant
    return data


def test_the_demos_bison_export_is_the_same_on_sqlite_and_postgresql(tmp_path):
    url = os.environ.get("DATABASE_URL", "")
    if not url.startswith("postgres"):
        pytest.skip("needs the PostgreSQL server the tests run on (DATABASE_URL)")
    server = url.rsplit("/", 1)[0]
    name = f"crowdvl_demo_same_seed_{os.getpid()}"
    with psycopg.connect(server + "/postgres", autocommit=True) as conn:
        conn.execute(f"DROP DATABASE IF EXISTS {name} WITH (FORCE)")
        conn.execute(f"CREATE DATABASE {name}")
    try:
        sqlite, postgres = tmp_path / "sqlite", tmp_path / "postgres"
        runs = [_demo(sqlite, None), _demo(postgres, f"{server}/{name}")]
        codes = [run.wait(timeout=600) for run in runs]
        for var_dir, code in zip((sqlite, postgres), codes, strict=True):
            log = (tmp_path / f"{var_dir.name}.log").read_text()
            assert code == 0, log[-3000:]
        here, there = _files(_export(sqlite)), _files(_export(postgres))
    finally:
        with psycopg.connect(server + "/postgres", autocommit=True) as conn:
            conn.execute(f"DROP DATABASE IF EXISTS {name} WITH (FORCE)")
    assert sorted(here) == sorted(there)
    assert here["bison_annotations.cocoval2014.json"] == there["bison_annotations.cocoval2014.json"]
    different = [n for n in here if _without_times(n, here[n]) != _without_times(n, there[n])]
    assert different == []
    # Not an empty dataset: the sample's run verifies hundreds of triples.
    assert len(json.loads(here["bison_annotations.cocoval2014.json"])["data"]) > 300

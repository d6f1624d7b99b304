"""An export as the package installs it (`pip install .`, the Docker image): its dependencies
leave pandas out. The dev extras bring it, and pyarrow then imports it on its first
conversion, so the tests' own process cannot tell whether an export needs it: a fresh process
where pandas is not installed exports the same files."""

import os
import subprocess
import sys
from pathlib import Path

import pytest
from django.db import connection

from annotation.flows.cxc.services.export import JOB_NAME
from annotation.models import Run
from annotation.services.jobs.jobs import job_create
from annotation.services.release.export_jobs import export_job_write
from benchmarks.cxc_export import fill_rows
from tests.factories import database_name

ROOT = Path(__file__).resolve().parents[4]

SCRIPT = """
import sys

from benchmarks.harness import not_installed

not_installed("pandas")
import django

django.setup()
from annotation.flows.cxc.services.export import JOB_NAME
from annotation.models import Run
from annotation.services.release.export_jobs import export_job_write
from annotation.services.jobs.jobs import job_create

run = Run.objects.get(pk=int(sys.argv[1]))
export = export_job_write(job_id=job_create(name=JOB_NAME, run=run).pk)
assert not any(name.split(".")[0] == "pandas" for name in sys.modules)
print(export.path)
"""


def _records(folder: Path) -> dict[str, bytes]:
    return {
        str(p.relative_to(folder)): p.read_bytes()
        for p in sorted(folder.rglob("*"))
        if p.suffix in (".csv", ".jsonl", ".parquet")
    }


@pytest.mark.django_db(transaction=True)
def test_a_cxc_export_where_pandas_is_not_installed_is_the_same(settings):
    with connection.cursor() as cursor:
        run = Run.objects.get(pk=fill_rows(cursor.cursor, pairs=600, raters=3))
    here = export_job_write(job_id=job_create(name=JOB_NAME, run=run).pk)
    assert here is not None
    done = subprocess.run(
        [sys.executable, "-c", SCRIPT, str(run.pk)],
        cwd=ROOT,
        env={
            **os.environ,
            "TEST_DATABASE_NAME": database_name(),
            "CROWDVL_MEDIA_ROOT": str(settings.MEDIA_ROOT),
            "DJANGO_SECRET_KEY": settings.SECRET_KEY,
        },
        capture_output=True,
        text=True,
        timeout=300,
    )
    assert done.returncode == 0, done.stderr
    there = Path(done.stdout.strip().splitlines()[-1])
    assert there.name == "cxc-v2"  # the second version, made in that process
    one, two = _records(Path(here.path)), _records(there)
    assert {"ratings.jsonl", "sis_val.csv", "data/cxc_pairs.parquet"} <= one.keys()
    assert one == two

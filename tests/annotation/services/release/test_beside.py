"""Work beside a job's main thread (services/release/beside.py, issue 32): reads go to a connection of
their own only where it sees the same rows, and an export made that way is the export made in
order, file for file."""

import json
import threading
from pathlib import Path

import pytest
from django.db import connection, connections, transaction

from annotation.flows.cxc.services.export import JOB_NAME
from annotation.models import Dataset, Job, Run
from annotation.services.jobs.jobs import job_create
from annotation.services.release.beside import beside_pool, reads_beside
from annotation.services.release.export_jobs import export_job_write
from benchmarks.cxc_export import fill_rows


def _read() -> tuple[int, int, object]:
    return (
        threading.get_ident(),
        Dataset.objects.filter(name="seen").count(),
        connections["default"],
    )


@pytest.mark.django_db
def test_inside_a_transaction_the_read_runs_here_and_sees_its_rows():
    Dataset.objects.create(name="seen", source_file="", checksum="")
    with beside_pool() as pool:
        thread, count, used = reads_beside(pool, _read).result()
    assert thread == threading.get_ident()
    assert count == 1  # a connection of its own would not see the uncommitted row
    assert used is connections["default"]


@pytest.mark.django_db(transaction=True)
def test_outside_one_it_runs_beside_on_a_connection_it_closes():
    Dataset.objects.create(name="seen", source_file="", checksum="")
    with beside_pool() as pool:
        thread, count, used = reads_beside(pool, _read).result()
    assert thread != threading.get_ident()
    assert count == 1
    assert used is not connections["default"]
    assert used.connection is None  # closed when the read returned: no connection left open


@pytest.mark.django_db(transaction=True)
def test_with_work_beside_off_every_step_runs_here_in_order(settings):
    settings.CROWDVL_EXPORT_BESIDE = False
    Dataset.objects.create(name="seen", source_file="", checksum="")
    steps: list[int] = []
    with beside_pool() as pool:
        thread, count, used = reads_beside(pool, _read).result()
        pool.submit(steps.append, 1)
        steps.append(2)
    assert (thread, count, used) == (threading.get_ident(), 1, connections["default"])
    assert steps == [1, 2]  # the submitted step ran before the next line


@pytest.mark.django_db(transaction=True)
def test_an_error_beside_is_raised_by_result():
    def fails() -> None:
        raise LookupError("the read failed")

    with beside_pool() as pool, pytest.raises(LookupError, match="the read failed"):
        reads_beside(pool, fails).result()


def _files(folder: Path) -> dict[str, bytes]:
    return {
        str(p.relative_to(folder)): p.read_bytes() for p in sorted(folder.rglob("*")) if p.is_file()
    }


def _manifest_core(data: bytes) -> dict:
    manifest = json.loads(data)
    for key in ("created_at", "changes"):
        manifest.pop(key)
    return manifest


@pytest.mark.django_db(transaction=True)
def test_a_cxc_export_made_beside_is_the_export_made_in_order(settings):
    with connection.cursor() as cursor:
        run = Run.objects.get(pk=fill_rows(cursor.cursor, pairs=600, raters=3))
    with transaction.atomic():  # in order: every read in this thread, on this connection
        first = export_job_write(job_id=job_create(name=JOB_NAME, run=run).pk)
    second = export_job_write(job_id=job_create(name=JOB_NAME, run=run).pk)  # beside
    assert first is not None and second is not None
    assert (first.version, second.version) == (1, 2)
    one, two = _files(Path(first.path)), _files(Path(second.path))
    assert one.keys() == two.keys()
    assert {"ratings.jsonl", "sis_val.csv", "data/cxc_pairs.parquet"} <= one.keys()
    # The files of the records are the same bytes; the manifest differs in time and changes.
    same = [name for name in one if name.endswith((".jsonl", ".csv", ".parquet"))]
    assert len(same) >= 6
    for name in same:
        assert one[name] == two[name], name
    assert _manifest_core(one["manifest.json"]) == _manifest_core(two["manifest.json"])
    assert json.loads(two["manifest.json"])["ratings"] == 600 // 3 * 3 * 3
    sheet_one = one["DATASHEET.md"].decode().replace("v1", "v#")
    assert sheet_one == two["DATASHEET.md"].decode().replace("v2", "v#")
    settings.CROWDVL_EXPORT_BESIDE = False  # a worker that runs one step at a time
    third = export_job_write(job_id=job_create(name=JOB_NAME, run=run).pk)
    assert third is not None
    for name, data in _files(Path(third.path)).items():
        if name in same:
            assert data == two[name], name
    assert Job.objects.filter(name=JOB_NAME, state="succeeded").count() == 3

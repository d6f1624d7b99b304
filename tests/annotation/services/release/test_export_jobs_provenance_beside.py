"""An export whose spec reads the provenance table beside the build
(`ExportSpec.provenance_beside`, issue 51): the same files as the export made in order."""

from pathlib import Path

import pytest
from django.db import connection, transaction

from annotation.flows.bison.services.export import BISON_EXPORT, JOB_NAME
from annotation.models import Run
from annotation.services.jobs.jobs import job_create
from annotation.services.release.export_jobs import export_job_write
from benchmarks.bison_export import fill_rows


def _records(folder: Path) -> dict[str, bytes]:
    return {
        str(p.relative_to(folder)): p.read_bytes()
        for p in sorted(folder.rglob("*"))
        if p.suffix in (".json", ".parquet") and p.name not in ("manifest.json", "croissant.json")
    }


@pytest.mark.django_db(transaction=True)
def test_a_bison_export_with_its_provenance_beside_is_the_export_made_in_order():
    assert BISON_EXPORT.provenance_beside
    with connection.cursor() as cursor:
        run = Run.objects.get(pk=fill_rows(cursor.cursor, images=300))
    with transaction.atomic():  # in order: every read in this thread, on this connection
        first = export_job_write(job_id=job_create(name=JOB_NAME, run=run).pk)
    second = export_job_write(job_id=job_create(name=JOB_NAME, run=run).pk)  # beside
    assert first is not None and second is not None
    one, two = _records(Path(first.path).parent), _records(Path(second.path).parent)
    assert {"data/label_provenance.parquet", "data/bison_triples.parquet"} <= one.keys()
    assert one == two

"""The CxC export past PostgreSQL's 65,535 bound parameters (issue 32): more rated pairs than
one statement can name, read without an id list; every score equals the database's own mean."""

import csv
import json
from decimal import ROUND_HALF_EVEN, Decimal
from pathlib import Path

import numpy as np
import pytest
from django.db import connection
from django.db.models import Case, Value, When
from django.db.models.functions import Coalesce

from annotation.flows.cxc.services.export import JOB_NAME
from annotation.models import Item, Run
from annotation.selectors.int_arrays import _iterated, int_arrays
from annotation.services.jobs.jobs import job_create
from annotation.services.release.export_jobs import export_job_write as cxc_export_write
from benchmarks.cxc_export import fill_rows

pytestmark = pytest.mark.django_db

PAIRS = 66_000  # past 65,535: one IN list of the pairs' ids can no longer be bound


@pytest.fixture
def big_run() -> Run:
    with connection.cursor() as cursor:
        run_id = fill_rows(cursor.cursor, pairs=PAIRS, raters=2)
        # As autovacuum would after such a load (it cannot see the test's uncommitted rows):
        # without statistics PostgreSQL plans the export's joins for empty tables.
        cursor.execute("ANALYZE")
    return Run.objects.get(pk=run_id)


def test_an_export_of_more_pairs_than_bound_parameters_matches_the_databases_means(big_run):
    assert Item.objects.filter(run=big_run).count() > 65_535
    export = cxc_export_write(job_id=job_create(name=JOB_NAME, run=big_run).pk)
    assert export is not None
    folder = Path(export.path)
    with connection.cursor() as cursor:
        cursor.execute(
            "SELECT i.tag, sum(a.label::int), count(*) FROM annotation_answer a"
            " JOIN annotation_question q ON q.id = a.question_id"
            " JOIN annotation_item i ON i.id = q.item_id WHERE i.run_id = %s"
            " GROUP BY i.id ORDER BY i.id",
            [big_run.pk],
        )
        expected: dict[str, list[str]] = {}
        for tag, total, count in cursor.fetchall():
            mean = Decimal(total) / Decimal(count)  # exact: x.5 ties round like Python's float
            expected.setdefault(tag, []).append(
                str(mean.quantize(Decimal("0.01"), ROUND_HALF_EVEN))
            )
    for name, tag in (("sis", "i2i_csim"), ("sts", "c2c_isim"), ("sits", "c2i_intrasim")):
        with (folder / f"{name}_val.csv").open() as fh:
            rows = list(csv.reader(fh))[1:]
        assert [r[2] for r in rows] == expected[tag]
        assert {r[3] for r in rows} == {tag}
    assert rows[0][0].startswith("COCO_val2014:sentid:") and rows[0][1].endswith(".jpg")
    lines = (folder / "ratings.jsonl").read_text().splitlines()
    assert len(lines) == 2 * (PAIRS // 3) * 3
    first = json.loads(lines[0])
    assert set(first) == {"assignment", "gold", "item", "rating", "stage", "worker"}
    manifest = json.loads((folder / "manifest.json").read_text())
    assert manifest["ratings"] == len(lines)
    assert manifest["agreement"]["cxc_sis"]["pairs_rated"] == PAIRS // 3


def test_the_copy_and_the_row_by_row_reads_give_the_same_arrays(dataset):
    """The binary COPY path (PostgreSQL) and the fallback (the embedded SQLite) agree, NULLs
    coalesced, cases and negative values included."""
    from annotation.flows.cxc.services.sampling import cxc_run_create

    run = cxc_run_create(dataset=dataset)
    images = list(dataset.images.all()[:3])
    for n, image in enumerate(images):
        Item.objects.create(run=run, kind="rating_pair", positive=image, tag=f"t{n % 2}")
    columns = {
        "pk": ("pk", np.int64),
        "image": ("positive_id", np.int32),
        "missing": (Coalesce("negative_id", -7), np.int64),
        "tag": (Case(When(tag="t1", then=Value(-1)), default=Value(300)), np.int16),
        "sign": (Case(When(tag="t1", then=Value(-1)), default=Value(1)), np.int8),
    }
    queryset = Item.objects.filter(run=run).order_by("pk")
    copied, iterated = int_arrays(queryset, columns), _iterated(queryset, columns)
    by_pk = np.argsort(copied["pk"])  # the packed read keeps no order
    copied = {name: array[by_pk] for name, array in copied.items()}
    assert list(copied) == list(iterated) == list(columns)
    for name, (_, dtype) in columns.items():
        assert copied[name].dtype == iterated[name].dtype == np.dtype(dtype)
        assert copied[name].tolist() == iterated[name].tolist()
    assert copied["missing"].tolist() == [-7, -7, -7]
    assert copied["tag"].tolist() == [300, -1, 300]
    assert copied["sign"].tolist() == [1, -1, 1]
    assert copied["image"].tolist() == [i.pk for i in images]
    empty = int_arrays(queryset.filter(pk=-1), columns)
    assert all(a.size == 0 for a in empty.values())

"""The ECCV export past PostgreSQL's 65,535 bound parameters (issue 32): more judged pairs
than one statement can name (a prefetch's id list failed here), every pair, answer and
proposal the database holds written once."""

import json
from collections import Counter
from pathlib import Path

import pytest
from django.db import connection

from annotation.flows.eccv.selectors import eccv_positive_pairs
from annotation.flows.eccv.services.export import ECCV_EXPORT
from annotation.models import Run
from annotation.selectors.pseudonyms import worker_pseudonym
from annotation.services.jobs.jobs import job_create
from annotation.services.release.export_jobs import export_job_write
from benchmarks.eccv_export import fill_rows

pytestmark = [pytest.mark.long, pytest.mark.django_db]


@pytest.fixture
def big_run() -> tuple[Run, dict[str, int]]:
    with connection.cursor() as cursor:
        run_id, counts = fill_rows(cursor.cursor, images=20_000, queries=4_200)
    return Run.objects.get(pk=run_id), counts


def _per_pair(sql: str, run: Run) -> Counter:
    with connection.cursor() as cursor:
        cursor.execute(sql, [run.pk])
        return Counter({f"{i}:{c}": n for i, c, n in cursor.fetchall()})


def test_an_export_of_more_judged_pairs_than_bound_parameters_holds_every_row(big_run):
    run, filled = big_run
    assert filled["candidates"] > 65_535  # past what one statement can bind
    export = export_job_write(job_id=job_create(name=ECCV_EXPORT.job_name, run=run).pk)
    assert export is not None
    folder = Path(export.path)
    lines = [
        json.loads(line) for line in (folder / "eccv_judged_pairs.jsonl").read_text().splitlines()
    ]
    assert len(lines) == filled["candidates"] == export.manifest["counts"]["pairs_judged"]
    keys = [(p["image_id"], p["caption_id"]) for p in lines]
    assert keys == sorted(keys) and len(set(keys)) == len(keys)
    joins = (
        " JOIN annotation_item i ON i.id = {}.item_id"
        " JOIN annotation_image p ON p.id = i.positive_id"
        " JOIN annotation_caption c ON c.id = i.caption_id"
    )
    answers = _per_pair(
        "SELECT p.coco_id, c.coco_id, count(*) FROM annotation_answer a"
        " JOIN annotation_question q ON q.id = a.question_id"
        + joins.format("q")
        + " WHERE i.run_id = %s AND i.kind = 'candidate' GROUP BY 1, 2",
        run,
    )
    proposals = _per_pair(
        "SELECT p.coco_id, c.coco_id, count(*) FROM annotation_proposal pr"
        + joins.format("pr")
        + " WHERE i.run_id = %s GROUP BY 1, 2",
        run,
    )
    key = "{image_id}:{caption_id}"
    assert Counter({key.format(**p): len(p["answers"]) for p in lines}) == answers
    assert Counter({key.format(**p): len(p["proposals"]) for p in lines}) == proposals
    assert sum(proposals.values()) == filled["proposals"]
    assert sum(p["positive"] for p in lines) == eccv_positive_pairs(run=run).count()
    # The follow-ups and pseudonyms as the row-by-row read wrote them.
    uncertain = next(p for p in lines if p["answers"][0]["answer"] == "mostly_no")
    assert uncertain["answers"][0]["reasons"] and "errors" in uncertain["answers"][0]
    assert {a["worker"] for p in lines for a in p["answers"]} <= {
        worker_pseudonym(provider="local", external_id=f"bench-{n}") for n in range(1, 301)
    }
    assert all(
        [(m["direction"], m["model"], m["rank"]) for m in p["proposals"]]
        == sorted((m["direction"], m["model"], m["rank"]) for m in p["proposals"])
        for p in lines
    )

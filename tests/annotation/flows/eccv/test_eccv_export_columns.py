"""The ECCV export made a column at a time (issue 32) writes the bytes the record-by-record
code wrote: the JSONL, the Parquet record set and the answer shares are compared with that
code (kept here as the reference) on runs with several answers per pair, answers that do
not count (rejected, held by review, excluded), ties, follow-ups, imported CxC positives and
a model whose name needs escaping."""

import json
from collections import Counter, defaultdict
from pathlib import Path
from typing import Any

import pyarrow as pa
import pyarrow.parquet as pq
import pytest
from django.db import connection
from django.db.models import Q

from annotation.flows.eccv.models import Annotator, ExternalPositive, Proposal
from annotation.flows.eccv.selectors import (
    eccv_answer_shares,
    eccv_exclusions,
    eccv_judged_pairs,
    eccv_positive_item_ids,
    eccv_positives,
)
from annotation.flows.eccv.services.export import ECCV_EXPORT
from annotation.flows.eccv.vocabulary import EccvItemKind
from annotation.models import Answer, Caption, Image, Item, Run
from annotation.selectors.pseudonyms import worker_pseudonym
from annotation.services.jobs.jobs import job_create
from annotation.services.release.export_jobs import export_job_write
from annotation.services.release.release_tables import table_from_columns, table_parquet_bytes
from benchmarks.eccv_export import fill_rows
from tests.annotation.flows.eccv.test_eccv_results import export_of, judged  # noqa: F401

pytestmark = pytest.mark.django_db


def reference_pairs(run: Run, sources: dict[str, list[str]]) -> list[dict[str, Any]]:
    """The records as the export wrote them before issue 32's columns (one dict each)."""
    candidates = Q(question__item__run=run, question__item__kind=EccvItemKind.CANDIDATE)
    answers: dict[int, list[dict[str, Any]]] = defaultdict(list)
    for item, provider, external_id, label, details, state in (
        Answer.objects.filter(candidates)
        .order_by("question__item_id", "question__position", "question_id", "pk")
        .values_list(
            "question__item_id",
            "assignment__worker__provider",
            "assignment__worker__external_id",
            "label",
            "details",
            "assignment__state",
        )
    ):
        answers[item].append(
            {
                "worker": worker_pseudonym(provider=provider, external_id=external_id),
                "answer": label,
                "reasons": details.get("reasons", []),
                "errors": details.get("errors", []),
                "assignment_state": state,
            }
        )
    proposals: dict[int, list[dict[str, Any]]] = defaultdict(list)
    for item, model, direction, rank in (
        Proposal.objects.filter(item__run=run, item__kind=EccvItemKind.CANDIDATE)
        .order_by("item_id")
        .values_list("item_id", "annotator__name", "direction", "rank")
    ):
        proposals[item].append({"model": model, "direction": direction, "rank": rank})
    for listed in proposals.values():
        listed.sort(key=lambda p: (p["direction"], p["model"], p["rank"]))
    positive = eccv_positive_item_ids(run=run)
    pairs = (
        eccv_judged_pairs(run=run)
        .order_by("positive__coco_id", "caption__coco_id")
        .values_list("pk", "positive__coco_id", "caption__coco_id")
    )
    return [
        {
            "image_id": image,
            "caption_id": caption,
            "positive": pk in positive,
            "answers": answers.get(pk, []),
            "proposals": proposals.get(pk, []),
            "sources": sources.get(f"{image}:{caption}", []),
        }
        for pk, image, caption in pairs
    ]


def reference_table(pairs: list[dict[str, Any]]) -> pa.Table:
    strings, ints = pa.list_(pa.string()), pa.list_(pa.int32())

    def share(labels: list[str]) -> float:
        return round(max(Counter(labels).values()) / len(labels), 4)

    return table_from_columns(
        {
            "image_id": pa.array([p["image_id"] for p in pairs], pa.int64()),
            "caption_id": pa.array([p["caption_id"] for p in pairs], pa.int64()),
            "positive": pa.array([p["positive"] for p in pairs], pa.bool_()),
            "judgments": pa.array([len(p["answers"]) for p in pairs], pa.int32()),
            "agreement": pa.array(
                [share([a["answer"] for a in p["answers"]]) for p in pairs], pa.float64()
            ),
            "answers": pa.array([[a["answer"] for a in p["answers"]] for p in pairs], strings),
            "workers": pa.array([[a["worker"] for a in p["answers"]] for p in pairs], strings),
            "models": pa.array([[m["model"] for m in p["proposals"]] for p in pairs], strings),
            "directions": pa.array(
                [[m["direction"] for m in p["proposals"]] for p in pairs], strings
            ),
            "ranks": pa.array([[m["rank"] for m in p["proposals"]] for p in pairs], ints),
            "sources": pa.array([p["sources"] for p in pairs], strings),
        }
    )


def reference_positives(run: Run) -> dict[str, Any]:
    """`eccv_positives` as it was before issue 32's columns (dicts and sets)."""
    bad_captions, bad_images = eccv_exclusions(run=run)
    query_images = [i for i in run.config["query_images"] if i not in bad_images]
    query_captions = [c for c in run.config["query_captions"] if c not in bad_captions]
    links: dict[tuple[int, int], set[str]] = defaultdict(set)
    if run.config.get("original_positives", True):
        wanted = set(query_images), set(query_captions)
        for image, caption in Caption.objects.filter(dataset=run.dataset).values_list(
            "image__coco_id", "coco_id"
        ):
            if image in wanted[0] or caption in wanted[1]:
                links[(image, caption)].add("coco")
    positive = eccv_positive_item_ids(run=run)
    for pk, image, caption in Item.objects.filter(run=run).values_list(
        "pk", "positive__coco_id", "caption__coco_id"
    ):
        if pk in positive:
            links[(image, caption)].add("human")
    for image, caption in ExternalPositive.objects.filter(run=run).values_list(
        "image__coco_id", "caption__coco_id"
    ):
        links[(image, caption)].add("cxc")
    i2t: dict[int, set[int]] = defaultdict(set)
    t2i: dict[int, set[int]] = defaultdict(set)
    dropped = 0
    for image, caption in links:
        if image in bad_images or caption in bad_captions:
            dropped += 1
            continue
        if image in query_images:
            i2t[image].add(caption)
        if caption in query_captions:
            t2i[caption].add(image)
    return {
        "i2t": {q: sorted(i2t[q]) for q in query_images if i2t.get(q)},
        "t2i": {q: sorted(t2i[q]) for q in query_captions if t2i.get(q)},
        "sources": {f"{i}:{c}": sorted(s) for (i, c), s in links.items()},
        "dropped_by_exclusions": dropped,
        "queries_without_positives": {
            "i2t": sum(1 for q in query_images if not i2t.get(q)),
            "t2i": sum(1 for q in query_captions if not t2i.get(q)),
            "i2t_ids": [q for q in query_images if not i2t.get(q)],
            "t2i_ids": [q for q in query_captions if not t2i.get(q)],
        },
    }


def assert_export_is_the_reference(run: Run, folder: Path) -> list[dict[str, Any]]:
    positives = reference_positives(run)
    assert eccv_positives(run=run) == positives
    pairs = reference_pairs(run, positives["sources"])
    text = (folder / "eccv_judged_pairs.jsonl").read_bytes()
    assert text == ("\n".join(json.dumps(p) for p in pairs) + "\n").encode()
    table = pq.read_table(folder / "data" / "eccv_judged_pairs.parquet")
    want = reference_table(pairs)
    assert table.replace_schema_metadata(None).equals(want)
    manifest = json.loads((folder / "manifest.json").read_text())
    assert manifest["answer_share_percent_by_model_and_rank"] == eccv_answer_shares(run=run)
    counts = manifest["counts"]
    for source in ("cxc", "coco", "human"):
        want_links = sum(1 for s in positives["sources"].values() if source in s)
        assert counts[f"{source}_links"] == want_links
    assert counts["links_dropped_by_exclusions"] == positives["dropped_by_exclusions"]
    assert counts["queries_without_positives"] == positives["queries_without_positives"]
    assert counts["pairs_judged"] == len(pairs) == eccv_judged_pairs(run=run).count()
    for name, direction in (
        ("eccv_image_to_caption.json", "i2t"),
        ("eccv_caption_to_image.json", "t2i"),
    ):
        want_text = json.dumps({str(k): v for k, v in positives[direction].items()})
        assert (folder / name).read_text() == want_text
    # The file's bytes too: the reference table with the file's metadata (its license).
    written = (folder / "data" / "eccv_judged_pairs.parquet").read_bytes()
    assert written == table_parquet_bytes(table=want.replace_schema_metadata(table.schema.metadata))
    return pairs


def _vary(run: Run) -> None:
    """More than one answer to some pairs, answers that do not count, ties, a model name that
    JSON escapes, and imported CxC positives."""
    with connection.cursor() as cur:
        cur.execute(
            "INSERT INTO annotation_worker (provider, external_id, blocked, block_scope,"
            " created_at) VALUES ('local', 'second \"one\" é', false, '', now()) RETURNING id"
        )
        worker = cur.fetchone()[0]
        # Every third HIT a second assignment: approved, rejected, or held by an open review.
        cur.execute(
            "INSERT INTO annotation_assignment (hit_id, worker_id, state, provider_assignment_id,"
            " accepted_at, submitted_at, confirmed, excluded) SELECT h.id, %s,"
            " CASE WHEN h.position %% 9 = 3 THEN 'rejected' ELSE 'approved' END, '', now(),"
            " now(), true, h.position %% 9 = 6 FROM annotation_hit h"
            " JOIN annotation_batch b ON b.id = h.batch_id WHERE b.run_id = %s"
            " AND h.position %% 3 = 0",
            [worker, run.pk],
        )
        cur.execute(
            "INSERT INTO annotation_answer (assignment_id, question_id, choice, label, details,"
            " raw) SELECT a.id, q.id, x.label, x.label, CASE WHEN x.label = 'mostly_no' THEN"
            ' \'{"reasons": ["wrong_description"], "errors": ["count"]}\'::jsonb'
            " ELSE '{}'::jsonb END, x.label FROM annotation_assignment a"
            " JOIN annotation_question q ON q.hit_id = a.hit_id"
            " CROSS JOIN LATERAL (SELECT CASE q.id %% 4 WHEN 0 THEN 'yes' WHEN 1 THEN 'no'"
            " WHEN 2 THEN 'mostly_no' ELSE 'partially_yes' END label) x WHERE a.worker_id = %s",
            [worker],
        )
        cur.execute(
            "INSERT INTO annotation_review (assignment_id, status, reasons, feedback, created_at)"
            " SELECT a.id, 'open', '[]', '', now() FROM annotation_assignment a"
            " JOIN annotation_hit h ON h.id = a.hit_id WHERE a.worker_id = %s"
            " AND h.position %% 9 = 0",
            [worker],
        )
    Annotator.objects.filter(run=run, name="model1").update(name='mödel "1"')
    pairs = list(
        Proposal.objects.filter(item__run=run).values_list("item__positive_id", "item__caption_id")[
            :40
        ]
    )
    for image, caption in pairs[::3]:
        ExternalPositive.objects.get_or_create(
            run=run, image=Image.objects.get(pk=image), caption=Caption.objects.get(pk=caption)
        )


@pytest.fixture
def varied_run() -> Run:
    with connection.cursor() as cursor:
        run_id, _ = fill_rows(cursor.cursor, images=400, queries=60)
    run = Run.objects.get(pk=run_id)
    _vary(run)
    return run


@pytest.mark.parametrize("aggregation", ["majority", "dawid_skene"])
def test_columns_write_the_records_bytes(varied_run, aggregation):
    run = varied_run
    run.config["aggregation"] = aggregation
    run.save(update_fields=["config"])
    export = export_job_write(job_id=job_create(name=ECCV_EXPORT.job_name, run=run).pk)
    assert export is not None
    pairs = assert_export_is_the_reference(run, Path(export.path))
    # The variety is there: several answers to a pair, ties, uncounted answers, CxC links.
    assert any(len(p["answers"]) > 1 for p in pairs)
    assert any(len({a["answer"] for a in p["answers"]}) == len(p["answers"]) == 2 for p in pairs)
    assert {a["assignment_state"] for p in pairs for a in p["answers"]} >= {"rejected", "approved"}
    assert any("cxc" in p["sources"] for p in pairs)
    assert any(m["model"] == 'mödel "1"' for p in pairs for m in p["proposals"])


def test_columns_write_the_simulated_runs_bytes(judged, run_on_commit):  # noqa: F811
    export = export_of(judged, run_on_commit)
    assert_export_is_the_reference(judged, Path(export.path))

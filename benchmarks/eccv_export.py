"""The ECCV Caption export job at 40,000 images from PostgreSQL, against a bare
`COPY (SELECT ...) TO STDOUT` of the rows it reads, in the same run (issue 32: within 5x).

The database is filled with SQL (generate_series): `--images` images with 5 captions each, an
ECCV run made by the flow (`eccv_run_create`: `--queries` image and as many caption queries
drawn, paper gold), 5 models each proposing its top 5 per query in both directions (the models
overlap, so proposals merge into fewer candidate pairs, as the proposal job merges them), one
judgment per candidate on the 4-level scale (Partially YES and Mostly NO with their rationale
follow-ups, stored as the task type's `parse_answer` stores them), in HITs of 18 candidates and
2 paper gold items (an original COCO pair and a random pair), by a real crowd's provider
(`local`). Each measurement runs in a fresh interpreter, the two alternated:
- app: the ECCV export job (`export_job_write`: post-processed positives both directions,
  the judged-pairs JSONL and Parquet record set, manifest with counts and answer shares per
  model and rank, card, Croissant, datasheet);
- bare COPY: the rows the job reads, as it reads them, copied out to a file (`COPY_SQL`): the
  candidate pairs with their COCO ids; every answer to them with its question's order, worker,
  label, follow-ups and what decides whether it counts (assignment state, confirmation,
  exclusion, review); every proposal of the run with its model's name; the captions of the
  queries (their original COCO pairs); since issue 51 the provenance table's rows, one per
  judgment with its provenance columns (`export_harness.PROVENANCE_SELECT`). Until 2026-11-27 it copied the answers alone (with
  their pair's COCO ids): about a fifth of the rows the job reads.

    .venv/bin/python benchmarks/eccv_export.py --database-url postgres://postgres@127.0.0.1:5432/postgres [--repeats 5] [--images 40000] [--queries 5000] [--parts] [--db NAME]

A database named `--db` (default crowdvl_bench_eccv) is created on that server and dropped
afterwards.
"""

from __future__ import annotations

import json
import os
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from benchmarks.export_harness import (  # noqa: E402
    PROVENANCE_SELECT,
    alternated_rounds,
    child_main,
    django_setup,
    export_parser,
    print_sides,
)
from benchmarks.harness import peak_rss, results_tee  # noqa: E402
from benchmarks.import_coco import current_rss  # noqa: E402

DB = "crowdvl_bench_eccv"
MODELS = 5
K = 5
SLOTS = 8  # each query's proposals come from 8 pairs, so the 5 models' top-5 overlap
CANDIDATES_PER_HIT = 18
GOLD_PER_HIT = 2
WORKERS = 300


def _label(key: str) -> str:
    """SQL: a 4-level label drawn from `key` (yes 30 %, partially 20 %, mostly no 20 %, no 30 %)."""
    return (
        f"CASE WHEN ({key}) % 10 < 3 THEN 'yes' WHEN ({key}) % 10 < 5 THEN 'partially_yes'"
        f" WHEN ({key}) % 10 < 7 THEN 'mostly_no' ELSE 'no' END"
    )


def fill_rows(cur: Any, *, images: int, queries: int) -> tuple[int, dict[str, int]]:
    """An ECCV run over `images` images written with SQL through the psycopg cursor `cur` of
    Django's connection (the flow's own calls make the run); returns the run id and the counts
    filled."""
    from annotation.flows.eccv.models import Annotator
    from annotation.flows.eccv.services.runs import eccv_run_create
    from annotation.flows.eccv.settings import eccv_settings
    from annotation.flows.eccv.vocabulary import EccvStage
    from annotation.models import Dataset, Job

    dataset = Dataset.objects.create(
        name="bench", source_file="", checksum="", image_source="coco_url"
    )
    d = dataset.pk
    n_captions = 5 * images
    cur.execute(
        "INSERT INTO annotation_image (dataset_id, coco_id, file_name, coco_url) "
        "SELECT %s, g, 'COCO_val2014_' || lpad(g::text, 12, '0') || '.jpg', '' "
        "FROM generate_series(1, %s) g",
        [d, images],
    )
    cur.execute(
        "INSERT INTO annotation_caption (dataset_id, coco_id, image_id, text) "
        "SELECT %s, g, i.id, 'a caption number ' || g FROM generate_series(1, %s) g "
        "JOIN annotation_image i ON i.dataset_id = %s AND i.coco_id = (g - 1) / 5 + 1",
        [d, n_captions, d],
    )
    run = eccv_run_create(
        dataset=dataset,
        config={
            "image_queries": queries,
            "caption_queries": queries,
            "k": K,
            "models": MODELS,
            "gold_source": "paper",
        },
    )
    r = run.pk
    annotators = [
        Annotator.objects.create(run=run, name=f"model{m}", kind="embeddings", source="bench.npz")
        for m in range(MODELS)
    ]
    a0 = annotators[0].pk
    cur.execute("ANALYZE annotation_image, annotation_caption")
    # Proposals (query, model m, rank r): the pair in slot (m + r) % SLOTS of the query's
    # SLOTS pairs (hashed over the gallery; an image query's own captions are not among them).
    cur.execute(
        "CREATE TEMP TABLE prop AS"
        " SELECT 'i2t' dir, q image, ((q::bigint * %(s)s + (m + r) %% %(s)s) * 7919)"
        "  %% %(nc)s + 1 caption, m, r FROM unnest(%(qi)s::int[]) q,"
        "  generate_series(0, %(models)s - 1) m, generate_series(1, %(k)s) r"
        " UNION ALL SELECT 't2i', ((c::bigint * %(s)s + (m + r) %% %(s)s) * 7907) %% %(ni)s + 1,"
        "  c, m, r FROM unnest(%(qc)s::int[]) c,"
        "  generate_series(0, %(models)s - 1) m, generate_series(1, %(k)s) r",
        {
            "s": SLOTS,
            "nc": n_captions,
            "ni": images,
            "qi": list(eccv_settings(run).query_images),
            "qc": list(eccv_settings(run).query_captions),
            "models": MODELS,
            "k": K,
        },
    )
    cur.execute(
        "INSERT INTO annotation_item (run_id, kind, positive_id, caption_id, tag)"
        " SELECT DISTINCT %s, 'candidate', i.id, c.id, '' FROM prop"
        " JOIN annotation_image i ON i.dataset_id = %s AND i.coco_id = prop.image"
        " JOIN annotation_caption c ON c.dataset_id = %s AND c.coco_id = prop.caption"
        " WHERE c.image_id <> i.id ON CONFLICT DO NOTHING",
        [r, d, d],
    )
    cur.execute("ANALYZE annotation_item")
    cur.execute(
        "INSERT INTO annotation_proposal (item_id, annotator_id, direction, rank)"
        " SELECT it.id, %s + prop.m, prop.dir, prop.r FROM prop"
        " JOIN annotation_image i ON i.dataset_id = %s AND i.coco_id = prop.image"
        " JOIN annotation_caption c ON c.dataset_id = %s AND c.coco_id = prop.caption"
        " JOIN annotation_item it ON it.run_id = %s AND it.kind = 'candidate'"
        "  AND it.positive_id = i.id AND it.caption_id = c.id ON CONFLICT DO NOTHING",
        [a0, d, d, r],
    )
    proposed = cur.rowcount
    cur.execute("SELECT count(*) FROM annotation_item WHERE run_id = %s", [r])
    candidates = cur.fetchone()[0]  # type: ignore[index]
    hits = (candidates + CANDIDATES_PER_HIT - 1) // CANDIDATES_PER_HIT
    # Paper gold per HIT: an original COCO pair (gold positive), a random pair (gold negative).
    cur.execute(
        "INSERT INTO annotation_item (run_id, kind, positive_id, caption_id, tag)"
        " SELECT %(r)s, g.kind, i.id, c.id, '' FROM generate_series(0, %(h)s - 1) h"
        " CROSS JOIN LATERAL (VALUES ('gold_positive', (h * 7 %% %(ni)s) + 1,"
        "  (h * 7 %% %(ni)s) * 5 + 1), ('gold_negative', (h * 13 %% %(ni)s) + 1,"
        "  ((h * 13 %% %(ni)s) * 5 + 5 * (%(ni)s / 2)) %% %(nc)s + 1)) g(kind, image, caption)"
        " JOIN annotation_image i ON i.dataset_id = %(d)s AND i.coco_id = g.image"
        " JOIN annotation_caption c ON c.dataset_id = %(d)s AND c.coco_id = g.caption"
        " ORDER BY h, g.kind DESC",
        {"r": r, "h": hits, "ni": images, "nc": n_captions, "d": d},
    )
    cur.execute("ANALYZE annotation_item, annotation_proposal")
    cur.execute(
        "INSERT INTO annotation_batch (run_id, stage, provider, status, title, items_per_hit,"
        " assignments_per_hit, reward, lifetime_seconds, assignment_duration_seconds,"
        " qualifications, seed, created_at, published_at, auto_approval_delay_seconds,"
        " description, keywords, provider_hit_type_id, options, environment, sync_error)"
        " VALUES (%s, %s, 'local', 'completed', 'bench', %s, 1, 0.50, 604800, 3600,"
        " '{}', 0, now(), now(), 259200, '', '', '', '{}', '', '') RETURNING id",
        [r, EccvStage.JUDGMENT, CANDIDATES_PER_HIT + GOLD_PER_HIT],
    )
    batch = cur.fetchone()[0]  # type: ignore[index]
    cur.execute(
        "INSERT INTO annotation_hit (batch_id, position, status, provider_hit_id,"
        " extra_assignments) SELECT %s, g, 'complete', '', 0 FROM generate_series(0, %s - 1) g",
        [batch, hits],
    )
    # Candidates 18 to a HIT in id order, then the HIT's two gold (made in HIT order).
    cur.execute(
        "INSERT INTO annotation_question (hit_id, item_id, position, swapped)"
        " SELECT h.id, i.id, i.pos, false FROM"
        " (SELECT id, CASE WHEN kind = 'candidate' THEN (rn - 1) / %(c)s ELSE (rn - 1) / 2 END hp,"
        "  CASE WHEN kind = 'candidate' THEN (rn - 1) %% %(c)s ELSE %(c)s + (rn - 1) %% 2 END pos"
        "  FROM (SELECT id, kind, row_number() OVER (PARTITION BY kind = 'candidate' ORDER BY id)"
        "  rn FROM annotation_item WHERE run_id = %(r)s) n) i"
        " JOIN annotation_hit h ON h.batch_id = %(b)s AND h.position = i.hp",
        {"c": CANDIDATES_PER_HIT, "r": r, "b": batch},
    )
    cur.execute(
        "INSERT INTO annotation_worker (provider, external_id, blocked, block_scope, created_at) "
        "SELECT 'local', 'bench-' || g, false, '', now() FROM generate_series(1, %s) g",
        [WORKERS],
    )
    cur.execute("SELECT min(id) FROM annotation_worker WHERE external_id LIKE 'bench-%%'")
    w0 = cur.fetchone()[0]  # type: ignore[index]
    cur.execute(
        "INSERT INTO annotation_assignment (hit_id, worker_id, state, provider_assignment_id,"
        " accepted_at, submitted_at, confirmed, excluded) SELECT h.id, %s + h.position %% %s,"
        " 'approved', '', now(), now(), true, false FROM annotation_hit h WHERE h.batch_id = %s",
        [w0, WORKERS, batch],
    )
    cur.execute("ANALYZE annotation_hit, annotation_question, annotation_assignment")
    # Gold answered right nine times in ten; uncertain answers with their follow-ups.
    label = (
        "CASE WHEN i.kind = 'gold_positive' THEN CASE WHEN i.id %% 10 = 0 THEN 'no' ELSE 'yes'"
        " END WHEN i.kind = 'gold_negative' THEN CASE WHEN i.id %% 10 = 0 THEN 'yes' ELSE 'no'"
        f" END ELSE {_label('i.id * 7 + i.caption_id').replace('%', '%%')} END"
    )
    follow = (
        "CASE WHEN x.label NOT IN ('partially_yes', 'mostly_no') THEN '{}'::jsonb"
        ' WHEN i.id %% 2 = 0 THEN \'{"reasons": ["extra_concepts"], "errors": []}\'::jsonb'
        ' ELSE \'{"reasons": ["wrong_description"], "errors": ["color"]}\'::jsonb END'
    )
    cur.execute(
        "INSERT INTO annotation_answer (assignment_id, question_id, choice, label, details, raw)"
        " SELECT a.id, q.id, x.label, x.label, y.details, CASE WHEN y.details = '{}'::jsonb"
        "  THEN x.label ELSE (jsonb_build_object('answer', x.label) || y.details)::text END"
        " FROM annotation_assignment a JOIN annotation_question q ON q.hit_id = a.hit_id"
        " JOIN annotation_item i ON i.id = q.item_id"
        f" CROSS JOIN LATERAL (SELECT {label} label) x"
        f" CROSS JOIN LATERAL (SELECT {follow} details) y"
        " JOIN annotation_hit h ON h.id = a.hit_id WHERE h.batch_id = %s",
        [batch],
    )
    answers = cur.rowcount
    Job.objects.create(
        name="eccv.propose",
        run=run,
        state="succeeded",
        progress=100.0,
        result={"proposed": proposed},
    )
    counts = {
        "proposals": proposed,
        "candidates": candidates,
        "hits": hits,
        "answers": answers,
        "candidate_answers": candidates,
    }
    print(f"filled: {images:,} images, {json.dumps(counts)}", file=sys.stderr)
    return r, counts


def fill(url: str, images: int, queries: int) -> tuple[int, dict[str, int]]:
    django_setup(url)
    from django.db import connection

    # Django's own connection (autocommit), so the flow's ORM calls see the rows SQL wrote.
    with connection.cursor() as cursor:
        run_id, counts = fill_rows(cursor.cursor, images=images, queries=queries)
        cursor.execute("ANALYZE")  # fresh statistics, as autovacuum would have them
    return run_id, counts


def child_app(url: str, run_id: str) -> dict:
    django_setup(url)
    from annotation.flows.eccv.services.export import ECCV_EXPORT
    from annotation.models import Run
    from annotation.services.jobs.jobs import job_create
    from annotation.services.release.export_jobs import export_job_write

    job = job_create(name=ECCV_EXPORT.job_name, run=Run.objects.get(pk=int(run_id)))
    base = current_rss()
    t = time.perf_counter()
    export = export_job_write(job_id=job.pk)
    seconds = time.perf_counter() - t
    assert export is not None
    counts = export.manifest["counts"]
    lines = (Path(export.path) / "eccv_judged_pairs.jsonl").read_text().count("\n")
    return {
        "seconds": seconds,
        "peak": peak_rss(),
        "base": base,
        "rows": counts["pairs_judged"],
        "lines": lines,
        "merged": counts["pairs_after_merging_duplicates"],
        "proposed": counts["pairs_proposed"],
    }


def child_parts(url: str, run_id: str) -> dict:
    """Where the job's time goes: its parts one after another, each timed alone."""
    django_setup(url)
    from annotation.flows.eccv import selectors
    from annotation.flows.eccv.positive_links import query_originals
    from annotation.flows.eccv.services import export as eccv
    from annotation.flows.eccv.services import judged_columns as jc
    from annotation.models import Run
    from annotation.services.release.release_tables import table_parquet_bytes

    run = Run.objects.get(pk=int(run_id))
    seconds: dict[str, float] = {}

    def timed(name: str, call: Any) -> Any:
        t = time.perf_counter()
        value = call()
        seconds[name] = time.perf_counter() - t
        return value

    timed("  read: candidate pairs (COPY)", lambda: jc._read_items(run))
    timed("  read: answers (COPY)", lambda: jc._read_answers(run))
    timed("  read: proposals (COPY)", lambda: jc._read_proposals(run))
    columns = timed("judged_columns (3 reads + numpy)", lambda: jc.judged_columns(run))
    originals = timed("queries' original pairs (COPY)", lambda: query_originals(run))
    links = timed(
        "positive links (cxc read, exclusions)",
        lambda: selectors.eccv_positive_links(run=run, human=columns.human, originals=originals),
    )
    timed("JSON lines (Arrow)", lambda: jc.pairs_lines(columns, links))
    table = timed("Parquet table (Arrow)", lambda: jc.pairs_table(columns, links))
    timed("  Parquet bytes", lambda: table_parquet_bytes(table=table))
    timed(
        "manifest",
        lambda: eccv._manifest(run=run, links=links, columns=columns, originals=originals),
    )
    return {"seconds": seconds, "peak": peak_rss()}


# The rows the job reads, each copied as it reads them (issue 32: "a COPY of the rows they
# read"): the run's candidate pairs with their COCO ids; every answer to them with its
# question's order, worker, label, follow-ups, and what decides whether it counts
# (assignment state, confirmation, exclusion, review); every proposal of the run with its
# model's name; the captions of the queries (their original COCO pairs).
COPY_SQL = {
    "pairs": (
        "SELECT i.id, p.coco_id, c.coco_id FROM annotation_item i"
        " JOIN annotation_image p ON p.id = i.positive_id"
        " JOIN annotation_caption c ON c.id = i.caption_id"
        " WHERE i.run_id = {run} AND i.kind = 'candidate'"
    ),
    "answers": (
        "SELECT q.item_id, q.position, q.id, ans.id, w.provider, w.external_id, ans.label,"
        " ans.details, a.state, a.confirmed, a.excluded, r.status FROM annotation_answer ans"
        " JOIN annotation_question q ON q.id = ans.question_id"
        " JOIN annotation_item i ON i.id = q.item_id"
        " JOIN annotation_assignment a ON a.id = ans.assignment_id"
        " JOIN annotation_worker w ON w.id = a.worker_id"
        " LEFT JOIN annotation_review r ON r.assignment_id = a.id"
        " WHERE i.run_id = {run} AND i.kind = 'candidate'"
    ),
    "proposals": (
        "SELECT pr.item_id, i.kind, an.name, pr.direction, pr.rank FROM annotation_proposal pr"
        " JOIN annotation_item i ON i.id = pr.item_id"
        " JOIN annotation_annotator an ON an.id = pr.annotator_id WHERE i.run_id = {run}"
    ),
    "query_captions": (
        "SELECT p.coco_id, c.coco_id FROM annotation_caption c"
        " JOIN annotation_image p ON p.id = c.image_id"
        " JOIN annotation_run r ON r.id = {run} AND c.dataset_id = r.dataset_id"
        " WHERE p.coco_id IN (SELECT (jsonb_array_elements_text(config -> 'query_images'))::bigint"
        "  FROM annotation_run WHERE id = {run})"
        " OR c.coco_id IN (SELECT (jsonb_array_elements_text(config -> 'query_captions'))::bigint"
        "  FROM annotation_run WHERE id = {run})"
    ),
    # Since issue 51: the provenance table's rows, one per judgment (every export has them).
    "provenance": PROVENANCE_SELECT,
}


def child_copy(url: str, run_id: str) -> dict:
    import psycopg

    base = current_rss()
    out = Path(tempfile.mkdtemp()) / "rows.tsv"
    rows: dict[str, int] = {}
    with psycopg.connect(url) as conn, conn.cursor() as cur, out.open("wb") as fh:
        t = time.perf_counter()
        for name, sql in COPY_SQL.items():
            rows[name] = 0
            with cur.copy(f"COPY ({sql.format(run=int(run_id))}) TO STDOUT") as copy:
                for data in copy:
                    fh.write(data)
                    rows[name] += bytes(data).count(b"\n")
        seconds = time.perf_counter() - t
    return {"seconds": seconds, "peak": peak_rss(), "base": base, "rows": rows}


CHILDREN = {"app": child_app, "copy": child_copy, "parts": child_parts}


def main() -> None:
    if child_main(CHILDREN):
        return
    parser = export_parser(__doc__, __file__, repeats=5, default_db=DB, db_flag="--db")
    parser.add_argument("--images", type=int, default=40_000)
    parser.add_argument("--queries", type=int, default=5_000)
    args = parser.parse_args()
    results_tee(args.results)
    rounds = alternated_rounds(
        __file__,
        parser=parser,
        database_url=args.database_url,
        database=args.database,
        fill=lambda url: fill(url, args.images, args.queries),
        repeats=args.repeats,
        parts=args.parts,
    )
    results, loads, parts, filled = rounds.results, rounds.loads, rounds.parts, rounds.filled
    # The export must have read what was filled: every candidate judged once, none lost.
    for r in results["app"]:
        got = (r["rows"], r["lines"], r["merged"], r["proposed"])
        want = (filled["candidates"],) * 3 + (filled["proposals"],)
        assert got == want, f"export counts {got} != filled {want}"
    for r in results["copy"]:
        want = {"pairs": filled["candidates"], "answers": filled["candidate_answers"]}
        want["proposals"] = filled["proposals"]
        assert {k: r["rows"][k] for k in want} == want, (r["rows"], filled)
    print(
        f"\nECCV export at {args.images:,} images, {args.queries:,} image + {args.queries:,}"
        f" caption queries, {MODELS} models x top-{K}: {filled['proposals']:,} proposals merged"
        f" into {filled['candidates']:,} judged pairs in {filled['hits']:,} HITs"
        f" ({filled['answers']:,} answers with gold); median of {args.repeats}, fresh process"
        f" each, alternated (1-min load {loads[0]} before, {loads[1]} after); server-side"
        f" binding {'off' if os.environ.get('CROWDVL_DB_SERVER_SIDE_BINDING') == '0' else 'on'}"
    )
    copied = results["copy"][0]["rows"]
    print(
        "bare COPY: the rows the job reads, "
        + ", ".join(f"{name} {n:,}" for name, n in copied.items())
    )
    print_sides(rounds, app_label="ECCV export job")

    if parts is not None:
        print("the job's parts, timed one after another in one more fresh process:")
        for name, value in parts["seconds"].items():
            print(f"  {name:<40}{value:>8.2f} s")


if __name__ == "__main__":
    main()

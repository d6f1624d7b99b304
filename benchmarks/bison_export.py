"""The BISON export job at 40,000 images from PostgreSQL, against a bare `COPY (SELECT ...) TO
STDOUT` of the rows it reads, in the same run (issue 32: within 5x).

The database is filled with SQL (generate_series): `--images` images with 5 captions each,
one image pair per image (its stage-1 neighbour), a stage-2 selection answer per pair (nine
in ten choose a caption and make a triple), and two stage-3 verifiers per triple (one in ten
verifiers picks the negative image, so some triples fail unanimity), by a real crowd's
provider (`local`: a 40k-image run is people's work; a simulated crowd's export also scores
itself against its simulated world in the datasheet, a test-bench extra not timed here). Each measurement runs in
a fresh interpreter, the two alternated:
- app: the BISON export job (`export_job_write`: verified triples, the official JSON, the
  Parquet record set, manifest with stage counts and selector report, CHANGES, card,
  Croissant, datasheet);
- bare COPY: the rows the job reads, copied out to a file: the verification answers with
  their triple's caption and image ids and file names and the answer's worker (its provider
  and id, which the pseudonym is made from), and the selection answers with their pair,
  caption and worker (the selectors' outcomes, the pairs judged), and since issue 51 the
  provenance table's rows, one per judgment with its provenance columns
  (`export_harness.PROVENANCE_COPY_SQL`). The first version of this baseline copied the
  verification answers only.

    .venv/bin/python benchmarks/bison_export.py --database-url postgres://postgres@127.0.0.1:5432/postgres [--repeats 3] [--images 40000] [--parts] [--database crowdvl_bench_bison]

A database (`--database`, default crowdvl_bench_bison) is created on that server and dropped
afterwards. `--parts` then times the job's parts one after another in one more fresh process
and says whether pandas was imported.
"""

from __future__ import annotations

import os
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from benchmarks.export_harness import (  # noqa: E402
    PROVENANCE_COPY_SQL,
    alternated_rounds,
    child_main,
    django_setup,
    export_parser,
    print_sides,
)
from benchmarks.harness import (  # noqa: E402
    PartTimes,
    peak_rss,
    results_tee,
)
from benchmarks.import_coco import current_rss  # noqa: E402

DB = "crowdvl_bench_bison"
PER_HIT = 10
VERIFIERS = 2


def _batch(cur: Any, run: int, stage: str, assignments: int) -> int:
    cur.execute(
        "INSERT INTO annotation_batch (run_id, stage, provider, status, title, items_per_hit,"
        " assignments_per_hit, reward, lifetime_seconds, assignment_duration_seconds,"
        " qualifications, seed, created_at, published_at, auto_approval_delay_seconds,"
        " description, keywords, provider_hit_type_id, options, environment, sync_error)"
        " VALUES (%s, %s, 'local', 'completed', 'bench', %s, %s, 0.10, 604800, 3600,"
        " '{}', 0, now(), now(), 259200, '', '', '', '{}', '', '') RETURNING id",
        [run, stage, PER_HIT, assignments],
    )
    return cur.fetchone()[0]  # type: ignore[no-any-return]


def _hits(cur: Any, *, batch: int, run: int, kind: str, workers: tuple[int, int, int]) -> None:
    """HITs of PER_HIT items of `kind`, their questions, and `count` approved assignments per
    HIT by workers w0 + (position * count + k) mod pool, for workers = (w0, pool, count)."""
    w0, pool, count = workers
    cur.execute(
        "INSERT INTO annotation_hit (batch_id, position, status, provider_hit_id,"
        " extra_assignments) SELECT %s, g, 'complete', '', 0 FROM generate_series(0,"
        " (SELECT (count(*) + %s - 1) / %s - 1 FROM annotation_item WHERE run_id = %s"
        " AND kind = %s)) g",
        [batch, PER_HIT, PER_HIT, run, kind],
    )
    cur.execute(
        "INSERT INTO annotation_question (hit_id, item_id, position, swapped)"
        " SELECT h.id, i.id, (i.rn - 1) %% %s, false FROM"
        " (SELECT id, row_number() OVER (ORDER BY id) rn FROM annotation_item"
        "  WHERE run_id = %s AND kind = %s) i"
        " JOIN annotation_hit h ON h.batch_id = %s AND h.position = (i.rn - 1) / %s",
        [PER_HIT, run, kind, batch, PER_HIT],
    )
    cur.execute(
        "INSERT INTO annotation_assignment (hit_id, worker_id, state, provider_assignment_id,"
        " accepted_at, submitted_at, confirmed, excluded) SELECT h.id,"
        " %s + (h.position * %s + k) %% %s, 'approved', '', now(), now(), true, false"
        " FROM annotation_hit h CROSS JOIN generate_series(0, %s - 1) k WHERE h.batch_id = %s",
        [w0, count, pool, count, batch],
    )
    cur.execute("ANALYZE annotation_hit, annotation_question, annotation_assignment")


def fill_rows(cur: Any, *, images: int) -> int:
    """A BISON run over `images` images written with SQL through the psycopg cursor `cur`
    (Django set up); returns the run id."""
    from annotation.flows.bison.vocabulary import BisonStage
    from annotation.models import Dataset
    from annotation.services.runs.runs import run_create

    dataset = Dataset.objects.create(
        name="bench", source_file="", checksum="", image_source="coco_url"
    )
    run = run_create(dataset=dataset, kind="bison").pk
    d = dataset.pk
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
        [d, 5 * images, d],
    )
    cur.execute("ANALYZE annotation_image, annotation_caption")
    cur.execute(
        "INSERT INTO annotation_worker (provider, external_id, blocked, block_scope, created_at) "
        "SELECT 'local', 'bench-' || g, false, '', now() FROM generate_series(1, 600) g"
    )
    cur.execute("SELECT min(id) FROM annotation_worker WHERE external_id LIKE 'bench-%%'")
    w0 = cur.fetchone()[0]  # type: ignore[index]
    # Stage 1: each image paired with the next (its nearest neighbour here).
    cur.execute(
        "INSERT INTO annotation_item (run_id, kind, positive_id, negative_id, tag, similarity)"
        " SELECT %s, 'image_pair', i.id, n.id, '', 0.5 FROM annotation_image i"
        " JOIN annotation_image n ON n.dataset_id = i.dataset_id"
        " AND n.coco_id = i.coco_id %% %s + 1 WHERE i.dataset_id = %s",
        [run, images, d],
    )
    cur.execute("ANALYZE annotation_item")
    selection = _batch(cur, run, BisonStage.SELECTION, 1)
    _hits(cur, batch=selection, run=run, kind="image_pair", workers=(w0, 200, 1))
    # Stage 2: nine pairs in ten get a caption of their positive image.
    cur.execute(
        "INSERT INTO annotation_answer (assignment_id, question_id, choice, label, caption_id,"
        " details, raw) SELECT a.id, q.id, x.label, x.label, x.caption, '{}', x.label"
        " FROM annotation_assignment a JOIN annotation_question q ON q.hit_id = a.hit_id"
        " JOIN annotation_item i ON i.id = q.item_id"
        " JOIN annotation_caption c ON c.image_id = i.positive_id AND c.coco_id %% 5 = 1"
        " CROSS JOIN LATERAL (SELECT CASE WHEN i.id %% 10 = 0 THEN 'none' ELSE 'caption' END"
        "  label, CASE WHEN i.id %% 10 = 0 THEN NULL ELSE c.id END caption) x"
        " JOIN annotation_hit h ON h.id = a.hit_id WHERE h.batch_id = %s",
        [selection],
    )
    cur.execute(
        "INSERT INTO annotation_item (run_id, kind, positive_id, negative_id, caption_id,"
        " source_id, tag) SELECT %s, 'triple', i.positive_id, i.negative_id, ans.caption_id,"
        " i.id, '' FROM annotation_answer ans JOIN annotation_question q ON q.id ="
        " ans.question_id JOIN annotation_item i ON i.id = q.item_id"
        " JOIN annotation_hit h ON h.id = q.hit_id"
        " WHERE h.batch_id = %s AND ans.label <> 'none' ORDER BY i.id",
        [run, selection],
    )
    cur.execute("ANALYZE annotation_item, annotation_answer")
    verification = _batch(cur, run, BisonStage.VERIFICATION, VERIFIERS)
    _hits(cur, batch=verification, run=run, kind="triple", workers=(w0 + 200, 400, VERIFIERS))
    # Stage 3: one verifier in ten picks the negative image.
    cur.execute(
        "INSERT INTO annotation_answer (assignment_id, question_id, choice, label, details,"
        " raw) SELECT a.id, q.id, x.label, x.label, '{}', x.label"
        " FROM annotation_assignment a JOIN annotation_question q ON q.hit_id = a.hit_id"
        " CROSS JOIN LATERAL (SELECT CASE WHEN (q.item_id + a.worker_id) %% 10 = 0"
        "  THEN 'negative' ELSE 'positive' END label) x"
        " JOIN annotation_hit h ON h.id = a.hit_id WHERE h.batch_id = %s",
        [verification],
    )
    cur.execute("SELECT count(*) FROM annotation_item WHERE run_id = %s AND kind = 'triple'", [run])
    triples = cur.fetchone()[0]  # type: ignore[index]
    print(f"filled: {images:,} images, {triples:,} triples", file=sys.stderr)
    return run


def fill(url: str, images: int) -> int:
    django_setup(url)
    import psycopg

    with psycopg.connect(url) as conn, conn.cursor() as cur:
        run_id = fill_rows(cur, images=images)
        conn.commit()
        cur.execute("ANALYZE")  # fresh statistics, as autovacuum would have them
    return run_id


def child_app(url: str, run_id: str) -> dict:
    django_setup(url)
    from annotation.flows.bison.services.export import JOB_NAME
    from annotation.models import Run
    from annotation.services.jobs.jobs import job_create
    from annotation.services.release.export_jobs import export_job_write

    job = job_create(name=JOB_NAME, run=Run.objects.get(pk=int(run_id)))
    base = current_rss()
    t = time.perf_counter()
    export = export_job_write(job_id=job.pk)
    seconds = time.perf_counter() - t
    assert export is not None
    return {
        "seconds": seconds,
        "peak": peak_rss(),
        "base": base,
        "rows": export.manifest["records"],
    }


def child_parts(url: str, run_id: str) -> dict:
    """Where the job's time goes: its parts one after another, each timed alone (the run has
    earlier versions by then: CHANGES compares with the newest)."""
    django_setup(url)
    from annotation.flows.bison import tally as bison
    from annotation.flows.bison.services import export
    from annotation.models import Export, Run
    from annotation.selectors.work.run_texts import instructions_record
    from annotation.services.release.croissant import croissant_write
    from annotation.services.release.dataset_card import card_write
    from annotation.services.release.datasheet import datasheet_write
    from annotation.services.release.export_jobs import export_manifest_crowd
    from annotation.services.release.release_changes import release_changes
    from annotation.services.release.release_tables import release_tables_write
    from annotation.services.release.release_terms import release_people, release_terms

    parts = PartTimes()
    timed = parts.timed
    run = Run.objects.get(pk=int(run_id))
    triples = timed(
        "triples read (COPY into Arrow)",
        lambda: bison.read_triples(run=run, columns=export._TRIPLE_COLUMNS),
    )
    tally = timed(
        "tally (two answer reads, numpy)", lambda: bison.bison_tally(run=run, triples=triples)
    )
    timed("  of which verification answers", lambda: bison._verification_answers(run))
    records = timed("records (the reads again, shuffle)", lambda: export.BisonRecords(run=run))
    pks = records.tally.pks[records.tally.verified].tolist()
    timed("  of which the seeded shuffle", lambda: export._swapped(seed=0, pks=pks))
    data = timed("official JSON", lambda: records.document(source="coco", split="val2014"))
    table = timed("Parquet table", lambda: records.table(run=run))
    manifest = timed(
        "manifest",
        lambda: export._manifest(run=run, records=records.rows, checksum="", name="", tally=tally),
    )
    timed("  of which stage counts", lambda: export.bison_stage_counts(run=run, tally=tally))
    timed("  of which consent and pay", lambda: export_manifest_crowd(run=run))
    folder = _scratch()
    (folder / "x.json").write_bytes(data)
    tables = {"bison_triples": table}
    terms = timed(
        "release terms, instructions", lambda: (release_terms(run=run), instructions_record(run))
    )[0]
    manifest["record_sets"] = timed(
        "Parquet file written",
        lambda: release_tables_write(folder=folder, tables=tables, license=terms["license"]),
    )
    previous = Export.objects.filter(run=run).order_by("-version").first()
    manifest["changes"] = timed(
        "CHANGES against the previous version",
        lambda: release_changes(
            previous=previous, tables=tables, keys=export.BISON_EXPORT.record_keys
        ),
    )
    timed("datasheet", lambda: datasheet_write(folder=folder, run=run, manifest=manifest, flow="B"))
    common = {"run": run, "manifest": manifest, "tables": tables, "title": "B", "paper": "",
              "version": 2, "terms": terms}  # fmt: skip
    timed("dataset card", lambda: card_write(folder=folder, task_categories=(), **common))
    timed(
        "croissant.json",
        lambda: croissant_write(folder=folder, people=release_people(run=run), **common),
    )
    return {"seconds": parts.seconds, "peak": peak_rss(), "pandas": "pandas" in sys.modules}


# The rows the job reads, copied out: the verification answers with their triple's caption,
# images and file names and the answer's worker (with the provider and id its pseudonym is
# made from), and the selection answers with their pair, caption and worker (the selectors'
# outcomes and the pairs judged). The first version of this baseline left the second out.
COPY_SQL = (
    "COPY (SELECT i.id, i.source_id, c.coco_id, p.coco_id, p.file_name, n.coco_id, n.file_name,"
    " a.id, a.worker_id, w.provider, w.external_id, ans.label FROM annotation_answer ans"
    " JOIN annotation_question q ON q.id = ans.question_id"
    " JOIN annotation_item i ON i.id = q.item_id"
    " JOIN annotation_caption c ON c.id = i.caption_id"
    " JOIN annotation_image p ON p.id = i.positive_id"
    " JOIN annotation_image n ON n.id = i.negative_id"
    " JOIN annotation_assignment a ON a.id = ans.assignment_id"
    " JOIN annotation_worker w ON w.id = a.worker_id"
    " WHERE i.run_id = {run} AND i.kind = 'triple') TO STDOUT",
    "COPY (SELECT q.item_id, i.kind, ans.caption_id, ans.label, a.worker_id, a.state"
    " FROM annotation_answer ans JOIN annotation_question q ON q.id = ans.question_id"
    " JOIN annotation_item i ON i.id = q.item_id"
    " JOIN annotation_hit h ON h.id = q.hit_id JOIN annotation_batch b ON b.id = h.batch_id"
    " JOIN annotation_assignment a ON a.id = ans.assignment_id"
    " WHERE b.run_id = {run} AND b.stage = 'bison_selection') TO STDOUT",
    # Since issue 51: the provenance table's rows, one per judgment (every export has them).
    PROVENANCE_COPY_SQL,
)


def _scratch() -> Path:
    """A folder for a child's files beside the run's media (removed with it at the end)."""
    return Path(tempfile.mkdtemp(dir=Path(os.environ["CROWDVL_MEDIA_ROOT"]).parent))


def child_copy(url: str, run_id: str) -> dict:
    import psycopg

    base = current_rss()
    out = _scratch() / "rows.tsv"
    rows = 0
    with psycopg.connect(url) as conn, conn.cursor() as cur, out.open("wb") as fh:
        t = time.perf_counter()
        for sql in COPY_SQL:
            with cur.copy(sql.format(run=int(run_id))) as copy:
                for data in copy:
                    fh.write(data)
                    rows += bytes(data).count(b"\n")
        seconds = time.perf_counter() - t
    return {"seconds": seconds, "peak": peak_rss(), "base": base, "rows": rows}


CHILDREN = {"app": child_app, "copy": child_copy, "parts": child_parts}


def main() -> None:
    if child_main(CHILDREN):
        return
    parser = export_parser(__doc__, __file__, repeats=3, default_db=DB, db_flag="--database")
    parser.add_argument("--images", type=int, default=40_000)
    args = parser.parse_args()
    results_tee(args.results)
    rounds = alternated_rounds(
        __file__,
        parser=parser,
        database_url=args.database_url,
        database=args.database,
        fill=lambda url: (fill(url, args.images), None),
        repeats=args.repeats,
        parts=args.parts,
    )
    results, loads, parts = rounds.results, rounds.loads, rounds.parts
    print(
        f"\nBISON export at {args.images:,} images: {results['app'][0]['rows']:,} records from"
        f" {results['copy'][0]['rows']:,} answer rows (verification and selection) copied by the"
        f" baseline; median of {args.repeats},"
        f" fresh process each, alternated (1-min load {loads[0]} before, {loads[1]} after)"
    )
    print_sides(rounds, app_label="BISON export job")
    if parts is not None:
        print(
            "the job's parts, timed one after another in one more fresh process"
            f" (pandas imported: {'yes' if parts['pandas'] else 'no'}):"
        )
        for name, value in parts["seconds"].items():
            print(f"  {name:<40}{value:>8.3f} s")


if __name__ == "__main__":
    main()

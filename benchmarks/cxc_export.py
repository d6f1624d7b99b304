"""CxC aggregation + export of CxC's full count of ratings (1,335,475 over 267,095 pairs) from
PostgreSQL, against a bare `COPY (SELECT ...) TO STDOUT` of the same rows in the same run.

The database is filled with SQL (generate_series): 5,000 images x 5 captions, 267,095 rating
pairs over the three tasks, HITs of 10 pairs with 5 submitted assignments each, one rating per
pair and rater. Each measurement runs in a fresh interpreter (its own peak RSS):
- app: the CxC export job (`export_job_write`: counted ratings read, averaged, three CSVs, ratings.jsonl,
  agreement per task, the scale model's CSV, manifest, Parquet, CHANGES against the previous
  repeat's version, card, Croissant, datasheet);
- bare COPY: the same answer rows (item, stage, worker, rating) copied out to a file, then
  (since issue 51) the provenance table's rows, one per judgment with its provenance columns
  (`export_harness.PROVENANCE_COPY_SQL`): the job reads both; the ratio to the ratings' COPY
  alone (the baseline before) is printed too;
- in order: the job with `CROWDVL_EXPORT_BESIDE=0`, every step in order (no thread beside);
- again: the job a second time in one process (a worker's later export): its own peak above
  what the first left;
- dev: the job with pandas importable. The job's children run as `pip install .` installs the
  package, whose dependencies leave pandas out; the dev extras bring it, and pyarrow then
  imports it (about 30 MB) on its first conversion in a process.

    .venv/bin/python benchmarks/cxc_export.py --database-url postgres://postgres@127.0.0.1:5432/postgres [--repeats 5] [--pairs 267095] [--db crowdvl_bench_cxc] [--parts]

A database named by `--db` (default crowdvl_bench_cxc) is created on that server and dropped
afterwards. `--parts` then times the job's parts in one more fresh process: the job itself,
run once more (a version with CHANGES against the previous), its steps timed where they are
called, with the resident memory after each.
"""

from __future__ import annotations

import os
import statistics
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from benchmarks.export_harness import (  # noqa: E402
    alternated_rounds,
    child_main,
    django_setup,
    export_parser,
    print_sides,
    provenance_copy,
)
from benchmarks.harness import fmt_mb, not_installed, peak_rss, results_tee  # noqa: E402
from benchmarks.import_coco import current_rss  # noqa: E402

DB = "crowdvl_bench_cxc"
RATERS = 5
PER_HIT = 10


def fill(url: str, pairs: int) -> int:
    """The run's rows, written with SQL; returns the run id."""
    django_setup(url)
    import psycopg

    with psycopg.connect(url) as conn, conn.cursor() as cur:
        run_id = fill_rows(cur, pairs=pairs, raters=RATERS)
        conn.commit()
        # Fresh statistics, as autovacuum would have them: both sides plan with them.
        cur.execute("ANALYZE")
    return run_id


def fill_rows(cur: Any, *, pairs: int, raters: int) -> int:
    """A CxC run with `pairs` rated pairs over the three tasks, `raters` ratings each, written
    with SQL through the psycopg cursor `cur` (Django set up); returns the run id."""
    from annotation.flows.cxc.services.sampling import cxc_run_create
    from annotation.models import Dataset

    dataset = Dataset.objects.create(
        name="bench", source_file="", checksum="", image_source="coco_url"
    )
    run = cxc_run_create(dataset=dataset)
    stages = (("cxc_sis", "i2i_csim"), ("cxc_sts", "c2c_isim"), ("cxc_sits", "c2i_intrasim"))
    per_stage = pairs // 3
    d, r = dataset.pk, run.pk
    cur.execute(
        "INSERT INTO annotation_image (dataset_id, coco_id, file_name, coco_url) "
        "SELECT %s, g, 'COCO_val2014_' || lpad(g::text, 12, '0') || '.jpg', '' "
        "FROM generate_series(1, 5000) g",
        [d],
    )
    cur.execute(
        "INSERT INTO annotation_caption (dataset_id, coco_id, image_id, text) "
        "SELECT %s, g, i.id, 'a caption number ' || g FROM generate_series(1, 25000) g "
        "JOIN annotation_image i ON i.dataset_id = %s AND i.coco_id = (g - 1) / 5 + 1",
        [d, d],
    )
    cur.execute("SELECT min(id) FROM annotation_image WHERE dataset_id = %s", [d])
    img0 = cur.fetchone()[0]  # type: ignore[index]
    cur.execute("SELECT min(id) FROM annotation_caption WHERE dataset_id = %s", [d])
    cap0 = cur.fetchone()[0]  # type: ignore[index]
    cur.execute(
        "INSERT INTO annotation_worker (provider, external_id, blocked, block_scope, created_at) "
        "SELECT 'simulated', 'bench-' || g, false, '', now() FROM generate_series(1, 500) g"
    )
    cur.execute("SELECT min(id) FROM annotation_worker WHERE external_id LIKE 'bench-%%'")
    w0 = cur.fetchone()[0]  # type: ignore[index]
    for stage, method in stages:
        cur.execute(
            "INSERT INTO annotation_batch (run_id, stage, provider, status, title, items_per_hit,"
            " assignments_per_hit, reward, lifetime_seconds, assignment_duration_seconds,"
            " qualifications, seed, created_at, published_at, auto_approval_delay_seconds,"
            " description, keywords, provider_hit_type_id, options, environment, sync_error)"
            " VALUES (%s, %s, 'simulated', 'completed', 'bench', %s, %s, 0.10, 604800, 3600,"
            " '{}', 0, now(), now(), 259200, '', '', '', '{}', '', '') RETURNING id",
            [r, stage, PER_HIT, raters],
        )
        batch = cur.fetchone()[0]  # type: ignore[index]
        # Every pair once, as in CxC (a repeated pair would make the release's CHANGES
        # comparison match each copy with every other).
        pair_sql = {
            "cxc_sis": "%(img0)s + g %% 5000, %(img0)s + (g %% 5000 + 1 + g / 5000) %% 5000,"
            " NULL, NULL",
            "cxc_sts": "%(img0)s + g %% 5000, %(img0)s + (g * 7 + 1) %% 5000,"
            " %(cap0)s + g %% 25000, %(cap0)s + (g %% 25000 + 1 + g / 25000) %% 25000",
            "cxc_sits": "%(img0)s + (g %% 25000 / 5 + 1 + g / 25000) %% 5000, NULL,"
            " %(cap0)s + g %% 25000, NULL",
        }[stage]
        cur.execute(
            "INSERT INTO annotation_item (run_id, kind, positive_id, negative_id, caption_id,"
            " caption2_id, tag, similarity) SELECT %(run)s, 'rating_pair', "
            + pair_sql
            + ", %(tag)s, 0.5 FROM generate_series(0, %(n)s - 1) g",
            {"run": r, "img0": img0, "cap0": cap0, "tag": method, "n": per_stage},
        )
        cur.execute(
            "INSERT INTO annotation_hit (batch_id, position, status, provider_hit_id,"
            " extra_assignments) SELECT %s, g, 'complete', '', 0"
            " FROM generate_series(0, (%s + %s - 1) / %s - 1) g",
            [batch, per_stage, PER_HIT, PER_HIT],
        )
        cur.execute(
            "INSERT INTO annotation_question (hit_id, item_id, position, swapped)"
            " SELECT h.id, i.id, (i.rn - 1) %% %s, false FROM"
            " (SELECT id, row_number() OVER (ORDER BY id) rn FROM annotation_item"
            "  WHERE run_id = %s AND tag = %s) i"
            " JOIN annotation_hit h ON h.batch_id = %s AND h.position = (i.rn - 1) / %s",
            [PER_HIT, r, method, batch, PER_HIT],
        )
        cur.execute(
            "INSERT INTO annotation_assignment (hit_id, worker_id, state, provider_assignment_id,"
            " accepted_at, submitted_at, confirmed, excluded) SELECT h.id,"
            " %s + (h.position * 5 + k) %% 500, 'approved', '', now(), now(), true, false"
            " FROM annotation_hit h CROSS JOIN generate_series(0, %s - 1) k WHERE h.batch_id = %s",
            [w0, raters, batch],
        )
    cur.execute(
        "INSERT INTO annotation_answer (assignment_id, question_id, choice, label, details, raw)"
        " SELECT a.id, q.id, l, l, '{}', l FROM annotation_assignment a"
        " JOIN annotation_question q ON q.hit_id = a.hit_id"
        " CROSS JOIN LATERAL (SELECT ((q.item_id * 31 + a.worker_id * 17) % 6)::text l) x"
    )
    cur.execute("SELECT count(*) FROM annotation_answer")
    answers = cur.fetchone()[0]  # type: ignore[index]
    print(f"filled: {pairs:,} pairs, {answers:,} ratings", file=sys.stderr)
    return run.pk


def child_in_order(url: str, run_id: str) -> dict:
    """The job with CROWDVL_EXPORT_BESIDE off: every step in order."""
    os.environ["CROWDVL_EXPORT_BESIDE"] = "0"
    return child_app(url, run_id)


def child_dev(url: str, run_id: str) -> dict:
    """The job where pandas is installed (the dev extras'): pyarrow imports it."""
    return child_app(url, run_id, pandas=True)


def child_again(url: str, run_id: str) -> dict:
    """The job a second time in one process, as a worker's later export: what the first
    left (its imports, the allocators' kept pages) is in the base, its peak its own."""
    return child_app(url, run_id, again=True)


def child_app(url: str, run_id: str, *, pandas: bool = False, again: bool = False) -> dict:
    """The job as `pip install .` installs the package: without pandas."""
    if not pandas:
        not_installed("pandas")
    django_setup(url)
    from annotation.flows.cxc.services.export import JOB_NAME
    from annotation.models import Run
    from annotation.services.jobs.jobs import job_create
    from annotation.services.release.export_jobs import export_job_write
    from annotation.services.release.memory import memory_release

    if again:
        export_job_write(job_id=job_create(name=JOB_NAME, run=Run.objects.get(pk=int(run_id))).pk)
        memory_release()
        _peak_reset()
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
        "rows": export.manifest["ratings"],
    }


# The job's steps timed in place: (module, function), in the order the job starts them. Steps
# marked in BESIDE run in a helper thread beside others (services/release/beside.py).
PARTS = (
    ("annotation.services.release.export_jobs", "datasheet_run"),
    ("annotation.services.release.export_jobs", "label_provenance_table"),
    ("annotation.flows.cxc.services.export", "_reads"),
    ("annotation.flows.cxc.services.export", "cxc_rating_arrays"),
    ("annotation.flows.cxc.services.export", "_ratings_jsonl"),
    ("annotation.flows.cxc.services.export", "_scale_model"),
    ("annotation.flows.cxc.services.export", "cxc_agreement"),
    ("annotation.flows.cxc.services.export", "_pair_files"),
    ("annotation.services.release.exports", "release_tables_write"),
    ("annotation.services.release.exports", "release_changes"),
    ("annotation.services.release.exports", "datasheet_write"),
    ("annotation.services.release.exports", "card_write"),
    ("annotation.services.release.exports", "croissant_write"),
)
BESIDE = {"datasheet_run", "_reads", "_ratings_jsonl", "cxc_agreement"}


def child_parts(url: str, run_id: str) -> dict:
    """Where the job's time goes: the job run once more, each of its steps (PARTS) timed
    where the job calls it (a step called per file adds up), and the resident memory after
    it; what no step covers is the rest."""
    not_installed("pandas")
    django_setup(url)
    import importlib

    from annotation.flows.cxc.services.export import JOB_NAME
    from annotation.models import Run
    from annotation.services.jobs.jobs import job_create
    from annotation.services.release.export_jobs import export_job_write

    seconds: dict[str, float] = {}
    cpu: dict[str, float] = {}  # this process's CPU time (the database's is not in it)
    rss: dict[str, int] = {}
    peaks: dict[str, int] = {}

    top = [0]  # the job's peak: the kernel's count restarts at each step

    def timed(name: str, call: Any) -> Any:
        def wrapper(*args: Any, **kwargs: Any) -> Any:
            top[0] = max(top[0], _peak_now())
            _peak_reset()
            t, c = time.perf_counter(), time.process_time()
            try:
                return call(*args, **kwargs)
            finally:
                seconds[name] = seconds.get(name, 0.0) + time.perf_counter() - t
                cpu[name] = cpu.get(name, 0.0) + time.process_time() - c
                rss[name] = current_rss()
                peaks[name] = max(peaks.get(name, 0), _peak_now())

        return wrapper

    for module_name, attr in PARTS:
        module = importlib.import_module(module_name)
        setattr(module, attr, timed(attr, getattr(module, attr)))
    job = job_create(name=JOB_NAME, run=Run.objects.get(pk=int(run_id)))
    base = current_rss()
    t, c = time.perf_counter(), time.process_time()
    export_job_write(job_id=job.pk)
    total, total_cpu = time.perf_counter() - t, time.process_time() - c
    seconds["the whole job"], cpu["the whole job"] = total, total_cpu
    peak = max(top[0], _peak_now())
    return {
        "seconds": seconds,
        "cpu": cpu,
        "rss": rss,
        "peaks": peaks,
        "base": base,
        "peak": peak,
    }


def _peak_reset() -> None:
    """Start the kernel's count of this process's peak resident memory (VmHWM) afresh."""
    Path("/proc/self/clear_refs").write_text("5")


def _peak_now() -> int:
    """This process's peak resident memory since the last `_peak_reset`, in bytes."""
    for line in Path("/proc/self/status").read_text().splitlines():
        if line.startswith("VmHWM:"):
            return int(line.split()[1]) * 1024
    return 0


def child_copy(url: str, run_id: str) -> dict:
    import psycopg

    base = current_rss()
    out = Path(tempfile.mkdtemp()) / "ratings.tsv"
    rows = 0
    with psycopg.connect(url) as conn, conn.cursor() as cur, out.open("wb") as fh:
        t = time.perf_counter()
        with cur.copy(
            "COPY (SELECT q.item_id, b.stage, a.worker_id, ans.label FROM annotation_answer ans"
            " JOIN annotation_question q ON q.id = ans.question_id"
            " JOIN annotation_hit h ON h.id = q.hit_id JOIN annotation_batch b ON b.id = h.batch_id"
            " JOIN annotation_assignment a ON a.id = ans.assignment_id"
            f" WHERE b.run_id = {int(run_id)}) TO STDOUT"
        ) as copy:
            for data in copy:
                fh.write(data)
                rows += bytes(data).count(b"\n")
        ratings_seconds = time.perf_counter() - t
        provenance_rows = provenance_copy(cur, int(run_id), fh)
        seconds = time.perf_counter() - t
    return {
        "seconds": seconds,
        "ratings_seconds": ratings_seconds,
        "peak": peak_rss(),
        "base": base,
        "rows": rows,
        "provenance_rows": provenance_rows,
    }


CHILDREN = {
    "app": child_app,
    "copy": child_copy,
    "parts": child_parts,
    "in_order": child_in_order,
    "dev": child_dev,
    "again": child_again,
}


def main() -> None:
    if child_main(CHILDREN):
        return
    parser = export_parser(__doc__, __file__, repeats=3, default_db=DB, db_flag="--db")
    parser.add_argument("--pairs", type=int, default=267_095)
    args = parser.parse_args()
    results_tee(args.results)
    rounds = alternated_rounds(
        __file__,
        parser=parser,
        database_url=args.database_url,
        database=args.database,
        fill=lambda url: (fill(url, args.pairs), None),
        repeats=args.repeats,
        parts=args.parts,
        also=("in_order", "dev", "again"),
    )
    results, loads, parts = rounds.results, rounds.loads, rounds.parts
    print(
        f"\nCxC export of {results['app'][0]['rows']:,} ratings, median of {args.repeats}, fresh "
        f"process each, alternated (1-min load average {loads[0]} before, {loads[1]} after)"
    )
    print_sides(
        rounds,
        app_label="CxC export job (every release file)",
        also={
            "in_order": "the same, CROWDVL_EXPORT_BESIDE=0",
            "dev": "the same, pandas installed (dev)",
            "again": "the same, a process's second export",
        },
    )
    copies = results["copy"]
    print(
        f"the baseline: {copies[0]['rows']:,} rating rows, then {copies[0]['provenance_rows']:,}"
        " provenance rows; against the ratings' COPY alone (the baseline before issue 51):"
        f" {statistics.median(a['seconds'] / c['ratings_seconds'] for a, c in zip(results['app'], copies, strict=True)):.2f}x"
        " (rounds "
        + ", ".join(
            f"{a['seconds'] / c['ratings_seconds']:.2f}"
            for a, c in zip(results["app"], copies, strict=True)
        )
        + ")"
    )
    if parts is not None:
        print(
            "the job's parts, timed where the job calls them, in one more fresh process"
            " (a version with CHANGES against the previous); resident memory above the job's"
            " start after the step and at the step's peak. Steps marked | run in a helper"
            " thread beside the others: times overlap, and cpu s counts every thread of the"
            " process while the step ran:"
        )
        print(f"  {'step':<44}{'s':>8}{'cpu s':>8}{'after MB':>10}{'peak MB':>9}")
        for name, value in parts["seconds"].items():
            after, peak = parts["rss"].get(name), parts["peaks"].get(name)
            grown = "" if after is None else f"{fmt_mb(after - parts['base']):>10}"
            top = "" if peak is None else f"{fmt_mb(peak - parts['base']):>9}"
            label = f"| {name}" if name in BESIDE else name
            print(f"  {label:<44}{value:>8.2f}{parts['cpu'][name]:>8.2f}{grown}{top}")
        print(f"  peak growth of that process: {fmt_mb(parts['peak'] - parts['base'])} MB")


if __name__ == "__main__":
    main()

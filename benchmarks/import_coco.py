"""COCO captions import: the app's import (stream, validate, COPY) against a bare COPY.

Writes synthetic COCO-shaped files the size of captions_val2014.json (40,504 images,
202,520 captions) and N times larger, then for each measures, each in a fresh interpreter:

- app: `dataset_import` (streamed parse, full validation, COPY in one transaction);
- baseline: `json.load` of the file, then psycopg 3 COPY of the same rows into the same
  tables, timed whole (and the COPY alone, on its own row).

Prints the median seconds and the peak RSS of each. Needs PostgreSQL (COPY):

    .venv/bin/python benchmarks/import_coco.py --database-url postgres://postgres@127.0.0.1:5432/postgres \
        [--repeats 3] [--scales 1,5] [--database-name crowdvl_bench_import]

A database named by --database-name (default crowdvl_bench_import) is created on that server
and dropped afterwards; give each concurrent run its own.
"""

from __future__ import annotations

import argparse
import json
import os
import random
import statistics
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from benchmarks.harness import fmt_mb, in_subprocess, peak_rss, results_argument, results_tee  # noqa: E402

DB = "crowdvl_bench_import"
VAL2014_IMAGES, CAPTIONS_PER_IMAGE = 40504, 5


def write_synthetic(path: Path, *, images: int, seed: int = 0) -> None:
    """A COCO-shaped file written record by record (the generator never holds it whole)."""
    rng = random.Random(seed)
    words = [f"w{i}" for i in range(5000)]
    with path.open("w") as fh:
        fh.write('{"info": {"description": "synthetic"}, "licenses": [], "images": [')
        for i in range(1, images + 1):
            image = {
                "id": i,
                "file_name": f"COCO_val2014_{i:012d}.jpg",
                "coco_url": f"http://images.cocodataset.org/val2014/COCO_val2014_{i:012d}.jpg",
                "width": 640,
                "height": 480,
                "date_captured": "2013-11-14 16:28:13",
                "license": 3,
            }
            fh.write(("," if i > 1 else "") + json.dumps(image))
        fh.write('], "annotations": [')
        cid = 0
        for i in range(1, images + 1):
            for _ in range(CAPTIONS_PER_IMAGE):
                cid += 1
                text = "A " + " ".join(rng.choices(words, k=9)) + " on a table."
                row = {"image_id": i, "id": cid, "caption": text}
                fh.write(("," if cid > 1 else "") + json.dumps(row))
        fh.write("]}")


def _django(url: str) -> None:
    os.environ["DATABASE_URL"] = url
    os.environ.setdefault("DJANGO_DEBUG", "1")  # a bench database, not a deployment
    os.environ.setdefault("DJANGO_SETTINGS_MODULE", "config.settings")
    import django

    django.setup()


def server_cpu(pid: int) -> float | None:
    """CPU seconds of the server process serving a connection, read from /proc (a server on
    this machine; None elsewhere): its work whatever the machine's load."""
    try:
        with open(f"/proc/{pid}/stat") as fh:
            fields = fh.read().rsplit(")", 1)[1].split()
    except OSError:
        return None
    return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")


def _spent(before: float | None, after: float | None) -> float | None:
    return None if before is None or after is None else after - before


def child_app(url: str, path: str) -> dict:
    _django(url)
    from django.db import connection

    from annotation.services.datasets.datasets import dataset_import

    with connection.cursor() as cursor:  # connected before the clock starts, as the baseline
        cursor.execute("SELECT pg_backend_pid()")
        (pid,) = cursor.fetchone()
    base = current_rss()
    t, cpu, server = time.perf_counter(), time.process_time(), server_cpu(pid)
    result = dataset_import(path=path, image_source="coco_url")
    return {
        "seconds": time.perf_counter() - t,
        "cpu": time.process_time() - cpu,
        "server_cpu": _spent(server, server_cpu(pid)),
        "peak": peak_rss(),
        "base": base,
        "rows": result.images + result.captions,
    }


def child_copy(url: str, path: str) -> dict:
    import psycopg

    base = current_rss()
    started, cpu = time.perf_counter(), time.process_time()
    with open(path, "rb") as fh:
        doc = json.load(fh)
    images = [
        (im["id"], im["file_name"], im["coco_url"], im["width"], im["height"])
        for im in doc["images"]
    ]
    captions = [(c["id"], c["image_id"], c["caption"]) for c in doc["annotations"]]
    del doc
    with psycopg.connect(url) as conn, conn.cursor() as cur:
        t, server = time.perf_counter(), server_cpu(conn.info.backend_pid)
        cur.execute(
            "INSERT INTO annotation_dataset (name, source_file, checksum, image_source, "
            "image_location, info, created_at) VALUES ('bare', '', '', 'coco_url', '', '{}', now())"
            " RETURNING id"
        )
        (dataset,) = cur.fetchone()  # type: ignore[misc]
        with cur.copy(
            "COPY annotation_image (dataset_id, coco_id, file_name, coco_url, width, height)"
            " FROM STDIN"
        ) as copy:
            for row in images:
                copy.write_row((dataset, *row))
        cur.execute("SELECT coco_id, id FROM annotation_image WHERE dataset_id = %s", [dataset])
        pk = dict(cur.fetchall())
        with cur.copy(
            "COPY annotation_caption (dataset_id, coco_id, image_id, text) FROM STDIN"
        ) as copy:
            for cid, image_id, text in captions:
                copy.write_row((dataset, cid, pk[image_id], text))
        conn.commit()
        seconds = time.perf_counter() - t
        server = _spent(server, server_cpu(conn.info.backend_pid))
    return {
        "server_cpu": server,
        "seconds": time.perf_counter() - started,
        "cpu": time.process_time() - cpu,
        "copy_seconds": seconds,
        "peak": peak_rss(),
        "base": base,
        "rows": len(images) + len(captions),
    }


def current_rss() -> int:
    """Resident set size now, in bytes: what the interpreter and its imports already use."""
    with open("/proc/self/statm") as fh:
        return int(fh.read().split()[1]) * os.sysconf("SC_PAGE_SIZE")


CHILDREN = {"app": child_app, "copy": child_copy}


def main() -> None:
    if len(sys.argv) > 1 and sys.argv[1] == "--child":
        name, url, path = sys.argv[2:5]
        print(json.dumps(CHILDREN[name](url, path)))
        return
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("--database-url", required=True, help="any database on the server")
    parser.add_argument(
        "--database-name",
        default=DB,
        help=f"the scratch database created and dropped (default {DB}; one per concurrent run)",
    )
    parser.add_argument("--repeats", type=int, default=3)
    parser.add_argument("--scales", default="1,5", help="multiples of val2014's size")
    results_argument(parser, __file__)
    args = parser.parse_args()
    results_tee(args.results)

    import psycopg

    base = args.database_url.rsplit("/", 1)[0]
    db = args.database_name
    if not db.isidentifier():
        parser.error(f"--database-name must be a plain identifier, got {db!r}")
    url = f"{base}/{db}"
    with psycopg.connect(args.database_url, autocommit=True) as conn:
        conn.execute(f"DROP DATABASE IF EXISTS {db}")
        conn.execute(f"CREATE DATABASE {db}")
    tmp = Path(tempfile.mkdtemp(prefix="crowdvl-bench-import-"))
    os.environ["CROWDVL_MEDIA_ROOT"] = str(tmp / "media")
    os.environ.pop("CELERY_BROKER_URL", None)
    _django(url)
    from django.core.management import call_command
    from django.db import connections

    call_command("migrate", verbosity=0)
    connections.close_all()

    def truncate() -> None:
        with psycopg.connect(url, autocommit=True) as conn:
            conn.execute(
                "TRUNCATE annotation_caption, annotation_image, annotation_dataset CASCADE"
            )

    rows = []
    per_round: list[str] = []
    load_start = os.getloadavg()[0]
    try:
        for scale in (int(s) for s in args.scales.split(",")):
            images = VAL2014_IMAGES * scale
            path = tmp / f"synthetic_x{scale}.json"
            write_synthetic(path, images=images)
            size = path.stat().st_size
            runs: dict[str, list[dict]] = {"app": [], "copy": []}
            for _ in range(args.repeats):  # interleaved, so both see the same load
                for name in ("app", "copy"):
                    truncate()
                    runs[name].append(in_subprocess(__file__, name, [url, str(path)]))
            expected = images * (1 + CAPTIONS_PER_IMAGE)
            assert all(r["rows"] == expected for rs in runs.values() for r in rs), runs
            label = f"x{scale} ({images:,} img, {images * CAPTIONS_PER_IMAGE:,} cap)"
            base_s = statistics.median(r["seconds"] for r in runs["copy"])
            for what, key, name in (
                ("app import", "seconds", "app"),
                ("json.load + COPY", "seconds", "copy"),
                ("COPY alone", "copy_seconds", "copy"),
            ):
                seconds = statistics.median(r[key] for r in runs[name])
                cpu = server = None
                if key == "seconds":
                    cpu = statistics.median(r["cpu"] for r in runs[name])
                    if all(r["server_cpu"] is not None for r in runs[name]):
                        server = statistics.median(r["server_cpu"] for r in runs[name])
                rows.append(
                    (
                        label,
                        size,
                        what,
                        seconds,
                        seconds / base_s,
                        cpu,
                        server,
                        max(r["peak"] for r in runs[name]),
                        max(r["peak"] - r["base"] for r in runs[name]),
                    )
                )
            per_round.append(
                f"x{scale}: "
                + ", ".join(
                    f"{a['seconds']:.2f}/{c['seconds']:.2f} = {a['seconds'] / c['seconds']:.2f}x"
                    for a, c in zip(runs["app"], runs["copy"], strict=True)
                )
            )
            path.unlink()
    finally:
        with psycopg.connect(args.database_url, autocommit=True) as conn:
            conn.execute(f"DROP DATABASE IF EXISTS {db}")

    print(
        f"\nCOCO import on PostgreSQL, median of {args.repeats} interleaved rounds, each run in "
        f"a fresh process; load average {load_start:.1f} at the start, "
        f"{os.getloadavg()[0]:.1f} at the end"
    )
    print(
        "(ratio: to json.load + COPY of the same file; client CPU: this process's CPU seconds; "
        "server CPU: the CPU seconds of the PostgreSQL process serving it (COPY, index and "
        "foreign-key checks, commit), whatever the load; peak RSS: the whole process; growth: "
        "peak minus RSS before reading the file)"
    )
    print(
        f"{'file':<34}{'MB':>7}  {'what':<18}{'median s':>10}{'ratio':>8}{'client CPU s':>14}"
        f"{'server CPU s':>14}{'peak RSS MB':>13}{'growth MB':>11}"
    )
    for label, size, what, seconds, ratio, cpu, server, peak, growth in rows:
        cpu_text = "" if cpu is None else f"{cpu:.2f}"
        server_text = "" if server is None else f"{server:.2f}"
        print(
            f"{label:<34}{fmt_mb(size):>7}  {what:<18}{seconds:>10.2f}{ratio:>7.2f}x"
            f"{cpu_text:>14}{server_text:>14}{fmt_mb(peak):>13}{fmt_mb(growth):>11}"
        )
    print("\nper round, app / json.load + COPY seconds:")
    for line in per_round:
        print("  " + line)


if __name__ == "__main__":
    main()

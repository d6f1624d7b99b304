"""The researcher's console at scale (issue 32): the dashboard, a run's page and the API's
lists with 100 runs and 10,000 HITs against the same pages with 2 runs, in the same run
(target: within 2x, and as many SQL statements).

Each run is filled alike with SQL: 500 image pairs, a published stage-2 batch of 100 HITs of 5
questions, one approved assignment (60 s of work) on every other HIT, and a finished job. The
small size is 2 such runs (200 HITs), copied to a second database (CREATE DATABASE ...
TEMPLATE); the large one adds 98 (100 runs, 10,000 HITs). Pages are requested in-process with
Django's test client as a signed-in researcher of the runs' project (not staff): one warm-up
request (its SQL statements are counted), then the median of `--repeats` timed requests. Each
measurement (every page at one size) runs in a fresh interpreter, the two sizes alternated for
`--rounds` rounds, so a shared machine's changing load weighs on both alike; the table shows
the median of the rounds' medians. DEBUG is on, as in the other benchmarks.

    .venv/bin/python benchmarks/console_scale.py --database-url postgres://postgres@127.0.0.1:5432/postgres [--repeats 7] [--rounds 5]

Databases named crowdvl_bench_console (100 runs) and crowdvl_bench_console_2runs are created
on that server and dropped afterwards.
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from benchmarks.export_harness import django_setup  # noqa: E402
from benchmarks.harness import in_subprocess, results_argument, results_tee  # noqa: E402

DB = "crowdvl_bench_console"
DB_SMALL = f"{DB}_2runs"
HITS_PER_RUN = 100
PER_HIT = 5
IMAGES = 1000
SMALL, LARGE = 2, 100


def _run(cur: Any, *, dataset: Any, w0: int) -> int:
    """One run filled as the docstring says; returns its id."""
    from annotation.flows.bison.vocabulary import BisonStage
    from annotation.services.runs.runs import run_create

    run = run_create(dataset=dataset, kind="bison").pk
    cur.execute(
        "INSERT INTO annotation_item (run_id, kind, positive_id, negative_id, tag, similarity)"
        " SELECT %s, 'image_pair', i.id, n.id, '', 0.5 FROM annotation_image i"
        " JOIN annotation_image n ON n.dataset_id = i.dataset_id AND n.coco_id = i.coco_id %% %s + 1"
        " WHERE i.dataset_id = %s AND i.coco_id <= %s",
        [run, IMAGES, dataset.pk, HITS_PER_RUN * PER_HIT],
    )
    cur.execute(
        "INSERT INTO annotation_batch (run_id, stage, provider, status, title, items_per_hit,"
        " assignments_per_hit, reward, lifetime_seconds, assignment_duration_seconds,"
        " qualifications, seed, created_at, published_at, auto_approval_delay_seconds,"
        " description, keywords, provider_hit_type_id, options, environment, sync_error)"
        " VALUES (%s, %s, 'local', 'published', 'bench', %s, 1, 0.10, 604800, 3600,"
        " '{}', 0, now(), now(), 259200, '', '', '', '{}', '', '') RETURNING id",
        [run, BisonStage.SELECTION, PER_HIT],
    )
    batch = cur.fetchone()[0]
    cur.execute(
        "INSERT INTO annotation_hit (batch_id, position, status, provider_hit_id,"
        " extra_assignments) SELECT %s, g, CASE WHEN g %% 2 = 0 THEN 'complete' ELSE 'open' END,"
        " '', 0 FROM generate_series(0, %s - 1) g",
        [batch, HITS_PER_RUN],
    )
    cur.execute(
        "INSERT INTO annotation_question (hit_id, item_id, position, swapped)"
        " SELECT h.id, i.id, (i.rn - 1) %% %s, false FROM"
        " (SELECT id, row_number() OVER (ORDER BY id) rn FROM annotation_item"
        "  WHERE run_id = %s) i JOIN annotation_hit h ON h.batch_id = %s"
        " AND h.position = (i.rn - 1) / %s",
        [PER_HIT, run, batch, PER_HIT],
    )
    cur.execute(
        "INSERT INTO annotation_assignment (hit_id, worker_id, state, provider_assignment_id,"
        " accepted_at, submitted_at, confirmed, excluded) SELECT h.id, %s + h.position %% 50,"
        " 'approved', '', now() - interval '60 seconds', now(), true, false"
        " FROM annotation_hit h WHERE h.batch_id = %s AND h.position %% 2 = 0",
        [w0, batch],
    )
    cur.execute(
        "INSERT INTO annotation_job (name, run_id, params, state, progress, message, error,"
        " parts_total, parts_done, result, created_at, finished_at, resumed)"
        " VALUES ('bison.stage1', %s, '{}', 'succeeded', 100, 'done', '', 0, '[]', '{}',"
        " now(), now(), 0)",
        [run],
    )
    return run  # type: ignore[no-any-return]


def fill(cur: Any, *, runs: int) -> list[int]:
    """Runs until there are `runs` (the first call also makes the dataset and the workers)."""
    from annotation.models import Dataset, Run

    dataset = Dataset.objects.filter(name="bench").first()
    if dataset is None:
        dataset = Dataset.objects.create(
            name="bench", source_file="", checksum="", image_source="coco_url"
        )
        cur.execute(
            "INSERT INTO annotation_image (dataset_id, coco_id, file_name, coco_url) "
            "SELECT %s, g, 'COCO_val2014_' || lpad(g::text, 12, '0') || '.jpg', '' "
            "FROM generate_series(1, %s) g",
            [dataset.pk, IMAGES],
        )
        cur.execute(
            "INSERT INTO annotation_worker (provider, external_id, blocked, block_scope,"
            " created_at) SELECT 'local', 'bench-' || g, false, '', now()"
            " FROM generate_series(1, 50) g"
        )
    cur.execute("SELECT min(id) FROM annotation_worker WHERE external_id LIKE 'bench-%%'")
    w0 = cur.fetchone()[0]
    while Run.objects.count() < runs:
        _run(cur, dataset=dataset, w0=w0)
    cur.execute("ANALYZE")
    return list(Run.objects.order_by("pk").values_list("pk", flat=True))


def measure(urls: dict[str, str], *, repeats: int) -> dict[str, dict[str, float]]:
    """Median seconds of `repeats` requests of each url after a warm-up, and the warm-up's SQL
    statements."""
    from django.contrib.auth import get_user_model
    from django.db import connection, reset_queries
    from django.test import Client
    from django.test.utils import CaptureQueriesContext

    client = Client()
    client.force_login(get_user_model().objects.get(username="bench-researcher"))
    out = {}
    for name, url in urls.items():
        reset_queries()  # DEBUG's log holds 9,000 statements: a full one would count none
        with CaptureQueriesContext(connection) as queries:
            response = client.get(url)
        if response.status_code != 200:
            sys.exit(f"{name} {url}: HTTP {response.status_code}")
        times = []
        for _ in range(repeats):
            start = time.perf_counter()
            client.get(url)
            times.append(time.perf_counter() - start)
        out[name] = {"seconds": statistics.median(times), "statements": len(queries)}
    return out


def child(url: str, repeats: str) -> dict[str, dict[str, float]]:
    """Every page of the database at `url`, measured in this fresh interpreter."""
    django_setup(url)
    from annotation.models import Run

    first = Run.objects.order_by("pk").values_list("pk", flat=True)[0]
    urls = {
        "dashboard": "/",
        "run page": f"/runs/{first}/",
        "API runs": "/api/runs/",
        "API jobs": "/api/jobs/",
        "API run's batches": f"/api/runs/{first}/batches/",
    }
    return measure(urls, repeats=int(repeats))


def main() -> None:
    if len(sys.argv) > 1 and sys.argv[1] == "--child":
        print(json.dumps(child(*sys.argv[3:5])))
        return
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("--database-url", required=True)
    parser.add_argument("--repeats", type=int, default=7)
    parser.add_argument("--rounds", type=int, default=5)
    results_argument(parser, __file__)
    args = parser.parse_args()
    results_tee(args.results)
    import psycopg

    root = args.database_url.rsplit("/", 1)[0]
    url, url_small = f"{root}/{DB}", f"{root}/{DB_SMALL}"
    with psycopg.connect(args.database_url, autocommit=True) as conn:
        for name in (DB, DB_SMALL):
            conn.execute(f"DROP DATABASE IF EXISTS {name}")
        conn.execute(f"CREATE DATABASE {DB}")
    os.environ["CROWDVL_MEDIA_ROOT"] = str(Path(tempfile.mkdtemp(prefix="crowdvl-bench-")))
    os.environ.pop("CELERY_BROKER_URL", None)
    rounds: dict[int, list[dict[str, dict[str, float]]]] = {SMALL: [], LARGE: []}
    loads = []
    try:
        django_setup(url)
        from django.contrib.auth import get_user_model
        from django.core.management import call_command
        from django.db import connections

        from annotation.services.runs.projects import project_default, project_member_set

        call_command("migrate", verbosity=0)
        get_user_model().objects.create_user("bench-researcher", password="unused")
        project_member_set(
            project=project_default().name, username="bench-researcher", role="researcher"
        )
        with psycopg.connect(url, autocommit=True) as conn, conn.cursor() as cur:
            fill(cur, runs=SMALL)
        connections.close_all()
        with psycopg.connect(args.database_url, autocommit=True) as conn:
            conn.execute(f"CREATE DATABASE {DB_SMALL} TEMPLATE {DB}")
        with psycopg.connect(url, autocommit=True) as conn, conn.cursor() as cur:
            fill(cur, runs=LARGE)
        connections.close_all()
        loads.append(Path("/proc/loadavg").read_text().split()[0])
        for _ in range(args.rounds):  # alternated: the load weighs on both sizes alike
            for size, where in ((SMALL, url_small), (LARGE, url)):
                rounds[size].append(in_subprocess(__file__, "pages", [where, str(args.repeats)]))
        loads.append(Path("/proc/loadavg").read_text().split()[0])
    finally:
        connections.close_all()
        with psycopg.connect(args.database_url, autocommit=True) as conn:
            for name in (DB, DB_SMALL):
                conn.execute(f"DROP DATABASE IF EXISTS {name} WITH (FORCE)")
    results = {
        size: {
            page: {
                "seconds": statistics.median(r[page]["seconds"] for r in measured),
                "statements": measured[0][page]["statements"],
                "ratios": [
                    large[page]["seconds"] / small[page]["seconds"]
                    for small, large in zip(rounds[SMALL], rounds[LARGE], strict=True)
                ],
            }
            for page in measured[0]
        }
        for size, measured in rounds.items()
    }
    print(
        f"\nThe console with {SMALL} runs ({SMALL * HITS_PER_RUN:,} HITs) and {LARGE} runs"
        f" ({LARGE * HITS_PER_RUN:,} HITs): per round the median of {args.repeats} requests"
        f" after a warm-up (in-process test client, researcher signed in, fresh process), the"
        f" sizes alternated for {args.rounds} rounds; median of the rounds (1-min load"
        f" {loads[0]} before, {loads[1]} after)"
    )
    print(
        f"{'page':<20}{f'ms @{SMALL}':>10}{f'ms @{LARGE}':>10}{'ratio':>7}{'rounds':>12}"
        f"{f'SQL @{SMALL}':>9}{f'SQL @{LARGE}':>9}  within 2x"
    )
    for name, small in results[SMALL].items():
        large = results[LARGE][name]
        ratio = large["seconds"] / small["seconds"]
        print(
            f"{name:<20}{small['seconds'] * 1000:>10.1f}{large['seconds'] * 1000:>10.1f}"
            f"{ratio:>6.2f}x{min(small['ratios']):>6.2f}-{max(small['ratios']):.2f}"
            f"{small['statements']:>9.0f}{large['statements']:>9.0f}"
            f"  {'yes' if ratio <= 2 else 'NO'}"
        )


if __name__ == "__main__":
    main()

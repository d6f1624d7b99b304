"""What the export benchmarks (`bison_export.py`, `eccv_export.py`, `cxc_export.py`) share: a
scratch database filled once, the export job and a bare COPY of the rows it reads timed in
alternated rounds (each in a fresh interpreter, so the load weighs on both sides alike and
each peak is its own), and the table of the two sides."""

from __future__ import annotations

import argparse
import json
import os
import shutil
import statistics
import sys
import tempfile
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from benchmarks.harness import fmt_mb, in_subprocess, results_argument


def django_setup(url: str) -> None:
    """Django on the database at `url` (development settings: no secret key needed)."""
    os.environ["DATABASE_URL"] = url
    os.environ.setdefault("DJANGO_DEBUG", "1")
    os.environ.setdefault("DJANGO_SETTINGS_MODULE", "config.settings")
    import django

    django.setup()


# The `label_provenance` record set's rows (issue 50: every export has them since), one per
# judgment of the run with its provenance columns, as a bare COPY reads them: the answer, its
# item's kind and COCO ids, its worker, batch (provider, study, stage), HIT, the assignment's
# times and consent version. Part of every export benchmark's baseline since issue 51 (the
# baseline is a COPY of the rows the job reads).
PROVENANCE_SELECT = (
    "SELECT ans.id, q.item_id, it.kind, im.coco_id, im2.coco_id, c.coco_id, c2.coco_id,"
    " ans.label, a.worker_id, b.provider, b.provider_hit_type_id, h.batch_id, b.stage,"
    " q.hit_id, a.accepted_at, a.submitted_at, a.consent_version FROM annotation_answer ans"
    " JOIN annotation_question q ON q.id = ans.question_id"
    " JOIN annotation_item it ON it.id = q.item_id"
    " JOIN annotation_image im ON im.id = it.positive_id"
    " LEFT JOIN annotation_image im2 ON im2.id = it.negative_id"
    " LEFT JOIN annotation_caption c ON c.id = it.caption_id"
    " LEFT JOIN annotation_caption c2 ON c2.id = it.caption2_id"
    " JOIN annotation_hit h ON h.id = q.hit_id JOIN annotation_batch b ON b.id = h.batch_id"
    " JOIN annotation_assignment a ON a.id = ans.assignment_id"
    " WHERE b.run_id = {run}"
)
PROVENANCE_COPY_SQL = f"COPY ({PROVENANCE_SELECT}) TO STDOUT"


def provenance_copy(cur: Any, run_id: int, out: Any) -> int:
    """`PROVENANCE_COPY_SQL` of the run through the psycopg cursor `cur` into the binary file
    `out`; returns the rows copied."""
    rows = 0
    with cur.copy(PROVENANCE_COPY_SQL.format(run=int(run_id))) as copy:
        for data in copy:
            out.write(data)
            rows += bytes(data).count(b"\n")
    return rows


def database_argument(parser: argparse.ArgumentParser, default: str, *flags: str) -> None:
    """The scratch database's name option (`flags`, e.g. "--db"), made and dropped by the run."""
    parser.add_argument(
        *flags,
        dest="database",
        default=default,
        help=f"the scratch database to make and drop (default {default})",
    )


def child_main(children: dict[str, Callable[[str, str], dict]]) -> bool:
    """In a child (`--child NAME URL RUN_ID`): run that measurement, print its JSON, and
    say so (the script returns); False in the parent."""
    if len(sys.argv) < 2 or sys.argv[1] != "--child":
        return False
    name, url, run_id = sys.argv[2:5]
    print(json.dumps(children[name](url, run_id)))
    return True


def export_parser(
    doc: str | None, script: str, *, repeats: int, default_db: str, db_flag: str
) -> argparse.ArgumentParser:
    """The options every export benchmark takes; the script adds its sizes."""
    parser = argparse.ArgumentParser(
        description=doc, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("--database-url", required=True)
    parser.add_argument("--repeats", type=int, default=repeats)
    parser.add_argument("--parts", action="store_true", help="then time the job's parts once")
    database_argument(parser, default_db, db_flag)
    results_argument(parser, script)
    return parser


@dataclass
class Rounds:
    """What `alternated_rounds` measured: each side's rounds, the load average before and
    after, the `--parts` child's result, and what `fill` returned."""

    filled: Any
    results: dict[str, list[dict]] = field(default_factory=dict)
    loads: list[str] = field(default_factory=list)
    round_loads: list[str] = field(default_factory=list)  # the 1-min load as each round began
    parts: dict | None = None


def _load() -> str:
    return Path("/proc/loadavg").read_text().split()[0]


def alternated_rounds(
    script: str,
    *,
    parser: argparse.ArgumentParser,
    database_url: str,
    database: str,
    fill: Callable[[str], tuple[int, Any]],
    repeats: int,
    parts: bool,
    also: tuple[str, ...] = (),
) -> Rounds:
    """Make the scratch database, migrate it, `fill(url)` it (the run's id and what else it
    returns), then time `script`'s children "copy" and "app" in alternated rounds (and
    "parts" once with `parts`); the database and the media folder are removed at the end."""
    import psycopg

    if not database.replace("_", "").isalnum():
        parser.error(f"database {database!r}: letters, digits and underscores only")
    url = f"{database_url.rsplit('/', 1)[0]}/{database}"
    with psycopg.connect(database_url, autocommit=True) as conn:
        conn.execute(f"DROP DATABASE IF EXISTS {database}")
        conn.execute(f"CREATE DATABASE {database}")
    tmp = Path(tempfile.mkdtemp(prefix=f"crowdvl-bench-{Path(script).stem}-"))
    os.environ["CROWDVL_MEDIA_ROOT"] = str(tmp / "media")
    os.environ.pop("CELERY_BROKER_URL", None)  # jobs run in the child's process
    try:
        django_setup(url)
        from django.core.management import call_command
        from django.db import connections

        call_command("migrate", verbosity=0)
        run_id, extra = fill(url)
        connections.close_all()
        sides = ("copy", "app", *also)  # `also`: more of the script's children, each round
        rounds = Rounds(filled=extra, results={name: [] for name in sides}, loads=[_load()])
        for _ in range(repeats):
            rounds.round_loads.append(_load())
            for name in sides:
                rounds.results[name].append(in_subprocess(script, name, [url, str(run_id)]))
        rounds.loads.append(_load())
        if parts:
            rounds.parts = in_subprocess(script, "parts", [url, str(run_id)])
    finally:
        from django.db import connections

        connections.close_all()
        with psycopg.connect(database_url, autocommit=True) as conn:
            conn.execute(f"DROP DATABASE IF EXISTS {database} WITH (FORCE)")
        shutil.rmtree(tmp, ignore_errors=True)  # the exports and the children's files
    return rounds


def print_sides(rounds: Rounds, *, app_label: str, also: dict[str, str] | None = None) -> None:
    """The sides' medians, the ratio to the copy's, peak RSS and growth, then the ratio
    of each round (`also`: more sides, name -> label)."""
    results = rounds.results
    base_s = statistics.median(r["seconds"] for r in results["copy"])
    print(f"{'what':<36}{'median s':>10}{'ratio':>7}{'peak RSS MB':>13}{'growth MB':>11}")
    labels = {"copy": "bare COPY ... TO (baseline)", "app": app_label, **(also or {})}
    for name, label in labels.items():
        runs = results[name]
        seconds = statistics.median(r["seconds"] for r in runs)
        print(
            f"{label:<36}{seconds:>10.2f}{seconds / base_s:>7.2f}"
            f"{fmt_mb(max(r['peak'] for r in runs)):>13}"
            f"{fmt_mb(max(r['peak'] - r['base'] for r in runs)):>11}"
        )
    ratios = [
        a["seconds"] / c["seconds"] for a, c in zip(results["app"], results["copy"], strict=True)
    ]
    print(
        "ratio per round (app / copy of the same round): " + ", ".join(f"{r:.2f}" for r in ratios)
    )
    if rounds.round_loads:
        print("1-min load average as each round began: " + ", ".join(rounds.round_loads))

"""The ECCV Caption proposal job at 10x val2014 over 1, 2 and 4 Celery worker processes.

Imports a synthetic COCO file of 405,040 images x 5 captions once (PostgreSQL) and writes the
precomputed embeddings of the paper's five models as `.npz` files (random vectors: the job's
cost does not depend on what they say; no model runs). For each worker count it starts that
many real Celery workers (solo pool, BLAS threads = cores / workers), creates an ECCV run with
the default query sample, registers the five annotators and runs the real proposal job: one
part per model (load and check its embeddings, rank the queries over the whole gallery), then
the finishing step on one worker (merge the top-k, write the candidates). Prints seconds
(whole job, parts, finish), the speed-up, and each worker's peak memory next to one model's
embedding matrix:

    .venv/bin/python benchmarks/eccv_scaleout.py [--images 405040] [--dim 64]
        [--workers 1,2,4] [--database-url postgres://postgres@127.0.0.1:5432/postgres]
        [--broker redis://127.0.0.1:6379/11]

Dimension: the paper's models embed in 512 to 2,048 dimensions; at 10x val2014 one 512-d
model is 405,040 x 512 + 2,025,200 x 512 floats = 4.6 GB, five of them 23 GB, more than this
24 GB machine holds beside four workers. A worker holds one model at a time (its part), so
memory scales with the dimension; 64-d (0.6 GB a model) keeps the three runs on this machine.
Parts are per model, so the job spreads over at most five workers. Across machines the
workers need the run's folder under CROWDVL_MEDIA_ROOT (rankings, top pairs) and the
annotators' files at the same path; see the README's "Several machines".
"""

from __future__ import annotations

import argparse
import os
import sys
import tempfile
import time
import uuid
from pathlib import Path

import numpy as np

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from benchmarks.import_coco import CAPTIONS_PER_IMAGE, write_synthetic  # noqa: E402
from benchmarks.stage1_scaleout import IDLE, MB, start_workers, vm_hwm  # noqa: E402

DB = "crowdvl_bench_eccv_scale"
MODELS = ("CLIP", "PCME", "PVSE", "ViLT", "VSRN")


def write_embeddings(folder: Path, *, images: int, dim: int) -> list[Path]:
    """One `.npz` per model: every image and caption of the synthetic file (COCO ids)."""
    paths = []
    image_ids = np.arange(1, images + 1, dtype=np.int64)
    caption_ids = np.arange(1, images * CAPTIONS_PER_IMAGE + 1, dtype=np.int64)
    for n, model in enumerate(MODELS):
        rng = np.random.default_rng(n)
        path = folder / f"{model}.npz"
        np.savez(
            path,
            image_ids=image_ids,
            image_embeddings=rng.standard_normal((images, dim), dtype=np.float32),
            caption_ids=caption_ids,
            caption_embeddings=rng.standard_normal((caption_ids.size, dim), dtype=np.float32),
        )
        paths.append(path)
    return paths


def run_once(*, dataset, files: list[Path], count: int, env: dict, logs: Path, check: bool):
    from annotation.flows.eccv.services.proposals import (
        eccv_annotator_add,
        eccv_propose_start,
        eccv_run_create,
    )
    from annotation.models import Annotator, AnnotatorKind, Job, JobState
    from config import celery_app

    queue = f"crowdvl-eccv-scale-{uuid.uuid4().hex[:6]}"
    workers = start_workers(count, queue, env, logs)
    celery_app.conf.task_always_eager, celery_app.conf.task_default_queue = False, queue
    try:
        run = eccv_run_create(dataset=dataset, config={"models": len(files)})
        for model, path in zip(MODELS, files, strict=True):
            if check:  # the files are checked once (it ranks them, in this process)
                eccv_annotator_add(
                    run=run, name=model, kind=AnnotatorKind.EMBEDDINGS, source=str(path)
                )
            else:
                Annotator.objects.create(
                    run=run, name=model, kind=AnnotatorKind.EMBEDDINGS, source=str(path)
                )
        started = time.monotonic()
        job = eccv_propose_start(run=run)
        finish = None
        while True:
            job.refresh_from_db()
            if finish is None and job.parts_total and len(job.parts_done) == job.parts_total:
                finish = time.monotonic()
            if job.state in (JobState.SUCCEEDED, JobState.FAILED):
                break
            for proc, log in workers:
                if proc.poll() is not None:
                    sys.exit(f"a worker exited:\n{log.read_text()[-3000:]}")
            time.sleep(0.1)
        seconds = time.monotonic() - started
        if job.state != JobState.SUCCEEDED:
            sys.exit(f"job failed: {job.error}")
        result = Job.objects.get(pk=job.pk).result
        return {
            "workers": count,
            "seconds": seconds,
            "parts_s": (finish or started) - started,
            "finish_s": seconds - ((finish or started) - started),
            "candidates": result["candidates"],
            "proposed": result["proposed"],
            "peaks": [vm_hwm(proc.pid) for proc, _ in workers],
            "parts_per_worker": [
                log.read_text().count("eccv.propose_part[") // 2 for _, log in workers
            ],
        }
    finally:
        for proc, _ in workers:
            proc.terminate()
        for proc, _ in workers:
            proc.wait(timeout=60)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--images", type=int, default=405_040)
    parser.add_argument("--dim", type=int, default=64)
    parser.add_argument("--workers", default="1,2,4")
    parser.add_argument("--database-url", default="postgres://postgres@127.0.0.1:5432/postgres")
    parser.add_argument("--broker", default="redis://127.0.0.1:6379/11")
    args = parser.parse_args()

    import psycopg

    with psycopg.connect(args.database_url, autocommit=True) as conn:
        conn.execute(f"DROP DATABASE IF EXISTS {DB} WITH (FORCE)")
        conn.execute(f"CREATE DATABASE {DB}")
    folder = Path(tempfile.mkdtemp(prefix="crowdvl-eccv-scale-"))
    env = {
        **os.environ,
        "DATABASE_URL": args.database_url.rsplit("/", 1)[0] + "/" + DB,
        "CELERY_BROKER_URL": args.broker,
        "DJANGO_SECRET_KEY": "benchmark-" + "x" * 40,
        "CROWDVL_MEDIA_ROOT": str(folder / "media"),
        "DJANGO_SETTINGS_MODULE": "config.settings",
        "PYTHONPATH": str(ROOT),
    }
    os.environ.update(env)
    import django

    django.setup()
    from django.core.management import call_command

    from annotation.services.datasets import dataset_import

    try:
        call_command("migrate", verbosity=0)
        coco = folder / "captions.json"
        write_synthetic(coco, images=args.images)
        started = time.monotonic()
        dataset = dataset_import(path=coco, name="scale").dataset
        imported = time.monotonic() - started
        files = write_embeddings(folder, images=args.images, dim=args.dim)
        results = [
            run_once(dataset=dataset, files=files, count=int(n), env=env, logs=folder, check=i == 0)
            for i, n in enumerate(args.workers.split(","))
        ]
    finally:
        from django.db import connections

        connections.close_all()
        with psycopg.connect(args.database_url, autocommit=True) as conn:
            conn.execute(f"DROP DATABASE IF EXISTS {DB} WITH (FORCE)")
        for path in folder.glob("*.npz"):
            path.unlink()

    model = args.images * (1 + CAPTIONS_PER_IMAGE) * args.dim * 4
    print(
        f"ECCV proposal, {args.images:,} images x {CAPTIONS_PER_IMAGE} captions, {len(MODELS)} "
        f"models of {args.dim}-d embeddings (.npz); {os.cpu_count()} cores; import "
        f"{imported:.0f} s (not counted); one model's matrices {model / MB:,.0f} MB; "
        f"an idle worker holds {max(IDLE) / MB:,.0f} MB"
    )
    print()
    print(
        f"{'workers':>8}{'job s':>8}{'parts s':>9}{'finish s':>10}{'speed-up':>10}"
        f"  peak RSS per worker, MB; parts each (the last part's worker also finishes)"
    )
    base = results[0]["seconds"]
    for r in results:
        peaks = ", ".join(f"{p / MB:,.0f}" for p in r["peaks"])
        print(
            f"{r['workers']:>8}{r['seconds']:>8.0f}{r['parts_s']:>9.0f}{r['finish_s']:>10.0f}"
            f"{base / r['seconds']:>9.2f}x  {peaks}; {r['parts_per_worker']}"
        )
    same = len({(r["candidates"], r["proposed"]) for r in results}) == 1
    print(
        f"\ncandidates: {[r['candidates'] for r in results]}, proposals: "
        f"{[r['proposed'] for r in results]} (identical: {same})"
    )


if __name__ == "__main__":
    main()

"""The ECCV Caption proposal job at 10x val2014 over 1, 2 and 4 Celery worker processes.

Imports a synthetic COCO file of 405,040 images x 5 captions once (PostgreSQL) and writes the
precomputed embeddings of the paper's five models as `.npz` files (random vectors: the job's
cost does not depend on what they say; no model runs, no training). For each worker count it
starts that many real Celery workers (solo pool, BLAS threads = cores / workers), creates an
ECCV run with its default config (100 image and 100 caption queries drawn from the whole
gallery, k = 5), registers the five annotators and runs the real proposal job: the prepare
step, one part per model (load and check its embeddings, rank the queries over the whole
gallery, save the top-25 lists), then the finishing step on the worker of the last part
(merge the top-k, write the candidates). Prints seconds (whole job, prepare, parts, finish),
the speed-up, and each worker's peak memory (VmHWM) next to one model's embedding matrices:

    .venv/bin/python benchmarks/eccv_scaleout.py [--images 405040] [--dim 64]
        [--workers 1,2,4] [--database-url postgres://postgres@127.0.0.1:5432/postgres]
        [--broker redis://127.0.0.1:6379/11]

A database named crowdvl_bench_eccv_scale is created on that server and dropped afterwards.

Dimension and memory: one model's matrices are images x (1 + 5 captions) x dim x 4 bytes.
A worker holds one model at a time (its part): the loaded matrices, normalised in place, and
one block of query-gallery products of at most 256 MB with its selection's temporaries, so its
peak is about idle + matrices + ~400 MB whatever the number of images; nothing else in a part
grows with them (ids are numpy arrays; the saved rankings and the finishing step's lookups
are per query and per candidate). The output prints each worker's peak beyond idle +
matrices: compare it across --images (it stops growing once the block reaches 256 MB, i.e.
above ~134,000 images). The paper's models embed in 512 to 2,048 dimensions; at 10x val2014
one 512-d model is 2,430,240 rows x 512 x 4 = 4.6 GB (five files 23 GB), a worker ~5 GB and
four ~21 GB beside this process (which checks the five files by ranking them) and the
database: too much for this 24 GB machine. At 64-d one model is 593 MB, a worker ~1.2 GB.

Parts are per model (five here), so the job spreads over at most five workers; a sixth would
idle. Across machines the workers need the run's folder under CROWDVL_MEDIA_ROOT (rankings,
top pairs) and the annotators' files at the same path; see docs/operations.md, "Several machines".
"""

from __future__ import annotations

import argparse
import hashlib
import os
import sys
import tempfile
import time
import uuid
from pathlib import Path

import numpy as np

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from benchmarks.harness import results_argument, results_tee  # noqa: E402
from benchmarks.import_coco import CAPTIONS_PER_IMAGE, write_synthetic  # noqa: E402
from benchmarks.stage1_scaleout import (  # noqa: E402
    IDLE,
    MB,
    start_workers,
    vm_hwm,
    workers_setup,
    workers_teardown,
)

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
    from annotation.flows.eccv.models import Annotator, AnnotatorKind, Proposal
    from annotation.flows.eccv.services.annotators import eccv_annotator_add
    from annotation.flows.eccv.services.proposal_job import eccv_propose_start
    from annotation.flows.eccv.services.runs import eccv_run_create
    from annotation.models import Job, JobState
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
        split = finish = None
        while True:
            job.refresh_from_db()
            if split is None and job.parts_total:
                split = time.monotonic()
            if finish is None and job.parts_total and len(job.parts_done) == job.parts_total:
                finish = time.monotonic()
            if job.state in (JobState.SUCCEEDED, JobState.FAILED):
                break
            for proc, log in workers:
                if proc.poll() is not None:
                    sys.exit(f"a worker exited:\n{log.read_text()[-3000:]}")
            time.sleep(0.05)
        ended = time.monotonic()
        if job.state != JobState.SUCCEEDED:
            sys.exit(f"job failed: {job.error}")
        split, finish = split or started, finish or ended
        result = Job.objects.get(pk=job.pk).result
        # The candidates themselves (pairs, which model proposed each, direction, rank).
        rows = Proposal.objects.filter(item__run=run).values_list(
            "item__positive__coco_id",
            "item__caption__coco_id",
            "annotator__name",
            "direction",
            "rank",
        )
        digest = hashlib.sha256(repr(sorted(rows)).encode()).hexdigest()[:12]
        return {
            "workers": count,
            "seconds": ended - started,
            "prepare_s": split - started,
            "parts_s": finish - split,
            "finish_s": ended - finish,
            "candidates": result["candidates"],
            "proposed": result["proposed"],
            "digest": digest,
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
    results_argument(parser, __file__)
    args = parser.parse_args()
    results_tee(args.results)

    folder = Path(tempfile.mkdtemp(prefix="crowdvl-eccv-scale-"))
    env = workers_setup(
        database_url=args.database_url, database=DB, broker=args.broker, folder=folder
    )
    from annotation.services.datasets.datasets import dataset_import

    try:
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
        workers_teardown(database_url=args.database_url, database=DB)
        for path in folder.glob("*.npz"):
            path.unlink()

    rows = args.images * (1 + CAPTIONS_PER_IMAGE)
    model = rows * args.dim * 4
    idle = max(IDLE)
    print(
        f"ECCV proposal, {args.images:,} images x {CAPTIONS_PER_IMAGE} captions, {len(MODELS)} "
        f"models of {args.dim}-d embeddings (.npz), default run config (100 + 100 queries, "
        f"k = 5); {os.cpu_count()} cores; import {imported:.0f} s (not counted)"
    )
    print(
        f"one model's matrices: {rows:,} rows x {args.dim} x 4 B = {model / MB:,.0f} MB "
        f"(a worker holds one model at a time); an idle worker holds {idle / MB:,.0f} MB; "
        f"{len(MODELS)} parts, one per model: more than {len(MODELS)} workers would idle"
    )
    print()
    print(
        f"{'workers':>8}{'job s':>8}{'prepare s':>11}{'parts s':>9}{'finish s':>10}"
        f"{'speed-up':>10}{'beyond':>8}  peak RSS per worker, MB; parts each"
    )
    base = results[0]["seconds"]
    for r in results:
        peaks = ", ".join(f"{p / MB:,.0f}" for p in r["peaks"])
        beyond = (max(r["peaks"]) - idle - model) / MB
        print(
            f"{r['workers']:>8}{r['seconds']:>8.1f}{r['prepare_s']:>11.1f}{r['parts_s']:>9.1f}"
            f"{r['finish_s']:>10.1f}{base / r['seconds']:>9.2f}x{beyond:>8,.0f}  {peaks}; "
            f"{r['parts_per_worker']}"
        )
    print(
        "\nbeyond: the highest worker peak minus an idle worker minus one model's matrices, MB "
        "(one block of products of at most 256 MB and its selection's temporaries; the "
        "matrices are normalised in place); the last part's worker also runs the finishing step"
    )
    same = len({(r["candidates"], r["proposed"], r["digest"]) for r in results}) == 1
    print(
        f"candidates: {[r['candidates'] for r in results]}, proposals: "
        f"{[r['proposed'] for r in results]}, sha256 of the proposals: "
        f"{[r['digest'] for r in results]} (identical: {same})"
    )


if __name__ == "__main__":
    main()

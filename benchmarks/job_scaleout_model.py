"""Scale-out on paper: each split job's time over N workers predicted from its parts' times
at one worker (`pipeline/scaleout.py`), checked against a measured run at two.

For stage 1 (BISON pairing: prepare the image matrix, one part per block of images, the
finish merges), the ECCV proposal (one part per model, the finish merges the top-k) and the
encoder job (`encoders.encode`: one part per chunk of images or captions, the finish
assembles the set, sent as a task of its own), each round runs the real job on 1 and then 2
real Celery workers (solo pool, `--threads` BLAS/torch threads each: 1 by default, so two
workers on this 2-core machine each have a core, as two machines would) and reads the job's
`timings` (when its prepare, each part and its finish ran, on which worker). From the
1-worker run's profile (serial before/after, each part's duration, the median dispatch gap
per part, a worker's one-time setup) the model predicts T(N) for N = 1, 2, 4, 8, 16; the
prediction for 2 is compared with the measured 2-worker run of the same round. "replay"
predicts 2 from the 2-worker run's own part times: it checks the scheduling arithmetic alone,
so what separates it from the prediction is the parts running slower beside each other.

    .venv/bin/python benchmarks/job_scaleout_model.py [--jobs stage1,eccv,encode]
        [--rounds 2] [--threads 1] [--stage1-images 40504] [--block 4096]
        [--eccv-images 100000] [--encode-images 48] [--encode-captions 192]
        [--chunk-images 8] [--chunk-captions 32]
        [--database-url postgres://postgres@127.0.0.1:5432/postgres]
        [--database crowdvl_scale_bench] [--broker redis://127.0.0.1:6379/8]

The database named by --database is created on that server and dropped afterwards.
"""

from __future__ import annotations

import argparse
import os
import statistics
import sys
import tempfile
import time
import uuid
from collections.abc import Callable
from pathlib import Path
from typing import Any

import numpy as np

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from benchmarks.eccv_scaleout import MODELS, write_embeddings  # noqa: E402
from benchmarks.harness import results_argument, results_tee  # noqa: E402
from benchmarks.import_coco import write_synthetic  # noqa: E402
from benchmarks.stage1_scaleout import (  # noqa: E402
    MB,
    start_workers,
    vm_hwm,
    workers_setup,
    workers_teardown,
)

PREDICTED = (1, 2, 4, 8, 16)


def _loadavg() -> str:
    return " ".join(Path("/proc/loadavg").read_text().split()[:3])


def run_job(start: Callable[[], Any], *, count: int, env: dict, logs: Path, threads: int):
    """Start `count` workers, run the job `start()` returns, and read its row back."""
    from annotation.models import Job, JobState
    from config import celery_app

    queue = f"crowdvl-model-{uuid.uuid4().hex[:6]}"
    workers = start_workers(count, queue, env, logs, threads=threads)
    celery_app.conf.task_always_eager, celery_app.conf.task_default_queue = False, queue
    try:
        job = start()
        while True:
            job.refresh_from_db()
            if job.state in (JobState.SUCCEEDED, JobState.FAILED):
                break
            for proc, log in workers:
                if proc.poll() is not None:
                    sys.exit(f"a worker exited:\n{log.read_text()[-3000:]}")
            time.sleep(0.1)
        if job.state != JobState.SUCCEEDED:
            sys.exit(f"job {job.name} failed: {job.error}")
        job = Job.objects.get(pk=job.pk)
        return job, [vm_hwm(proc.pid) for proc, _ in workers]
    finally:
        for proc, _ in workers:
            proc.terminate()
        for proc, _ in workers:
            proc.wait(timeout=60)


def stage1_setup(args: argparse.Namespace, folder: Path) -> Callable[[], Any]:
    from annotation.flows.bison.services.pairing import pairing_start
    from annotation.services.datasets.datasets import dataset_import
    from annotation.services.runs.runs import run_create

    coco = folder / "stage1.json"
    write_synthetic(coco, images=args.stage1_images)
    dataset = dataset_import(path=coco, name="stage1").dataset
    rng = np.random.default_rng(0)
    vectors = folder / "vectors.vec"
    words = [f"w{i}" for i in range(5000)]
    with vectors.open("w") as fh:
        fh.write(f"{len(words)} 100\n")
        for word in words:
            fh.write(word + " " + " ".join(f"{v:.4f}" for v in rng.standard_normal(100)) + "\n")
    return lambda: pairing_start(
        run=run_create(dataset=dataset), vectors_path=str(vectors), block_size=args.block
    )


def eccv_setup(args: argparse.Namespace, folder: Path) -> Callable[[], Any]:
    from annotation.flows.eccv.models import Annotator, AnnotatorKind
    from annotation.flows.eccv.services.proposal_job import eccv_propose_start
    from annotation.flows.eccv.services.runs import eccv_run_create
    from annotation.services.datasets.datasets import dataset_import

    coco = folder / "eccv.json"
    write_synthetic(coco, images=args.eccv_images)
    dataset = dataset_import(path=coco, name="eccv").dataset
    files = write_embeddings(folder, images=args.eccv_images, dim=64)

    def start() -> Any:
        run = eccv_run_create(dataset=dataset, config={"models": len(files)})
        for model, path in zip(MODELS, files, strict=True):
            Annotator.objects.create(
                run=run, name=model, kind=AnnotatorKind.EMBEDDINGS, source=str(path)
            )
        return eccv_propose_start(run=run)

    return start


def encode_setup(args: argparse.Namespace, folder: Path) -> Callable[[], Any]:
    from annotation.encoders.models import EmbeddingSet
    from annotation.encoders.services import embedding_set_delete, embedding_set_start
    from annotation.models import Job
    from annotation.services.datasets.datasets import dataset_import
    from benchmarks.encode_throughput import build_model, write_data

    import_dir = Path(os.environ["CROWDVL_IMPORT_DIR"])
    build_model(import_dir / "model")
    data = write_data(import_dir / "data", images=args.encode_images, captions=args.encode_captions)
    dataset = dataset_import(
        path=data,
        name="encode",
        image_source="local_dir",
        image_location=str(data.parent / "images"),
    ).dataset

    def start() -> Any:
        for stored in EmbeddingSet.objects.filter(dataset=dataset):  # each run encodes anew
            embedding_set_delete(embedding_set=stored)
        embedding_set = embedding_set_start(
            dataset=dataset,
            checkpoint="model",
            model_name="vit-b32-random",
            chunk_images=args.chunk_images,
            chunk_captions=args.chunk_captions,
        )
        return Job.objects.get(pk=embedding_set.job_id)

    return start


JOBS = {
    "stage1": ("stage 1 (BISON pairing)", stage1_setup),
    "eccv": ("ECCV proposal", eccv_setup),
    "encode": ("encoder job (encoders.encode)", encode_setup),
}


def profile_of(job: Any) -> Any:
    from pipeline.scaleout import profile_from_timings

    return profile_from_timings(
        job.timings,
        created=job.created_at.timestamp(),
        finished=job.finished_at.timestamp(),
        job=f"job {job.pk} {job.name}",
    )


def measured(job: Any) -> float:
    return (job.finished_at - job.created_at).total_seconds()


def report(title: str, runs: list[dict], threads: int) -> dict:
    """Print one job's table; return its validation figures."""
    from pipeline.scaleout import amdahl_limit, predict

    one = [r["profile"] for r in runs if r["workers"] == 1]
    two = [r["profile"] for r in runs if r["workers"] == 2]
    t1 = [r["seconds"] for r in runs if r["workers"] == 1]
    t2 = [r["seconds"] for r in runs if r["workers"] == 2]
    p = one[0]
    print(f"\n## {title}")
    print(
        f"{len(p.parts)} parts in dispatch order; {threads} BLAS/torch thread(s) per worker; "
        f"rounds: {len(t1)} (1 worker, then 2)"
    )
    for i, prof in enumerate(one):
        parts = sorted(prof.parts)
        print(
            f"  round {i + 1}, 1 worker: before (create -> prepare done) {prof.before:.2f} s, "
            f"parts {sum(prof.parts):.2f} s (min {parts[0]:.2f}, median "
            f"{statistics.median(parts):.2f}, max {parts[-1]:.2f}), dispatch gap per part "
            f"{prof.overhead * 1000:.0f} ms, worker setup {prof.setup:.2f} s, after (last part "
            f"-> done) {prof.after:.2f} s; serial share {prof.serial / predict(prof, 1):.1%} "
            f"({(prof.serial + prof.setup) / predict(prof, 1):.1%} with the setup, which no "
            "number of workers shortens)"
        )
    slow = [sum(b.parts) / max(sum(a.parts), 1e-9) for a, b in zip(one, two, strict=True)]
    print(
        "  parts' summed duration at 2 workers / at 1 (contention the model leaves out), per "
        f"round: {', '.join(f'{s:.2f}x' for s in slow)}"
    )
    print()
    print(
        f"{'N':>4}{'measured s':>12}{'predicted s':>13}{'speed-up':>10}"
        f"{'from 2-worker parts s':>23}{'speed-up':>10}"
    )
    for n in PREDICTED:
        meas = {1: t1, 2: t2}.get(n)
        row = f"{n:>4}" + (f"{statistics.median(meas):>12.2f}" if meas else f"{'':>12}")
        row += f"{statistics.median(predict(q, n) for q in one):>13.2f}"
        row += f"{statistics.median(predict(q, 1) / predict(q, n) for q in one):>9.2f}x"
        if n >= 2:  # the 2-worker run's part times: contention as at 2 workers, kept
            row += f"{statistics.median(predict(q, n) for q in two):>23.2f}"
            row += f"{statistics.median(m / predict(q, n) for q, m in zip(two, t1, strict=True)):>9.2f}x"
        print(row)
    print(
        "  (speed-up against the measured 1-worker run of the same round for the 2-worker "
        "parts' column; at N = 2 that column is the replay of the 2-worker run)"
    )
    errors = [(predict(a, 2) - m) / m for a, m in zip(one, t2, strict=True)]
    replays = [(predict(b, 2) - m) / m for b, m in zip(two, t2, strict=True)]
    print(
        "\n  2 workers, per round: predicted from the 1-worker run vs measured: "
        + ", ".join(
            f"{predict(a, 2):.2f} vs {m:.2f} s ({e:+.1%})"
            for a, m, e in zip(one, t2, errors, strict=True)
        )
    )
    print(
        "  replay (the 2-worker run's own part times): " + ", ".join(f"{e:+.1%}" for e in replays)
    )
    limit = statistics.median(amdahl_limit(prof) for prof in one)
    # Amdahl from the serial share alone: what infinitely many, infinitely fine parts give.
    amdahl = statistics.median(predict(q, 1) / (q.serial + q.setup) for q in one)
    peaks = [max(r["peaks"]) for r in runs]
    cores = os.cpu_count() or 1
    print(
        f"  limits: Amdahl {amdahl:.2f}x from the serial share (with the setup); "
        f"{limit:.2f}x at any N with the longest part; N beyond {len(p.parts)} parts gives "
        f"nothing; peak RSS per worker up to {max(peaks) / MB:,.0f} MB (N workers on one "
        f"machine need N times that); {cores} cores here, so {cores} workers is the largest "
        "honest check; contention (shared cores, PostgreSQL, the broker) is not modelled"
    )
    return {
        "title": title,
        "error": statistics.median(errors),
        "replay": statistics.median(replays),
    }


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--jobs", default="stage1,eccv,encode")
    parser.add_argument("--rounds", type=int, default=2)
    parser.add_argument("--threads", type=int, default=1)
    parser.add_argument("--stage1-images", type=int, default=40_504)
    parser.add_argument("--block", type=int, default=4096)
    parser.add_argument("--eccv-images", type=int, default=100_000)
    parser.add_argument("--encode-images", type=int, default=48)
    parser.add_argument("--encode-captions", type=int, default=192)
    parser.add_argument("--chunk-images", type=int, default=8)
    parser.add_argument("--chunk-captions", type=int, default=32)
    parser.add_argument("--database-url", default="postgres://postgres@127.0.0.1:5432/postgres")
    parser.add_argument("--database", default="crowdvl_scale_bench")
    parser.add_argument("--broker", default="redis://127.0.0.1:6379/8")
    results_argument(parser, __file__)
    args = parser.parse_args()
    jobs = args.jobs.split(",")
    unknown = sorted(set(jobs) - set(JOBS))
    if unknown:
        parser.error(f"--jobs: unknown {', '.join(unknown)} (known: {', '.join(JOBS)})")
    results_tee(args.results)

    folder = Path(tempfile.mkdtemp(prefix="crowdvl-scale-model-"))
    load = [_loadavg()]
    env = workers_setup(
        database_url=args.database_url,
        database=args.database,
        broker=args.broker,
        folder=folder,
        extra={
            "CROWDVL_IMPORT_DIR": str(folder / "import"),
            # The encoder's torch threads: the cores over this (annotation/encoders/services.py).
            "CELERY_WORKER_CONCURRENCY": str(max(1, (os.cpu_count() or 1) // args.threads)),
        },
    )
    summary = []
    try:
        print(
            f"{os.cpu_count()} cores; load average at the start {load[0]}; sizes: stage 1 "
            f"{args.stage1_images:,} images in blocks of {args.block}; ECCV "
            f"{args.eccv_images:,} images x 5 captions, {len(MODELS)} models of 64-d; encoder "
            f"{args.encode_images} images in chunks of {args.chunk_images}, "
            f"{args.encode_captions} captions in chunks of {args.chunk_captions} (ViT-B/32-sized "
            "CLIP, random weights)"
        )
        for key in jobs:
            title, setup = JOBS[key]
            start = setup(args, folder)
            runs = []
            for _ in range(args.rounds):
                for count in (1, 2):
                    job, peaks = run_job(
                        start, count=count, env=env, logs=folder, threads=args.threads
                    )
                    runs.append(
                        {
                            "workers": count,
                            "seconds": measured(job),
                            "profile": profile_of(job),
                            "peaks": peaks,
                        }
                    )
            summary.append(report(title, runs, args.threads))
            load.append(_loadavg())
    finally:
        workers_teardown(database_url=args.database_url, database=args.database)
        for path in folder.glob("*.npz"):
            path.unlink()

    print("\n## the check: T(2) predicted from the 1-worker run against the measured 2-worker run")
    for row in summary:
        print(
            f"  {row['title']}: median error {row['error']:+.1%} (replay of the 2-worker "
            f"run's own part times: {row['replay']:+.1%})"
        )
    print(f"load average after each job: {', '.join(load)}")


if __name__ == "__main__":
    main()

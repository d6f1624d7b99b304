"""BISON stage 1 at 10x val2014 over 1, 2 and 4 Celery worker processes.

Imports a synthetic COCO file of 405,040 images x 5 captions once (PostgreSQL), then for each
worker count starts that many real Celery workers (solo pool, BLAS threads = cores / workers,
so the machine's cores are shared, not oversubscribed) and runs the real stage-1 job with a
given `.vec` file (no training): the prepare step on one worker, the blocks spread over all.
Prints seconds (whole job, prepare, blocks), the speed-up, and each worker's peak memory
next to the image matrix's size:

    .venv/bin/python benchmarks/stage1_scaleout.py [--images 405040] [--dim 100]
        [--workers 1,2,4] [--database-url postgres://postgres@127.0.0.1:5432/postgres]
        [--broker redis://127.0.0.1:6379/11]

A database named crowdvl_bench_scale is created on that server and dropped afterwards.
Across machines the same job needs the workers to share CROWDVL_MEDIA_ROOT (the matrix and
the blocks' results); see docs/operations.md, "Several machines".
"""

from __future__ import annotations

import argparse
import os
import subprocess
import sys
import tempfile
import time
import uuid
from pathlib import Path

import numpy as np

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from benchmarks.harness import results_argument, results_tee  # noqa: E402
from benchmarks.import_coco import write_synthetic  # noqa: E402

DB = "crowdvl_bench_scale"
MB = 1024 * 1024
IDLE: list[int] = []  # a started worker's memory before any task (Python, Django, numpy)


def vm_hwm(pid: int, field: str = "VmHWM") -> int:
    for line in Path(f"/proc/{pid}/status").read_text().splitlines():
        if line.startswith(field + ":"):
            return int(line.split()[1]) * 1024
    return 0


def start_workers(
    count: int, queue: str, env: dict, logs: Path, threads: int | None = None
) -> list[tuple]:
    """`count` solo-pool workers on `queue`, each with `threads` BLAS threads (default the
    cores shared out, so the machine is not oversubscribed)."""
    blas = str(threads or max(1, (os.cpu_count() or 1) // count))
    workers = []
    for n in range(count):
        log = logs / f"worker-{count}-{n}.log"
        proc = subprocess.Popen(
            [
                sys.executable,
                "-m",
                "celery",
                "-A",
                "config",
                "worker",
                "--pool",
                "solo",
                "-Q",
                queue,
                "-n",
                f"{queue}-{n}@%h",
                "--without-gossip",
                "--without-mingle",
                "-l",
                "info",
            ],
            cwd=ROOT,
            env={
                **env,
                "CELERY_QUEUE": queue,
                "OPENBLAS_NUM_THREADS": blas,
                "OMP_NUM_THREADS": blas,
            },
            stdout=log.open("w"),
            stderr=subprocess.STDOUT,
        )
        workers.append((proc, log))
    deadline = time.monotonic() + 60
    while time.monotonic() < deadline:
        if all("ready." in log.read_text() for _, log in workers):
            IDLE.append(max(vm_hwm(proc.pid, "VmRSS") for proc, _ in workers))
            return workers
        time.sleep(0.2)
    sys.exit("workers did not start:\n" + "\n".join(log.read_text() for _, log in workers))


def workers_setup(
    *, database_url: str, database: str, broker: str, folder: Path, extra: dict | None = None
) -> dict:
    """A fresh `database` on the server of `database_url`, Django set up on it in this
    process, and the environment the workers start with (media under `folder`)."""
    import psycopg

    with psycopg.connect(database_url, autocommit=True) as conn:
        conn.execute(f"DROP DATABASE IF EXISTS {database} WITH (FORCE)")
        conn.execute(f"CREATE DATABASE {database}")
    env = {
        **os.environ,
        "DATABASE_URL": database_url.rsplit("/", 1)[0] + "/" + database,
        "CELERY_BROKER_URL": broker,
        "DJANGO_SECRET_KEY": "benchmark-" + "x" * 40,
        "CROWDVL_MEDIA_ROOT": str(folder / "media"),
        "DJANGO_SETTINGS_MODULE": "config.settings",
        "PYTHONPATH": str(ROOT),
        **(extra or {}),
    }
    env.pop("TEST_DATABASE_NAME", None)
    os.environ.update(env)
    import django

    django.setup()
    from django.core.management import call_command

    call_command("migrate", verbosity=0)
    return env


def workers_teardown(*, database_url: str, database: str) -> None:
    """Close this process's connections and drop the benchmark's database."""
    import psycopg
    from django.db import connections

    connections.close_all()
    with psycopg.connect(database_url, autocommit=True) as conn:
        conn.execute(f"DROP DATABASE IF EXISTS {database} WITH (FORCE)")


def run_once(*, dataset, vectors: Path, count: int, env: dict, logs: Path) -> dict:
    from annotation.flows.bison.services.pairing import pairing_start
    from annotation.models import Job, JobState
    from annotation.services.runs.runs import run_create
    from config import celery_app

    queue = f"crowdvl-scale-{uuid.uuid4().hex[:6]}"
    workers = start_workers(count, queue, env, logs)
    celery_app.conf.task_always_eager, celery_app.conf.task_default_queue = False, queue
    try:
        run = run_create(dataset=dataset)
        started = time.monotonic()
        job = pairing_start(run=run, vectors_path=str(vectors))
        split = None
        while True:
            job.refresh_from_db()
            if split is None and job.parts_total:
                split = time.monotonic()
            if job.state in (JobState.SUCCEEDED, JobState.FAILED):
                break
            for proc, log in workers:
                if proc.poll() is not None:
                    sys.exit(f"a worker exited:\n{log.read_text()[-3000:]}")
            time.sleep(0.25)
        seconds = time.monotonic() - started
        if job.state != JobState.SUCCEEDED:
            sys.exit(f"job failed: {job.error}")
        peaks = [
            (vm_hwm(proc.pid), "bison.pairing_prepare[" in log.read_text()) for proc, log in workers
        ]
        blocks = [log.read_text().count("bison.pairing_block[") // 2 for _, log in workers]
        return {
            "workers": count,
            "seconds": seconds,
            "prepare": (split or started) - started,
            "blocks": seconds - ((split or started) - started),
            "pairs": Job.objects.get(pk=job.pk).result["pairs"],
            "parts": job.parts_total,
            "peaks": peaks,
            "blocks_per_worker": blocks,
        }
    finally:
        for proc, _ in workers:
            proc.terminate()
        for proc, _ in workers:
            proc.wait(timeout=60)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--images", type=int, default=405_040)
    parser.add_argument("--dim", type=int, default=100)
    parser.add_argument("--workers", default="1,2,4")
    parser.add_argument("--database-url", default="postgres://postgres@127.0.0.1:5432/postgres")
    parser.add_argument("--broker", default="redis://127.0.0.1:6379/11")
    results_argument(parser, __file__)
    args = parser.parse_args()
    results_tee(args.results)

    folder = Path(tempfile.mkdtemp(prefix="crowdvl-scale-"))
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
        rng = np.random.default_rng(0)
        vectors = folder / "vectors.vec"
        words = [f"w{i}" for i in range(5000)]
        with vectors.open("w") as fh:
            fh.write(f"{len(words)} {args.dim}\n")
            for word in words:
                fh.write(word + " " + " ".join(f"{v:.4f}" for v in rng.standard_normal(args.dim)))
                fh.write("\n")
        results = [
            run_once(dataset=dataset, vectors=vectors, count=int(n), env=env, logs=folder)
            for n in args.workers.split(",")
        ]
    finally:
        workers_teardown(database_url=args.database_url, database=DB)

    matrix = args.images * args.dim * 4
    print(
        f"stage 1, {args.images:,} images x 5 captions, {args.dim}-d vectors from a .vec file; "
        f"{os.cpu_count()} cores; import {imported:.0f} s (not counted); image matrix "
        f"{matrix / MB:,.0f} MB; {results[0]['parts']} blocks of "
        f"{os.environ.get('CROWDVL_STAGE1_BLOCK', '4096')} images; an idle worker holds "
        f"{max(IDLE) / MB:,.0f} MB"
    )
    print()
    print(
        f"{'workers':>8}{'job s':>8}{'prepare s':>11}{'blocks s':>10}{'speed-up':>10}"
        f"  peak RSS per worker, MB (* ran prepare); blocks each"
    )
    base = results[0]["seconds"]
    for r in results:
        peaks = ", ".join(f"{p / MB:,.0f}{'*' if prep else ''}" for p, prep in r["peaks"])
        print(
            f"{r['workers']:>8}{r['seconds']:>8.0f}{r['prepare']:>11.0f}{r['blocks']:>10.0f}"
            f"{base / r['seconds']:>9.2f}x  {peaks}; {r['blocks_per_worker']}"
        )
    print(
        f"\npairs: {[r['pairs'] for r in results]} (identical: "
        f"{len({r['pairs'] for r in results}) == 1})"
    )


if __name__ == "__main__":
    main()

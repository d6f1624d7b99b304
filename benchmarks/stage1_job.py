"""Whole BISON stage-1 job through Django (import excluded, DB writes included).

Runs the real `pairing_start` job in-process on (i) the bundled 462-image sample and (ii) a
synthetic 40,504-image COCO file with 5 captions each, once with vectors trained on the
captions and once with a user `.vec` file. Prints median seconds over --repeats runs.

    .venv/bin/python benchmarks/stage1_job.py [--repeats 3] [--database-url postgres://...]

Without --database-url a throw-away SQLite file is used; with one, a database named
crowdvl_bench is created (and dropped) on that server.
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

from benchmarks.harness import results_argument, results_tee  # noqa: E402


def synthetic_coco(path: Path, *, images: int, captions: int, seed: int = 0) -> None:
    rng = random.Random(seed)
    vocab = [f"w{i}" for i in range(8000)]
    topics = [rng.sample(vocab, 40) for _ in range(2000)]
    doc = {"info": {}, "licenses": [], "images": [], "annotations": []}
    cid = 1
    for i in range(images):
        topic = topics[rng.randrange(len(topics))]
        doc["images"].append(
            {"id": i + 1, "file_name": f"img_{i + 1}.jpg", "coco_url": f"http://x/{i + 1}.jpg"}
        )
        for _ in range(captions):
            words = rng.sample(topic, 6) + rng.sample(vocab, 4)
            doc["annotations"].append(
                {"id": cid, "image_id": i + 1, "caption": "a " + " ".join(words)}
            )
            cid += 1
    path.write_text(json.dumps(doc))


def random_vec(path: Path, words: list[str], dim: int, seed: int = 0) -> None:
    import numpy as np

    rng = np.random.default_rng(seed)
    with path.open("w") as fh:
        fh.write(f"{len(words)} {dim}\n")
        for w in words:
            fh.write(w + " " + " ".join(f"{v:.4f}" for v in rng.standard_normal(dim)) + "\n")


def main() -> None:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("--repeats", type=int, default=3)
    parser.add_argument("--database-url")
    parser.add_argument("--images", type=int, default=40504)
    results_argument(parser, __file__)
    args = parser.parse_args()
    results_tee(args.results)

    tmp = Path(tempfile.mkdtemp(prefix="crowdvl-bench-"))
    os.environ["CROWDVL_MEDIA_ROOT"] = str(tmp / "media")
    os.environ.pop("CELERY_BROKER_URL", None)  # tasks in-process
    if args.database_url:
        import psycopg

        base = args.database_url.rsplit("/", 1)[0]
        with psycopg.connect(args.database_url, autocommit=True) as conn:
            conn.execute("DROP DATABASE IF EXISTS crowdvl_bench")
            conn.execute("CREATE DATABASE crowdvl_bench")
        os.environ["DATABASE_URL"] = f"{base}/crowdvl_bench"
    else:
        os.environ["DATABASE_URL"] = f"sqlite:///{tmp / 'bench.sqlite3'}"
    os.environ.setdefault("DJANGO_SETTINGS_MODULE", "config.settings")
    import django

    django.setup()
    from django.core.management import call_command

    from annotation.flows.bison.services.pairing import pairing_start
    from annotation.models import Caption
    from annotation.services.datasets.datasets import dataset_import
    from annotation.services.runs.runs import run_create
    from pipeline.text import tokenize

    call_command("migrate", verbosity=0)
    synth = tmp / "synthetic.json"
    synthetic_coco(synth, images=args.images, captions=5)
    cases = [
        ("sample 462 images", ROOT / "data/sample/coco_captions_val2014.subset.json"),
        (f"synthetic {args.images} x 5", synth),
    ]
    rows = []
    for label, path in cases:
        t = time.perf_counter()
        dataset = dataset_import(path=path).dataset
        import_s = time.perf_counter() - t
        vocab = sorted(
            {
                tok
                for text in Caption.objects.filter(dataset=dataset).values_list("text", flat=True)
                for tok in tokenize(text)
            }
        )
        vec = tmp / f"{dataset.pk}.vec"
        random_vec(vec, vocab, 300)
        for mode, kwargs in (
            ("trained 100-d", {"dim": 100}),
            ("user .vec 300-d", {"vectors_path": str(vec)}),
        ):
            times = []
            for _ in range(args.repeats):
                run = run_create(dataset=dataset)
                t = time.perf_counter()
                job = pairing_start(run=run, allow_new_dim=True, **kwargs)
                job.refresh_from_db()
                times.append(time.perf_counter() - t)
                assert job.state == "succeeded", job.error
            rows.append(
                (label, mode, import_s, statistics.median(times), min(times), job.result["pairs"])
            )
    print(
        f"\nstage-1 job, in-process, database {os.environ['DATABASE_URL'].split('://')[0]}, median of {args.repeats}"
    )
    print(
        f"{'dataset':<24}{'vectors':<18}{'import s':>10}{'job median s':>14}{'job min s':>11}{'pairs':>8}"
    )
    for label, mode, imp, med, mn, pairs in rows:
        print(f"{label:<24}{mode:<18}{imp:>10.2f}{med:>14.2f}{mn:>11.2f}{pairs:>8}")
    if args.database_url:
        from django.db import connections

        connections.close_all()
        import psycopg

        with psycopg.connect(args.database_url, autocommit=True) as conn:
            conn.execute("DROP DATABASE IF EXISTS crowdvl_bench")


if __name__ == "__main__":
    main()

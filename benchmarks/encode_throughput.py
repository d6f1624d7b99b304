"""Encoding throughput on CPU: the `encoders.encode` job's path against a plain loop.

A ViT-B/32-sized CLIP with random weights (vision 12 layers x 768, patch 32, 224 px; text
12 x 512; built from a config and saved with a small tokenizer, as the tests do) encodes
the same synthetic JPEGs (written by this script, 640 x 480) and captions two ways:

* job: the job's own steps (`encode_prepare`, `encode_part` per chunk, `encode_finish`) on a
  dataset imported into a throw-away database, images read through the dataset's source;
* plain: the library alone, a loop of files -> PIL decode -> the model's processor ->
  `get_image_features` (and tokenizer -> `get_text_features`), same batch sizes.

Each measurement runs in a fresh interpreter (its own peak memory), rounds interleaved
(job, plain, job, plain, ...); the model is loaded before the clock starts in both.

    .venv/bin/python benchmarks/encode_throughput.py [--images 64] [--captions 256]
        [--rounds 2] [--database-url postgres://...] [--profile]

`--profile` instead runs the job's steps once under cProfile and splits the chunks' time
into the model's forward passes, the model's processor and tokenizer, reading and decoding
the images, and the rest (the job's own work: database, chunk files, progress).

Without --database-url a throw-away SQLite file is used; with one, a database named
crowdvl_bench_encode is created (and dropped) on that server.
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

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from benchmarks.harness import (  # noqa: E402
    fmt_mb,
    in_subprocess,
    peak_rss,
    results_argument,
    results_tee,
)

WORDS = [
    "a",
    "man",
    "woman",
    "dog",
    "cat",
    "sits",
    "stands",
    "on",
    "the",
    "table",
    "street",
    "beach",
    "near",
    "with",
    "red",
    "blue",
    "green",
    "small",
    "large",
    "two",
    "three",
    "people",
    "car",
    "bus",
    "train",
    "plate",
    "of",
    "food",
    "next",
    "to",
    "tree",
    "field",
    "water",
]


def build_model(folder: Path) -> None:
    """A ViT-B/32-shaped CLIP, seeded random weights, with the tests' tiny tokenizer."""
    import torch
    from transformers import CLIPConfig, CLIPImageProcessor, CLIPModel

    from tests.tiny_models import tiny_tokenizer

    tokenizer = tiny_tokenizer(folder)
    eos = tokenizer.eos_token_id
    torch.manual_seed(0)
    config = CLIPConfig(
        projection_dim=512,
        text_config={
            "hidden_size": 512,
            "intermediate_size": 2048,
            "num_hidden_layers": 12,
            "num_attention_heads": 8,
            "vocab_size": len(tokenizer),
            "max_position_embeddings": 77,
            "eos_token_id": eos,
            "pad_token_id": eos,
            "bos_token_id": eos - 1,
        },
        vision_config={
            "hidden_size": 768,
            "intermediate_size": 3072,
            "num_hidden_layers": 12,
            "num_attention_heads": 12,
            "image_size": 224,
            "patch_size": 32,
        },
    )
    CLIPModel(config).save_pretrained(folder)
    tokenizer.save_pretrained(folder)
    CLIPImageProcessor(
        size={"shortest_edge": 224}, crop_size={"height": 224, "width": 224}
    ).save_pretrained(folder)


def write_data(folder: Path, *, images: int, captions: int) -> Path:
    """Synthetic JPEGs (smooth colour fields with noise, COCO-sized) and a COCO captions file
    spreading `captions` over them; returns the file."""
    import numpy as np
    from PIL import Image

    rng = np.random.default_rng(0)
    pictures = folder / "images"
    pictures.mkdir(parents=True, exist_ok=True)
    y, x = np.mgrid[0:480, 0:640]
    doc: dict = {"info": {}, "licenses": [], "images": [], "annotations": []}
    for i in range(images):
        base = np.stack([(x * (i + 1)) % 256, (y * (i + 2)) % 256, (x + y) % 256], axis=-1)
        noisy = base + rng.normal(0, 12, size=base.shape)
        name = f"img_{i + 1:06d}.jpg"
        Image.fromarray(noisy.clip(0, 255).astype(np.uint8)).save(
            pictures / name, format="JPEG", quality=90
        )
        doc["images"].append({"id": i + 1, "file_name": name, "coco_url": ""})
    for c in range(captions):
        words = rng.choice(WORDS, size=int(rng.integers(8, 16)))
        doc["annotations"].append(
            {"id": c + 1, "image_id": c % images + 1, "caption": " ".join(words)}
        )
    path = folder / "captions.json"
    path.write_text(json.dumps(doc))
    return path


def _django(database_url: str, media: str, import_dir: str) -> None:
    os.environ["DATABASE_URL"] = database_url
    os.environ["CROWDVL_MEDIA_ROOT"] = media
    os.environ["CROWDVL_IMPORT_DIR"] = import_dir
    os.environ.pop("CELERY_BROKER_URL", None)
    os.environ.setdefault("DJANGO_SETTINGS_MODULE", "config.settings")
    os.environ.setdefault("DJANGO_DEBUG", "1")  # a throw-away database: no secret key needed
    import django

    django.setup()


def child_job(args: argparse.Namespace) -> dict:
    """The job's steps in this process, timed per chunk kind (the model loaded first)."""
    _django(args.database_url, args.media, args.import_dir)
    from unittest import mock

    from annotation.encoders import services
    from annotation.encoders.models import EmbeddingSet
    from annotation.models import Dataset, Job

    dataset = Dataset.objects.get(name="bench")
    EmbeddingSet.objects.filter(dataset=dataset).delete()
    # Started as the console starts it, but not sent: the steps the Celery tasks call
    # (prepare, each part, finish) run below in order, each timed.
    with mock.patch("annotation.encoders.services.job_enqueue"):
        embedding_set = services.embedding_set_start(
            dataset=dataset, checkpoint="model", model_name="vit-b32-random", dtype="float32"
        )
    job = Job.objects.get(pk=embedding_set.job_id)
    services.encoder_for_set(embedding_set)  # load before the clock, as the plain loop does
    parts = services.encode_prepare(job_id=job.pk)
    image_parts, _ = services._plan(job, embedding_set)
    spent = {"images": 0.0, "captions": 0.0}
    for part in parts:
        started = time.perf_counter()
        services.encode_part(job_id=job.pk, part=part)
        spent["images" if part < image_parts else "captions"] += time.perf_counter() - started
    started = time.perf_counter()
    services.encode_finish(job_id=job.pk)
    finish = time.perf_counter() - started
    embedding_set.refresh_from_db()
    assert embedding_set.state == "ready", Job.objects.get(pk=job.pk).error
    return {
        "images_s": spent["images"],
        "captions_s": spent["captions"],
        "finish_s": finish,
        "images": embedding_set.counts["images_encoded"],
        "captions": embedding_set.counts["captions_encoded"],
        "peak": peak_rss(),
    }


# cProfile's cumulative time of these functions, by what they do (each counted once: none
# calls another of the list).
PROFILED = {
    "forward": (("modeling_clip", "get_image_features"), ("modeling_clip", "get_text_features")),
    "processor + tokenizer": (
        ("image_processing_clip", "preprocess"),
        ("pipeline/encoders/encode", "tokenize"),
    ),
    "read + decode images": (
        ("annotation/encoders/services", "_original_bytes"),
        ("pipeline/encoders/encode", "decode_image"),
    ),
}


def child_profile(args: argparse.Namespace) -> dict:
    """The job's steps under cProfile: seconds in the chunks and in each group of PROFILED."""
    import cProfile
    import pstats

    profile = cProfile.Profile()
    profile.enable()
    child_job(args)
    profile.disable()
    stats = pstats.Stats(profile).stats  # type: ignore[attr-defined]

    def cumulative(module: str, name: str) -> float:
        return sum(v[3] for (file, _, func), v in stats.items() if func == name and module in file)

    out = {"chunks": cumulative("annotation/encoders/services", "encode_part")}
    for group, names in PROFILED.items():
        out[group] = sum(cumulative(module, name) for module, name in names)
    out["job's own work"] = out["chunks"] - sum(out[g] for g in PROFILED)
    return out


def child_plain(args: argparse.Namespace) -> dict:
    """The library alone over the same files and captions."""
    import numpy as np
    import torch
    from PIL import Image
    from transformers import AutoImageProcessor, CLIPModel, CLIPTokenizer

    folder = Path(args.import_dir) / "model"
    model = CLIPModel.from_pretrained(folder, local_files_only=True).eval()
    processor = AutoImageProcessor.from_pretrained(folder, local_files_only=True, use_fast=False)
    tokenizer = CLIPTokenizer.from_pretrained(folder, local_files_only=True)
    doc = json.loads(Path(args.data).read_text())
    files = [Path(args.data).parent / "images" / i["file_name"] for i in doc["images"]]
    texts = [a["caption"] for a in doc["annotations"]]
    rows = []
    started = time.perf_counter()
    for start in range(0, len(files), 32):
        batch = [Image.open(f).convert("RGB") for f in files[start : start + 32]]
        pixels = processor(images=batch, return_tensors="pt")["pixel_values"]
        with torch.inference_mode():
            rows.append(model.get_image_features(pixel_values=pixels).numpy())
    images_s = time.perf_counter() - started
    started = time.perf_counter()
    for start in range(0, len(texts), 256):
        tokens = tokenizer(
            texts[start : start + 256], padding=True, truncation=True, return_tensors="pt"
        )
        with torch.inference_mode():
            rows.append(model.get_text_features(**tokens).numpy())
    captions_s = time.perf_counter() - started
    assert all(np.isfinite(r).all() for r in rows)
    return {
        "images_s": images_s,
        "captions_s": captions_s,
        "finish_s": 0.0,
        "images": len(files),
        "captions": len(texts),
        "peak": peak_rss(),
    }


def _loadavg() -> str:
    try:
        return " ".join(Path("/proc/loadavg").read_text().split()[:3])
    except OSError:
        return "unknown"


def setup(args: argparse.Namespace, tmp: Path) -> list[str]:
    """Model, data, database with the dataset imported; the children's arguments."""
    import_dir = tmp / "import"
    build_model(import_dir / "model")
    data = write_data(import_dir / "data", images=args.images, captions=args.captions)
    if args.database_url:
        import psycopg

        with psycopg.connect(args.database_url, autocommit=True) as conn:
            conn.execute("DROP DATABASE IF EXISTS crowdvl_bench_encode")
            conn.execute("CREATE DATABASE crowdvl_bench_encode")
        database_url = f"{args.database_url.rsplit('/', 1)[0]}/crowdvl_bench_encode"
    else:
        database_url = f"sqlite:///{tmp / 'bench.sqlite3'}"
    media = str(tmp / "media")
    _django(database_url, media, str(import_dir))
    from django.core.management import call_command

    from annotation.services.datasets.datasets import dataset_import

    call_command("migrate", verbosity=0)
    dataset_import(
        path=data,
        name="bench",
        image_source="local_dir",
        image_location=str(data.parent / "images"),
    )
    return [
        "--database-url",
        database_url,
        "--media",
        media,
        "--import-dir",
        str(import_dir),
        "--data",
        str(data),
    ]


def main() -> None:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("--images", type=int, default=64)
    parser.add_argument("--captions", type=int, default=256)
    parser.add_argument("--rounds", type=int, default=2)
    parser.add_argument("--database-url")
    parser.add_argument("--profile", action="store_true", help="split the job's time instead")
    parser.add_argument("--child", choices=["job", "plain", "profile"], help=argparse.SUPPRESS)
    parser.add_argument("--media", help=argparse.SUPPRESS)
    parser.add_argument("--import-dir", help=argparse.SUPPRESS)
    parser.add_argument("--data", help=argparse.SUPPRESS)
    results_argument(parser, __file__)
    args = parser.parse_args()
    if args.child:
        os.environ.setdefault("HF_HUB_OFFLINE", "1")
        children = {"job": child_job, "plain": child_plain, "profile": child_profile}
        result = children[args.child](args)
        print(json.dumps(result))
        return
    if args.profile and args.results == parser.get_default("results"):
        args.results = args.results.replace(".txt", "_profile.txt")
    results_tee(args.results)
    print(f"load average at start (1, 5, 15 min): {_loadavg()}")
    tmp = Path(tempfile.mkdtemp(prefix="crowdvl-bench-encode-"))
    started = time.perf_counter()
    argv = setup(args, tmp)
    print(f"setup (model, {args.images} JPEGs, import) {time.perf_counter() - started:.1f} s")
    if args.profile:
        split = in_subprocess(__file__, "profile", argv)
        print(f"\nthe job's chunks under cProfile ({args.images} images, {args.captions} captions)")
        for group, seconds in split.items():
            print(f"{group:<24}{seconds:>8.2f} s{100 * seconds / split['chunks']:>8.1f} %")
        print(f"load average at end (1, 5, 15 min): {_loadavg()}")
        _drop_database(args)
        return
    runs: dict[str, list[dict]] = {"job": [], "plain": []}
    for r in range(args.rounds):
        for name in ("job", "plain") if r % 2 == 0 else ("plain", "job"):
            runs[name].append(in_subprocess(__file__, name, argv))
            last = runs[name][-1]
            print(
                f"round {r + 1} {name:<5} images {last['images_s']:.2f} s, "
                f"captions {last['captions_s']:.2f} s"
            )

    def rate(name: str, kind: str) -> float:
        return statistics.median(m[kind] / m[f"{kind}_s"] for m in runs[name])

    def paired(kind: str) -> float:
        """Median over rounds of the job's rate over the plain loop's in the same round (the
        machine's load drifts between rounds more than within one)."""
        return statistics.median(
            (j[kind] / j[f"{kind}_s"]) / (p[kind] / p[f"{kind}_s"])
            for j, p in zip(runs["job"], runs["plain"], strict=True)
        )

    import torch

    print(
        f"\nencoding on CPU ({os.cpu_count()} cores, torch {torch.__version__}, "
        f"{torch.get_num_threads()} threads), ViT-B/32-sized CLIP, random weights, fp32; "
        f"{args.images} images 640x480 JPEG, {args.captions} captions; median of {args.rounds} "
        "interleaved rounds, model loaded before timing"
    )
    print(f"{'path':<8}{'images/s':>10}{'captions/s':>12}{'finish s':>10}{'peak MB':>10}")
    for name in ("job", "plain"):
        finish = statistics.median(m["finish_s"] for m in runs[name])
        peak = max(m["peak"] for m in runs[name])
        print(
            f"{name:<8}{rate(name, 'images'):>10.2f}{rate(name, 'captions'):>12.2f}"
            f"{finish:>10.2f}{fmt_mb(peak):>10}"
        )
    print(
        f"{'job/plain':<8}{rate('job', 'images') / rate('plain', 'images'):>9.2f}x"
        f"{rate('job', 'captions') / rate('plain', 'captions'):>11.2f}x"
        f"{'':>10}"
        f"{max(m['peak'] for m in runs['job']) / max(m['peak'] for m in runs['plain']):>9.2f}x"
    )
    print(
        f"{'paired':<8}{paired('images'):>9.2f}x{paired('captions'):>11.2f}x"
        "   (median over rounds of job/plain within the round)"
    )
    print(f"load average at end (1, 5, 15 min): {_loadavg()}")
    _drop_database(args)


def _drop_database(args: argparse.Namespace) -> None:
    if args.database_url:
        from django.db import connections

        connections.close_all()
        import psycopg

        with psycopg.connect(args.database_url, autocommit=True) as conn:
            conn.execute("DROP DATABASE IF EXISTS crowdvl_bench_encode")


if __name__ == "__main__":
    main()

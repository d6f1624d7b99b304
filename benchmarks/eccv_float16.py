"""One ECCV proposal part at 10x val2014 and 512-d with float16 embedding storage.

A part (annotation.flows.eccv.services.rankings.annotator_ranking) loads one model's
``.npz`` embeddings and ranks the run's queries over the whole gallery. This runs those two
calls (pipeline.eccv_embeddings.load_model_embeddings with ``storage="float16"``, then
model_ranking with the paper's 1,261 image and 1,333 caption queries, top-25) in a fresh
process on a synthetic model of 405,040 images and 2,025,200 captions (512-d float32 file,
4.98 GB, written under /tmp a chunk at a time and deleted afterwards) and prints its time
and peak RSS (``ru_maxrss``, interpreter and imports included) against the same-run
baseline (b): the bare products of the same queries with the file's float32 rows
(memory-mapped from an uncompressed copy of the same arrays; no checks, no selection).

(c) Agreement: the same two calls with float32 and with float16 storage on a 1x val2014 model
(40,504 x 202,520, 512-d), counting the top-25 entries (and top-5 proposals) that differ.

    .venv/bin/python benchmarks/eccv_float16.py [--repeats 3] [--images 405040]
        [--compare-images 40504] [--tmp /tmp]
"""

from __future__ import annotations

import argparse
import json
import os
import platform
import shutil
import statistics
import sys
import tempfile
import time
import zipfile
from pathlib import Path
from typing import Any

REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO))

import numpy as np  # noqa: E402
from harness import blas_name, fmt_mb, in_subprocess, peak_rss, results_argument, results_tee  # noqa: E402

PER_IMAGE = 5
IMAGE_QUERIES, CAPTION_QUERIES = 1261, 1333  # the paper's query sample (Section 3.2)
CHUNK = 8192  # images generated at once when writing a file


def concept_rows(seed: int, chunk: int, n: int, dim: int) -> np.ndarray:
    return np.random.default_rng([seed, chunk, 0]).standard_normal((n, dim), dtype=np.float32)


def write_model(path: Path, n_images: int, dim: int, seed: int) -> None:
    """A synthetic model as an uncompressed .npz written a chunk at a time: image rows are a
    concept plus noise, each caption its image's concept plus its own noise."""
    n_captions = n_images * PER_IMAGE
    with zipfile.ZipFile(path, "w", compression=zipfile.ZIP_STORED, allowZip64=True) as archive:
        for name, array in (
            ("image_ids", np.arange(n_images, dtype=np.int64) * 3 + 1),
            ("caption_ids", np.arange(n_captions, dtype=np.int64) + 1),
        ):
            with archive.open(f"{name}.npy", "w", force_zip64=True) as out:
                np.lib.format.write_array(out, array)
        for name, rows in (("image_embeddings", n_images), ("caption_embeddings", n_captions)):
            with archive.open(f"{name}.npy", "w", force_zip64=True) as out:
                header = {"descr": "<f4", "fortran_order": False, "shape": (rows, dim)}
                np.lib.format.write_array_header_2_0(out, header)
                for c, first in enumerate(range(0, n_images, CHUNK)):
                    count = min(CHUNK, n_images - first)
                    concept = concept_rows(seed, c, count, dim)
                    noise = np.random.default_rng([seed, c, 1 if name[0] == "i" else 2])
                    if name == "caption_embeddings":
                        concept = np.repeat(concept, PER_IMAGE, axis=0)
                    block = concept + 1.5 * noise.standard_normal(concept.shape, dtype=np.float32)
                    out.write(block.tobytes())


def query_sample(n_images: int, seed: int) -> tuple[np.ndarray, np.ndarray]:
    rng = np.random.default_rng(seed)
    images = np.sort(rng.choice(n_images, size=IMAGE_QUERIES, replace=False)) * 3 + 1
    captions = np.sort(rng.choice(n_images * PER_IMAGE, size=CAPTION_QUERIES, replace=False)) + 1
    return images.astype(np.int64), captions.astype(np.int64)


# ----------------------------------------------------------------------------- child side


def run_part(args: argparse.Namespace) -> dict[str, Any]:
    """Load with ``args.storage`` and rank the query sample, as a proposal part does."""
    from pipeline.eccv_embeddings import load_model_embeddings, model_ranking

    n_images = args.images
    known_images = np.arange(n_images, dtype=np.int64) * 3 + 1
    known_captions = np.arange(n_images * PER_IMAGE, dtype=np.int64) + 1
    image_queries, caption_queries = query_sample(n_images, args.seed)
    before = peak_rss()
    start = time.perf_counter()
    embeddings = load_model_embeddings(
        args.file,
        known_image_ids=known_images,
        known_caption_ids=known_captions,
        storage=args.storage,
    )
    loaded = time.perf_counter()
    ranking = model_ranking(
        embeddings,
        depth=25,
        image_queries=image_queries.tolist(),
        caption_queries=caption_queries.tolist(),
        overwrite=True,
    )
    done = time.perf_counter()
    result: dict[str, Any] = {
        "times": [done - start],
        "steps": {"load and check": loaded - start, "top-25, both directions": done - loaded},
        "dtype": str(embeddings.caption_embeddings.dtype),
        "rss_before": before,
        "rss_peak": peak_rss(),
    }
    if args.save:
        np.savez(args.save, i2t=ranking.i2t.ranked, t2i=ranking.t2i.ranked)  # type: ignore[attr-defined]
    return result


def run_bare(args: argparse.Namespace) -> dict[str, Any]:
    """(b) the products of the same queries with the file's float32 rows, memory-mapped."""
    image_queries, caption_queries = query_sample(args.images, args.seed)
    images = np.load(Path(args.bare_dir) / "image_embeddings.npy", mmap_mode="r")
    captions = np.load(Path(args.bare_dir) / "caption_embeddings.npy", mmap_mode="r")
    before = peak_rss()
    start = time.perf_counter()
    image_rows = (image_queries - 1) // 3
    caption_rows = caption_queries - 1
    for queries, gallery in ((images[image_rows], captions), (captions[caption_rows], images)):
        for first in range(0, gallery.shape[0], 32768):
            np.asarray(queries) @ np.asarray(gallery[first : first + 32768]).T
    return {"times": [time.perf_counter() - start], "rss_before": before, "rss_peak": peak_rss()}


CHILDREN = {"part": run_part, "bare": run_bare}


# ---------------------------------------------------------------------------- parent side


def times(runs: list[dict]) -> list[float]:
    return [t for run in runs for t in run["times"]]


def extract(npz: Path, folder: Path) -> None:
    """The two embedding members as plain .npy files (for the memory-mapped baseline)."""
    with zipfile.ZipFile(npz) as archive:
        for name in ("image_embeddings", "caption_embeddings"):
            with archive.open(f"{name}.npy") as src, open(folder / f"{name}.npy", "wb") as dst:
                shutil.copyfileobj(src, dst, 1 << 24)


def differences(a: Path, b: Path) -> dict[str, tuple[int, int, int, int]]:
    """Per direction: top-25 entries (query, id) of ``a`` not in ``b``; entries in another
    position; top-5 entries of ``a`` not in ``b``'s top 5; the number of entries."""
    out = {}
    with np.load(a) as left, np.load(b) as right:
        for direction in ("i2t", "t2i"):
            x, y = left[direction], right[direction]
            missing = sum(np.setdiff1d(x[i], y[i]).size for i in range(x.shape[0]))
            moved = int((x != y).sum())
            top5 = sum(np.setdiff1d(x[i, :5], y[i, :5]).size for i in range(x.shape[0]))
            out[direction] = (missing, moved, top5, int(x.size))
    return out


def main() -> None:
    args = parse_args()
    if args.child:
        print(json.dumps(CHILDREN[args.child](args)))
        return
    results_tee(args.results)
    print(
        f"python {platform.python_version()}, numpy {np.__version__} ({blas_name()}), "
        f"{os.cpu_count()} CPUs, load average {os.getloadavg()[0]:.1f} at start"
    )
    folder = Path(tempfile.mkdtemp(prefix="crowdvl_bench_eccv16_", dir=args.tmp))
    try:
        scale(args, folder)
        compare(args, folder)
    finally:
        shutil.rmtree(folder, ignore_errors=True)
    print(f"load average {os.getloadavg()[0]:.1f} at the end")


def scale(args: argparse.Namespace, folder: Path) -> None:
    n = args.images
    model = folder / "model.npz"
    start = time.perf_counter()
    write_model(model, n, args.dim, args.seed)
    extract(model, folder)
    print(
        f"wrote {model.stat().st_size / 1e9:.2f} GB ({n:,} images, {n * PER_IMAGE:,} captions, "
        f"{args.dim}-d float32) in {time.perf_counter() - start:.0f} s"
    )
    common = ["--images", str(n), "--dim", str(args.dim), "--seed", str(args.seed)]
    runs: dict[str, list[dict]] = {"part": [], "bare": []}
    for _ in range(args.repeats):
        runs["part"].append(
            in_subprocess(__file__, "part", [*common, "--file", str(model), "--storage", "float16"])
        )
        runs["bare"].append(in_subprocess(__file__, "bare", [*common, "--bare-dir", str(folder)]))
    part, bare = runs["part"], runs["bare"]
    print(
        f"\n(a)/(b) One proposal part: {IMAGE_QUERIES:,} image and {CAPTION_QUERIES:,} caption "
        f"queries over {n:,} images / {n * PER_IMAGE:,} captions, {args.dim}-d, top-25; "
        f"median of {args.repeats} interleaved rounds"
    )
    width = 50
    header = f"{'measurement':<{width}}{'median s':>10}{'min s':>9}{'vs (b)':>9}{'peak RSS MB':>13}"
    print(header)
    print("-" * len(header))
    ratio = statistics.median(times(part)) / statistics.median(times(bare))
    print(
        f"{'(a) load + rank, float16 storage':<{width}}{statistics.median(times(part)):>10.1f}"
        f"{min(times(part)):>9.1f}{ratio:>8.2f}x{fmt_mb(max(r['rss_peak'] for r in part)):>13}"
    )
    for step in part[0]["steps"]:
        values = [r["steps"][step] for r in part]
        print(f"{'      ' + step:<{width}}{statistics.median(values):>10.1f}{min(values):>9.1f}")
    print(
        f"{'(b) bare float32 products (mmap)':<{width}}{statistics.median(times(bare)):>10.1f}"
        f"{min(times(bare)):>9.1f}{'':>9}{fmt_mb(max(r['rss_peak'] for r in bare)):>13}"
    )
    rss = [r["rss_peak"] for r in part]
    matrices = n * (1 + PER_IMAGE) * args.dim
    print(
        f"(a) peak RSS per round (MB): {', '.join(fmt_mb(v) for v in rss)}; limit 4,096. "
        f"The model's matrices: {fmt_mb(matrices * 2)} MB as float16, "
        f"{fmt_mb(matrices * 4)} MB as float32. Stored dtype: {part[0]['dtype']}."
    )


def compare(args: argparse.Namespace, folder: Path) -> None:
    n = args.compare_images
    model = folder / "compare.npz"
    write_model(model, n, args.dim, args.seed + 1)
    common = ["--images", str(n), "--dim", str(args.dim), "--seed", str(args.seed)]
    found = {}
    for storage in ("float32", "float16"):
        saved = folder / f"ranked-{storage}.npz"
        found[storage] = in_subprocess(
            __file__,
            "part",
            [*common, "--file", str(model), "--storage", storage, "--save", str(saved)],
        )
    print(
        f"\n(c) float16 vs float32 storage on one model of {n:,} images / {n * PER_IMAGE:,} "
        f"captions ({args.dim}-d), the same {IMAGE_QUERIES:,} + {CAPTION_QUERIES:,} queries"
    )
    for storage, run in found.items():
        print(f"    {storage}: {run['times'][0]:.1f} s, peak RSS {fmt_mb(run['rss_peak'])} MB")
    header = f"{'direction':<10}{'entries':>10}{'not in f32 top-25':>19}{'other position':>16}{'not in f32 top-5':>18}"
    print(header)
    for direction, (missing, moved, top5, total) in differences(
        folder / "ranked-float16.npz", folder / "ranked-float32.npz"
    ).items():
        print(f"{direction:<10}{total:>10,}{missing:>19,}{moved:>16,}{top5:>18,}")


def parse_args(argv: list[str] | None = None) -> argparse.Namespace:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--repeats", type=int, default=3)
    parser.add_argument("--images", type=int, default=405_040, help="5 captions each")
    parser.add_argument("--compare-images", type=int, default=40_504)
    parser.add_argument("--dim", type=int, default=512)
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--tmp", default="/tmp", help="where the model files are written")
    results_argument(parser, __file__)
    parser.add_argument("--child", choices=sorted(CHILDREN), help=argparse.SUPPRESS)
    parser.add_argument("--file", help=argparse.SUPPRESS)
    parser.add_argument("--storage", default="float16", help=argparse.SUPPRESS)
    parser.add_argument("--save", help=argparse.SUPPRESS)
    parser.add_argument("--bare-dir", help=argparse.SUPPRESS)
    return parser.parse_args(argv)


if __name__ == "__main__":
    main()

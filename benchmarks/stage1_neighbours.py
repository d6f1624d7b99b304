"""Benchmark BISON stage 1: exact nearest neighbours at COCO val2014 scale, and the whole
pure-pipeline stage-1 computation (tokenise, word vectors, mean per image, neighbours).

Every measurement runs in a fresh subprocess so its peak RSS (``ru_maxrss`` of that
process, which includes the interpreter and imported libraries) belongs to it alone.
The neighbour search (a) and its baseline (b), the bare float32 matrix products of the
same shape in the same row blocks, run alternately, one repeat per subprocess.

    .venv/bin/python benchmarks/stage1_neighbours.py [--repeats 5] [--images 40504] [--dim 300]
"""

from __future__ import annotations

import argparse
import json
import os
import platform
import statistics
import sys
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO))

import numpy as np  # noqa: E402
from harness import MB, blas_name, fmt_mb, in_subprocess, peak_rss, results_argument, results_tee  # noqa: E402

from pipeline.neighbours import nearest_neighbours, normalize_rows  # noqa: E402

SAMPLE = REPO / "data" / "sample" / "coco_captions_val2014.subset.json"


# ----------------------------------------------------------------------------- child side


def synthetic_unit(n: int, dim: int, seed: int) -> np.ndarray:
    """Seeded random unit vectors, generated in float32 to avoid a float64 copy."""
    rng = np.random.default_rng(seed)
    return normalize_rows(rng.standard_normal((n, dim), dtype=np.float32))


def warm_up_blas(unit: np.ndarray) -> None:
    # Starts OpenBLAS's thread pool so the first timed repeat does not pay for it.
    np.matmul(unit[:256], unit[:1024].T)


def timed(repeats: int, work: Callable[[], object]) -> list[float]:
    times = []
    for _ in range(repeats):
        start = time.perf_counter()
        work()
        times.append(time.perf_counter() - start)
    return times


def run_neighbours(args: argparse.Namespace) -> dict[str, Any]:
    """(a) pipeline.neighbours.nearest_neighbours over every row."""
    unit = synthetic_unit(args.images, args.dim, args.seed)
    warm_up_blas(unit)
    before = peak_rss()
    times = timed(args.repeats, lambda: nearest_neighbours(unit, block_size=args.block_size))
    return {"times": times, "rss_before": before, "rss_peak": peak_rss()}


def run_bare_blocked(args: argparse.Namespace) -> dict[str, Any]:
    """(b) only the matrix products of (a): same blocks, same output buffer, no argmax."""
    unit = synthetic_unit(args.images, args.dim, args.seed)
    warm_up_blas(unit)
    n, block = unit.shape[0], args.block_size

    def products() -> None:
        buffer = np.empty((min(block, n), n), dtype=np.float32)
        for first in range(0, n, block):
            last = min(first + block, n)
            np.matmul(unit[first:last], unit.T, out=buffer[: last - first])

    before = peak_rss()
    times = timed(args.repeats, products)
    return {"times": times, "rss_before": before, "rss_peak": peak_rss()}


def run_bare_full(args: argparse.Namespace) -> dict[str, Any]:
    """(c) one unblocked n x n product (float32 result: 6.6 GB at n = 40,504).

    The right operand is a separate copy of ``unit.T``: numpy sends ``unit @ unit.T`` on
    one buffer to SSYRK, which does half the FLOPs and, with this OpenBLAS, crashes once
    the result passes 4 GiB (numpy issue 19685).
    """
    unit = synthetic_unit(args.images, args.dim, args.seed)
    right = np.ascontiguousarray(unit.T)
    warm_up_blas(unit)
    before = peak_rss()
    times = timed(args.repeats, lambda: unit @ right)
    return {"times": times, "rss_before": before, "rss_peak": peak_rss()}


def stage1_steps(
    captions: list[tuple[int, str]],
    n_images: int,
    make_vectors: Callable[[list[list[str]]], Any],
    block_size: int,
) -> tuple[dict[str, float], np.ndarray]:
    """One stage-1 pass; returns seconds per step and the neighbour indices."""
    from pipeline.embeddings import image_embeddings
    from pipeline.text import tokenize

    steps: dict[str, float] = {}
    start = time.perf_counter()
    sentences = [tokenize(text) for _, text in captions]
    groups: list[list[str]] = [[] for _ in range(n_images)]
    for (image, _), tokens in zip(captions, sentences, strict=True):
        groups[image].extend(tokens)
    steps["tokenise + group"] = time.perf_counter() - start

    start = time.perf_counter()
    vectors = make_vectors(sentences)
    steps["vectors"] = time.perf_counter() - start

    start = time.perf_counter()
    embedded, mask = image_embeddings(groups, vectors)
    steps["mean word vector per image"] = time.perf_counter() - start

    start = time.perf_counter()
    unit = normalize_rows(embedded)
    steps["normalise rows"] = time.perf_counter() - start

    start = time.perf_counter()
    index, _ = nearest_neighbours(unit, valid=mask, block_size=block_size)
    steps["nearest neighbours"] = time.perf_counter() - start
    return steps, index


def run_pipeline_sample(args: argparse.Namespace) -> dict[str, Any]:
    """Stage 1 on the real 462-image sample; trains FastText unless --vectors is given."""
    from pipeline.coco import load_coco_captions
    from pipeline.embeddings import load_word_vectors, train_word_vectors

    def make_vectors(sentences: list[list[str]]) -> Any:
        if args.vectors:
            return load_word_vectors(args.vectors)
        return train_word_vectors(sentences, dim=args.dim, seed=args.seed)

    runs = []
    before = peak_rss()
    for _ in range(args.repeats):
        start = time.perf_counter()
        coco = load_coco_captions(args.sample)
        load_seconds = time.perf_counter() - start
        position = {image.id: i for i, image in enumerate(coco.images)}
        captions = [(position[c.image_id], c.text) for c in coco.captions]
        steps, index = stage1_steps(captions, len(coco.images), make_vectors, args.block_size)
        runs.append({"load + validate COCO JSON": load_seconds, **steps})
    return {
        "runs": runs,
        "images": len(coco.images),
        "captions": len(coco.captions),
        "vectors": "loaded " + str(args.vectors) if args.vectors else f"FastText {args.dim}-d",
        "no_neighbour": int((index < 0).sum()),
        "rss_before": before,
        "rss_peak": peak_rss(),
    }


def synthetic_captions(
    n_images: int, per_image: int, vocab_size: int, seed: int
) -> tuple[list[tuple[int, str]], list[str]]:
    """Seeded captions of 8-14 words drawn with Zipf-like frequencies from made-up words."""
    rng = np.random.default_rng(seed)
    syllables = [c + v for c in "bcdfghklmnprstvwz" for v in "aeiou"]
    words: list[str] = []
    seen: set[str] = set()
    while len(words) < vocab_size:
        word = "".join(rng.choice(syllables, size=int(rng.integers(1, 4))))
        if word not in seen:
            seen.add(word)
            words.append(word)
    weights = 1.0 / np.arange(1, vocab_size + 1)
    total = n_images * per_image
    lengths = rng.integers(8, 15, size=total)
    picks = rng.choice(vocab_size, size=int(lengths.sum()), p=weights / weights.sum())
    captions = []
    offset = 0
    for k, length in enumerate(lengths.tolist()):
        chosen = [words[i] for i in picks[offset : offset + length]]
        offset += length
        # Capitals and punctuation so tokenisation does its real work.
        captions.append((k // per_image, chosen[0].capitalize() + " " + " ".join(chosen[1:]) + "."))
    return captions, words


def run_pipeline_synthetic(args: argparse.Namespace) -> dict[str, Any]:
    """Stage 1 on synthetic captions at COCO val2014 scale with seeded random word vectors."""
    from pipeline.embeddings import WordVectors, train_word_vectors
    from pipeline.text import tokenize

    captions, words = synthetic_captions(args.images, 5, args.vocab, args.seed)
    table = np.random.default_rng(args.seed + 1).standard_normal((len(words), args.dim))

    def make_vectors(_: list[list[str]]) -> Any:
        return WordVectors.from_arrays(words, table, source="seeded random")

    runs = []
    before = peak_rss()
    for _ in range(args.repeats):
        steps, _index = stage1_steps(captions, args.images, make_vectors, args.block_size)
        runs.append(steps)
    sentences = [tokenize(text) for _, text in captions]
    tokens = sum(len(sentence) for sentence in sentences)
    result: dict[str, Any] = {
        "runs": runs,
        "images": args.images,
        "captions": len(captions),
        "tokens": tokens,
        "vectors": f"seeded random {args.dim}-d, {len(words)} words (not trained)",
        "rss_before": before,
        "rss_peak": peak_rss(),
    }
    if args.train_synthetic:
        start = time.perf_counter()
        train_word_vectors(sentences, dim=args.dim, seed=args.seed)
        result["train_seconds"] = time.perf_counter() - start
        result["rss_peak_with_training"] = peak_rss()
    return result


CHILDREN: dict[str, Callable[[argparse.Namespace], dict[str, Any]]] = {
    "neighbours": run_neighbours,
    "bare-blocked": run_bare_blocked,
    "bare-full": run_bare_full,
    "pipeline-sample": run_pipeline_sample,
    "pipeline-synthetic": run_pipeline_synthetic,
}


# ---------------------------------------------------------------------------- parent side


def interleaved(names: list[str], argv: list[str], repeats: int) -> dict[str, dict[str, Any]]:
    """One fresh subprocess per repeat and measurement, alternating (a), (b), (a), (b)...

    Alternating keeps slow drift of a shared machine from favouring either side.
    """
    runs: dict[str, list[dict[str, Any]]] = {name: [] for name in names}
    for _ in range(repeats):
        for name in names:
            runs[name].append(in_subprocess(__file__, name, [*argv, "--repeats", "1"]))
    return {
        name: {
            "times": [t for run in results for t in run["times"]],
            "rss_before": max(run["rss_before"] for run in results),
            "rss_peak": max(run["rss_peak"] for run in results),
        }
        for name, results in runs.items()
    }


def print_neighbour_table(args: argparse.Namespace, results: dict[str, dict[str, Any]]) -> None:
    n, d = args.images, args.dim
    gflop = 2.0 * n * n * d / 1e9
    rows = [("(a) nearest_neighbours, all rows", "neighbours")]
    rows.append((f"(b) bare product, same {args.block_size}-row blocks", "bare-blocked"))
    if "bare-full" in results:
        rows.append(("(c) bare product, full n x n at once (GEMM)", "bare-full"))
    bare = gflop / statistics.median(results["bare-blocked"]["times"])
    print(
        f"\nExact nearest neighbours: {n:,} x {d} float32 (seed {args.seed}), "
        f"{args.repeats} repeats, FLOPs = 2*n*n*d = {gflop:,.0f} GFLOP per run"
    )
    header = (
        f"{'measurement':<44}{'median s':>9}{'min s':>8}{'GFLOP/s':>9}"
        f"{'vs (b)':>8}{'peak RSS MB':>13}{'RSS before':>12}"
    )
    print(header)
    print("-" * len(header))
    for label, key in rows:
        result = results[key]
        median = statistics.median(result["times"])
        rate = gflop / median
        print(
            f"{label:<44}{median:>9.2f}{min(result['times']):>8.2f}{rate:>9.0f}"
            f"{rate / bare:>8.0%}{fmt_mb(result['rss_peak']):>13}"
            f"{fmt_mb(result['rss_before']):>12}"
        )
    ratio = statistics.median(results["bare-blocked"]["times"]) / statistics.median(
        results["neighbours"]["times"]
    )
    best_ratio = min(results["bare-blocked"]["times"]) / min(results["neighbours"]["times"])
    peak = results["neighbours"]["rss_peak"]
    print(
        f"targets: (a) >= 70% of (b) GFLOP/s -> {ratio:.0%} of medians "
        f"({best_ratio:.0%} of best runs) {'PASS' if ratio >= 0.7 else 'FAIL'}; "
        f"(a) peak RSS < 1 GB -> {peak / MB:,.0f} MB {'PASS' if peak < 1024 * MB else 'FAIL'}"
    )
    print(
        "'RSS before' = peak RSS of the subprocess after imports and data generation, "
        "before the timed work."
    )


def print_pipeline_table(sample: dict[str, Any], synthetic: dict[str, Any]) -> None:
    steps = [
        "load + validate COCO JSON",
        "tokenise + group",
        "vectors",
        "mean word vector per image",
        "normalise rows",
        "nearest neighbours",
    ]

    def median(result: dict[str, Any], step: str) -> float | None:
        values = [run[step] for run in result["runs"] if step in run]
        return statistics.median(values) if values else None

    def cell(value: float | None) -> str:
        return "-" if value is None else f"{value:.3f}"

    def total(result: dict[str, Any], skip: set[str]) -> float:
        return statistics.median(
            sum(seconds for step, seconds in run.items() if step not in skip)
            for run in result["runs"]
        )

    print(f"\nWhole stage 1 in pure pipeline code, median seconds over {len(sample['runs'])} runs")
    print(
        f"  (i)  sample:    {sample['images']} images, {sample['captions']:,} captions (real COCO)"
    )
    print(
        f"  (ii) synthetic: {synthetic['images']:,} images, {synthetic['captions']:,} captions, "
        f"{synthetic['tokens']:,} tokens ({synthetic['tokens'] / synthetic['images']:.1f} per image)"
    )
    header = f"{'step':<34}{'(i) sample':>14}{'(ii) synthetic':>16}"
    print(header)
    print("-" * len(header))
    labels = {"vectors": "word vectors (see notes)"}
    for step in steps:
        label = labels.get(step, step)
        print(f"{label:<34}{cell(median(sample, step)):>14}{cell(median(synthetic, step)):>16}")
    print(
        f"{'total without word vectors':<34}{total(sample, {'vectors'}):>14.3f}"
        f"{total(synthetic, {'vectors'}):>16.3f}"
    )
    print(f"{'total':<34}{total(sample, set()):>14.3f}{total(synthetic, set()):>16.3f}")
    print(f"{'peak RSS MB':<34}{fmt_mb(sample['rss_peak']):>14}{fmt_mb(synthetic['rss_peak']):>16}")
    if sample["vectors"].startswith("loaded"):
        print(f"word vectors (i): {sample['vectors']}")
    else:
        print(
            f"word vectors (i): {sample['vectors']} trained here on the sample's captions "
            "(FastText CBOW, 5 epochs, seed 0, 1 worker), in its own row"
        )
    print(f"word vectors (ii): {synthetic['vectors']}; the row times building the lookup only")
    if "train_seconds" in synthetic:
        print(
            f"FastText training on the {synthetic['captions']:,} synthetic captions (once, "
            f"separately): {synthetic['train_seconds']:.1f} s, peak RSS "
            f"{fmt_mb(synthetic['rss_peak_with_training'])} MB"
        )
    if sample.get("no_neighbour"):
        print(f"sample images without a neighbour: {sample['no_neighbour']}")


def parse_args(argv: list[str] | None = None) -> argparse.Namespace:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--repeats", type=int, default=5)
    parser.add_argument("--images", type=int, default=40504, help="synthetic rows / images")
    parser.add_argument("--dim", type=int, default=300)
    parser.add_argument("--block-size", type=int, default=2048)
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--vocab", type=int, default=10000, help="synthetic vocabulary size")
    parser.add_argument("--sample", default=str(SAMPLE), help="COCO captions JSON for (i)")
    parser.add_argument("--vectors", help=".vec or .bin for (i) instead of training")
    parser.add_argument(
        "--full-product",
        action="store_true",
        help="also time one unblocked n x n product (needs 4*n*n bytes: 6.6 GB at 40,504)",
    )
    parser.add_argument(
        "--train-synthetic",
        action="store_true",
        help="also time FastText training on the synthetic captions (once)",
    )
    results_argument(parser, __file__)
    parser.add_argument("--child", choices=sorted(CHILDREN), help=argparse.SUPPRESS)
    return parser.parse_args(argv)


def main() -> None:
    args = parse_args()
    if args.child:
        print(json.dumps(CHILDREN[args.child](args)))
        return
    results_tee(args.results)
    argv = sys.argv[1:]
    print(
        f"python {platform.python_version()}, numpy {np.__version__} ({blas_name()}), "
        f"{os.cpu_count()} CPUs, OPENBLAS_CORETYPE={os.environ.get('OPENBLAS_CORETYPE', '(unset)')}"
    )
    names = ["neighbours", "bare-blocked"] + (["bare-full"] if args.full_product else [])
    results = interleaved(names, argv, args.repeats)
    print_neighbour_table(args, results)
    sample = in_subprocess(__file__, "pipeline-sample", argv)
    synthetic = in_subprocess(__file__, "pipeline-synthetic", argv)
    print_pipeline_table(sample, synthetic)


if __name__ == "__main__":
    main()

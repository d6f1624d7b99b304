"""Benchmark ECCV Caption candidate proposal and metrics at COCO 5k-test scale.

(a) Candidate proposal for every query of 5 models: validate each model's embeddings,
    top-25 captions per image and top-25 images per caption (pipeline.eccv_embeddings.
    model_ranking, i.e. pipeline.neighbours.top_k), then merge the top-5 proposals
    (pipeline.eccv_candidates.propose) and collect the top-25 pairs gold negatives avoid
    (top_pairs). Baseline (b): the bare float32 matrix products of the same shapes
    (images x captions and captions x images per model), nothing else.
(c) mAP@R, R-Precision, R@1/5/10 of one model in both directions with
    pipeline.eccv_metrics.retrieval_metrics, against (d) the eccv-caption package
    (compute_eccv_metrics + compute_r_at_k for K = 5, 10) on identical rankings and positives.

Every measurement runs in a fresh subprocess so its peak RSS (``ru_maxrss``, including the
interpreter and imports) is its own; (a)/(b) and (c)/(d) alternate, one repeat per process.

    .venv/bin/python benchmarks/eccv_proposal.py [--repeats 3] [--images 5000] [--dim 512]
"""

from __future__ import annotations

import argparse
import json
import os
import platform
import statistics
import sys
import time
import warnings
from pathlib import Path
from typing import Any

REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO))

import numpy as np  # noqa: E402
from harness import blas_name, fmt_mb, in_subprocess, peak_rss, results_argument, results_tee  # noqa: E402

from pipeline.neighbours import block_rows  # noqa: E402

MODELS = ("CLIP", "PCME", "PVSE", "ViLT", "VSRN")


# ----------------------------------------------------------------------------- child side


def synthetic_models(
    n_images: int, per_image: int, dim: int, seed: int, n_models: int
) -> tuple[np.ndarray, np.ndarray, list[dict[str, np.ndarray]]]:
    """Seeded embeddings: a shared concept per image, caption = concept + its own noise,
    and each model adds its own noise, so models agree partly (as real ones do). The noise
    levels give one model about 0.65 image-to-text R@1 on its own 5 captions, 0.3 mAP@R."""
    rng = np.random.default_rng(seed)
    concept = rng.standard_normal((n_images, dim), dtype=np.float32)
    captions = np.repeat(concept, per_image, axis=0)
    captions += 1.5 * rng.standard_normal(captions.shape, dtype=np.float32)
    image_ids = np.arange(n_images, dtype=np.int64) * 7 + 1
    caption_ids = np.arange(n_images * per_image, dtype=np.int64) + 100_000
    models = []
    for _ in range(n_models):
        models.append(
            {
                "image_ids": image_ids,
                "image_embeddings": concept
                + 2.2 * rng.standard_normal(concept.shape, dtype=np.float32),
                "caption_ids": caption_ids,
                "caption_embeddings": captions
                + 2.2 * rng.standard_normal(captions.shape, dtype=np.float32),
            }
        )
    return image_ids, caption_ids, models


def warm_up_blas(x: np.ndarray) -> None:
    # Starts OpenBLAS's thread pool so the first timed step does not pay for it.
    np.matmul(x[:256], x[:1024].T)


def run_proposal(args: argparse.Namespace) -> dict[str, Any]:
    """(a) validate + top-25 both directions for every model, merge the top-5."""
    from pipeline.eccv_candidates import proposal_counts, propose, top_pairs
    from pipeline.eccv_embeddings import model_ranking, parse_model_embeddings

    image_ids, caption_ids, arrays = synthetic_models(
        args.images, 5, args.dim, args.seed, args.models
    )
    warm_up_blas(arrays[0]["caption_embeddings"])
    before = peak_rss()
    steps: dict[str, float] = {}
    start = time.perf_counter()
    known_images, known_captions = image_ids.tolist(), caption_ids.tolist()
    embeddings = [
        parse_model_embeddings(
            model, file=name, known_image_ids=known_images, known_caption_ids=known_captions
        )
        for name, model in zip(MODELS, arrays, strict=False)
    ]
    steps["validate embeddings"] = time.perf_counter() - start
    start = time.perf_counter()
    rankings = {
        name: model_ranking(emb, depth=args.depth)
        for name, emb in zip(MODELS, embeddings, strict=False)
    }
    steps[f"top-{args.depth} retrieval, both directions"] = time.perf_counter() - start
    start = time.perf_counter()
    candidates = propose(rankings, k=args.k)
    steps[f"merge top-{args.k} (propose)"] = time.perf_counter() - start
    start = time.perf_counter()
    excluded = top_pairs(rankings, depth=args.depth)
    steps[f"top-{args.depth} pair set (top_pairs)"] = time.perf_counter() - start
    counts = proposal_counts(candidates)
    return {
        "steps": steps,
        "times": [sum(steps.values())],
        "proposed": counts.proposed,
        "unique": counts.unique,
        "excluded": len(excluded),
        "rss_before": before,
        "rss_peak": peak_rss(),
    }


def run_bare(args: argparse.Namespace) -> dict[str, Any]:
    """(b) the matrix products of (a) alone: per model images @ captions.T and the reverse."""
    _, _, arrays = synthetic_models(args.images, 5, args.dim, args.seed, args.models)
    warm_up_blas(arrays[0]["caption_embeddings"])
    before = peak_rss()
    start = time.perf_counter()
    for model in arrays:
        images, captions = model["image_embeddings"], model["caption_embeddings"]
        images @ captions.T
        captions @ images.T
    return {
        "times": [time.perf_counter() - start],
        "rss_before": before,
        "rss_peak": peak_rss(),
    }


def run_bare_full(args: argparse.Namespace) -> dict[str, Any]:
    """(c) the whole job done bare: the products of (b) in the same blocks as (a), top-k by
    argpartition and a sort of the k, then the top-k pair keys merged and deduplicated by
    one sort (no validation, no normalisation, no Python object per pair)."""
    image_ids, caption_ids, arrays = synthetic_models(
        args.images, 5, args.dim, args.seed, args.models
    )
    warm_up_blas(arrays[0]["caption_embeddings"])
    before = peak_rss()
    start = time.perf_counter()
    proposed: list[np.ndarray] = []
    deep: list[np.ndarray] = []
    for model in arrays:
        images, captions = model["image_embeddings"], model["caption_embeddings"]
        for queries, gallery, query_ids, gallery_ids, i2t in (
            (images, captions, image_ids, caption_ids, True),
            (captions, images, caption_ids, image_ids, False),
        ):
            rows = block_rows(2048, gallery.shape[0])
            for first in range(0, queries.shape[0], rows):
                sims = queries[first : first + rows] @ gallery.T
                chosen = np.argpartition(sims, -args.depth, axis=1)[:, -args.depth :]
                order = np.argsort(-np.take_along_axis(sims, chosen, axis=1), axis=1)
                top = gallery_ids[np.take_along_axis(chosen, order, axis=1)]
                query = np.broadcast_to(query_ids[first : first + rows, None], top.shape)
                keys = (query << 32) | top if i2t else (top << 32) | query
                proposed.append(keys[:, : args.k].ravel())
                deep.append(keys.ravel())
    unique = _sorted_unique(np.concatenate(proposed))
    excluded = _sorted_unique(np.concatenate(deep))
    return {
        "times": [time.perf_counter() - start],
        "unique": int(unique.size),
        "excluded": int(excluded.size),
        "rss_before": before,
        "rss_peak": peak_rss(),
    }


def _sorted_unique(keys: np.ndarray) -> np.ndarray:
    ordered = np.sort(keys)
    return ordered[np.concatenate(([True], ordered[1:] != ordered[:-1]))]


def metric_inputs(
    args: argparse.Namespace,
) -> tuple[dict[str, dict[int, list[int]]], dict[str, dict[int, list[int]]]]:
    """One model's top-``metric_depth`` rankings and synthetic positives, both directions.

    Each image's positives are 3-7 captions (mean 5): its own captions first, then random
    ones; caption positives are the inverse relation.
    """
    from pipeline.eccv_metrics import rankings_from_embeddings

    image_ids, caption_ids, arrays = synthetic_models(args.images, 5, args.dim, args.seed, 1)
    model = arrays[0]
    rng = np.random.default_rng(args.seed + 1)
    i2t: dict[int, list[int]] = {}
    for row, image in enumerate(image_ids.tolist()):
        count = int(rng.integers(3, 8))
        own = caption_ids[row * 5 : row * 5 + 5].tolist()
        extra = rng.choice(caption_ids, size=max(0, count - 5), replace=False).tolist()
        i2t[image] = list(dict.fromkeys(own[:count] + extra))
    t2i: dict[int, list[int]] = {}
    for image, captions in i2t.items():
        for caption in captions:
            t2i.setdefault(caption, []).append(image)
    depth = args.metric_depth
    rankings = {
        "i2t": rankings_from_embeddings(
            image_ids, model["image_embeddings"], caption_ids, model["caption_embeddings"], depth
        ),
        "t2i": rankings_from_embeddings(
            caption_ids, model["caption_embeddings"], image_ids, model["image_embeddings"], depth
        ),
    }
    return {"i2t": i2t, "t2i": t2i}, rankings


def run_metrics_ours(args: argparse.Namespace) -> dict[str, Any]:
    """(c) pipeline.eccv_metrics.retrieval_metrics, both directions."""
    from pipeline.eccv_metrics import retrieval_metrics

    positives, rankings = metric_inputs(args)
    before = peak_rss()
    start = time.perf_counter()
    values = {}
    for direction in ("i2t", "t2i"):
        scores = retrieval_metrics(positives[direction], rankings[direction], ks=(1, 5, 10))
        values[direction] = {
            "map_at_r": scores.map_at_r,
            "r_precision": scores.r_precision,
            **{f"r{k}": v for k, v in scores.recall_at_k.items()},
        }
    elapsed = time.perf_counter() - start
    return {
        "times": [elapsed],
        "values": values,
        "queries": {d: len(p) for d, p in positives.items()},
        "mean_r": {d: float(np.mean([len(v) for v in p.values()])) for d, p in positives.items()},
        "rss_before": before,
        "rss_peak": peak_rss(),
    }


def run_metrics_eccv(args: argparse.Namespace) -> dict[str, Any]:
    """(d) eccv-caption 0.1.0 on the same inputs."""
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        from eccv_caption._metrics import compute_eccv_metrics, compute_r_at_k

    positives, rankings = metric_inputs(args)
    before = peak_rss()
    start = time.perf_counter()
    values = {}
    for direction in ("i2t", "t2i"):
        found = compute_eccv_metrics(rankings[direction], positives[direction])
        values[direction] = {
            "map_at_r": float(found["eccv_map_at_r"]),
            "r_precision": float(found["eccv_rprecision"]),
            "r1": float(found["eccv_r1"]),
            **{
                f"r{k}": float(compute_r_at_k(rankings[direction], positives[direction], K=k))
                for k in (5, 10)
            },
        }
    elapsed = time.perf_counter() - start
    return {"times": [elapsed], "values": values, "rss_before": before, "rss_peak": peak_rss()}


CHILDREN = {
    "proposal": run_proposal,
    "bare": run_bare,
    "bare-full": run_bare_full,
    "metrics-ours": run_metrics_ours,
    "metrics-eccv": run_metrics_eccv,
}


# ---------------------------------------------------------------------------- parent side


def interleaved(names: list[str], argv: list[str], repeats: int) -> dict[str, list[dict]]:
    """One fresh subprocess per repeat and measurement, alternating (a), (b), (a), (b)...

    Alternating keeps slow drift of a shared machine from favouring either side.
    """
    runs: dict[str, list[dict]] = {name: [] for name in names}
    for _ in range(repeats):
        for name in names:
            runs[name].append(in_subprocess(__file__, name, argv))
    return runs


def times(runs: list[dict]) -> list[float]:
    return [t for run in runs for t in run["times"]]


def row(label: str, runs: list[dict], baseline: list[dict] | None, width: int) -> str:
    median = statistics.median(times(runs))
    ratio = "" if baseline is None else f"{median / statistics.median(times(baseline)):.2f}x"
    return (
        f"{label:<{width}}{median:>10.3f}{min(times(runs)):>9.3f}{ratio:>10}"
        f"{fmt_mb(max(r['rss_peak'] for r in runs)):>13}"
        f"{fmt_mb(max(r['rss_before'] for r in runs)):>12}"
    )


def print_proposal(args: argparse.Namespace, runs: dict[str, list[dict]]) -> None:
    n_captions = args.images * 5
    gflop = args.models * 2 * (2.0 * args.images * n_captions * args.dim) / 1e9
    proposal, bare = runs["proposal"], runs["bare"]
    print(
        f"\n(a)/(b) Candidate proposal: {args.images:,} images, {n_captions:,} captions, "
        f"{args.models} models, {args.dim}-d float32 (seed {args.seed}); "
        f"top-{args.depth} per model per query, merge top-{args.k}; "
        f"median of {args.repeats} runs"
    )
    width = 52
    header = (
        f"{'measurement':<{width}}{'median s':>10}{'min s':>9}{'vs (b)':>10}"
        f"{'peak RSS MB':>13}{'RSS before':>12}"
    )
    print(header)
    print("-" * len(header))
    print(row("(a) proposal, all steps", proposal, bare, width))
    for step in proposal[0]["steps"]:
        values = [run["steps"][step] for run in proposal]
        print(f"{'      ' + step:<{width}}{statistics.median(values):>10.3f}{min(values):>9.3f}")
    print(row(f"(b) bare products, {args.models} x 2 x sgemm", bare, None, width))
    full = runs["bare-full"]
    print(row("(c) bare job: (b) + argpartition + merge + dedupe", full, None, width))
    ratio = statistics.median(times(proposal)) / statistics.median(times(full))
    per_round = [a / c for a, c in zip(times(proposal), times(full), strict=True)]
    print(
        f"(a) vs (c): {ratio:.2f}x (target <= 1.10x); per round "
        + ", ".join(f"{r:.2f}" for r in per_round)
        + f". (c) finds {full[0]['unique']:,} unique pairs and {full[0]['excluded']:,} top-"
        f"{args.depth} pairs; (a) {proposal[0]['unique']:,} and {proposal[0]['excluded']:,}."
    )
    rate = gflop / statistics.median(times(bare))
    first = proposal[0]
    print(
        f"(b) does {gflop:,.0f} GFLOP ({rate:,.0f} GFLOP/s). Proposals: {first['proposed']:,} "
        f"before merging -> {first['unique']:,} unique pairs; {first['excluded']:,} pairs in "
        f"some model's top-{args.depth} (gold negatives avoid them)."
    )


def print_metrics(args: argparse.Namespace, runs: dict[str, list[dict]]) -> None:
    ours, eccv = runs["metrics-ours"], runs["metrics-eccv"]
    info = ours[0]
    print(
        f"\n(c)/(d) Metrics of one model, both directions: {info['queries']['i2t']:,} image "
        f"queries (mean R {info['mean_r']['i2t']:.2f}), {info['queries']['t2i']:,} caption "
        f"queries (mean R {info['mean_r']['t2i']:.2f}), top-{args.metric_depth} rankings; "
        f"mAP@R, R-P, R@1, R@5, R@10; median of {args.repeats} runs"
    )
    width = 52
    header = (
        f"{'measurement':<{width}}{'median s':>10}{'min s':>9}{'vs (d)':>10}"
        f"{'peak RSS MB':>13}{'RSS before':>12}"
    )
    print(header)
    print("-" * len(header))
    print(row("(c) pipeline.eccv_metrics.retrieval_metrics", ours, eccv, width))
    print(row("(d) eccv-caption 0.1.0 (_metrics functions)", eccv, None, width))
    worst = 0.0
    for direction in ("i2t", "t2i"):
        for key, value in info["values"][direction].items():
            worst = max(worst, abs(value - eccv[0]["values"][direction][key]))
    print(f"{'direction':<10}" + "".join(f"{k:>12}" for k in info["values"]["i2t"]))
    for direction in ("i2t", "t2i"):
        values = info["values"][direction]
        print(f"{direction:<10}" + "".join(f"{v:>12.6f}" for v in values.values()))
    print(f"largest |(c) - (d)| over all 10 numbers: {worst:.2e}")


def parse_args(argv: list[str] | None = None) -> argparse.Namespace:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--repeats", type=int, default=3)
    parser.add_argument("--images", type=int, default=5000, help="5 captions each")
    parser.add_argument("--dim", type=int, default=512)
    parser.add_argument("--models", type=int, default=5, choices=range(1, len(MODELS) + 1))
    parser.add_argument("--depth", type=int, default=25, help="retrieval depth per query")
    parser.add_argument("-k", type=int, default=5, help="proposals per model per query")
    parser.add_argument("--metric-depth", type=int, default=50, help="ranking length for (c)/(d)")
    parser.add_argument("--seed", type=int, default=0)
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
    print(
        "Each measurement is one fresh subprocess per repeat; 'peak RSS' is that process's "
        "ru_maxrss, 'RSS before' its peak after imports and data generation."
    )
    print_proposal(args, interleaved(["proposal", "bare", "bare-full"], argv, args.repeats))
    print_metrics(args, interleaved(["metrics-ours", "metrics-eccv"], argv, args.repeats))


if __name__ == "__main__":
    main()

"""CxC indirect sampling at CxC's scale against a bare numpy similarity product.

5,000 examples x 5 captions: caption representations (100-d, the mean of five caption
vectors) choose image pairs, 512-d image embeddings choose caption pairs (`binned_pairs` in
both directions, 2,000 pairs each, plus co-caption pairs). The baseline, in the same run, is
the two full similarity products of the same shapes (5,000 x 5,000, float32), which any
sampler must at least compute. Each measurement runs in a fresh interpreter (its own peak
RSS); the table shows the median of --repeats runs and the ratio to the baseline.

    .venv/bin/python benchmarks/cxc_sampling.py [--examples 5000] [--repeats 3]
"""

from __future__ import annotations

import argparse
import json
import statistics
import sys
import time
from pathlib import Path

import numpy as np

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from benchmarks.harness import (  # noqa: E402
    blas_name,
    fmt_mb,
    in_subprocess,
    peak_rss,
    results_argument,
    results_tee,
)


def data(n: int) -> tuple[np.ndarray, np.ndarray, list[list[int]]]:
    rng = np.random.default_rng(0)
    topics = rng.normal(size=(50, 100)).astype(np.float32)
    text = topics[rng.integers(50, size=n)] + 0.5 * rng.normal(size=(n, 100)).astype(np.float32)
    image = rng.normal(size=(n, 512)).astype(np.float32)
    captions = [list(range(5 * i, 5 * i + 5)) for i in range(n)]
    return text, image, captions


def child(name: str, n: int) -> None:
    text, image, captions = data(n)
    before = peak_rss()
    start = time.perf_counter()
    if name == "bare":
        for x in (text, image):
            unit = x / np.linalg.norm(x, axis=1, keepdims=True)
            sims = unit @ unit.T
            assert sims.shape == (n, n)
        pairs = 0
    else:
        from pipeline.cxc_sampling import binned_pairs, cocaption_pairs

        sis = binned_pairs(text, n_pairs=2000, seed=0)
        sts = binned_pairs(image, n_pairs=2000, seed=1)
        co = cocaption_pairs(captions, n_pairs=2000, seed=2)
        pairs = len(sis) + len(sts) + len(co)
    seconds = time.perf_counter() - start
    print(json.dumps({"seconds": seconds, "peak": peak_rss(), "before": before, "pairs": pairs}))


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--examples", type=int, default=5000)
    parser.add_argument("--repeats", type=int, default=3)
    parser.add_argument("--child")
    results_argument(parser, __file__)
    args = parser.parse_args()
    if args.child:
        child(args.child, args.examples)
        return
    results_tee(args.results)
    rows = {}
    for name in ("bare", "sampling"):
        runs = [
            in_subprocess(__file__, name, ["--examples", str(args.examples)])
            for _ in range(args.repeats)
        ]
        rows[name] = runs
    base = statistics.median(r["seconds"] for r in rows["bare"])
    print(
        f"CxC indirect sampling, {args.examples} examples x 5 captions, 512-d images; {blas_name()}"
    )
    print(f"median of {args.repeats}, each run in a fresh process")
    print(
        f"{'what':<34} {'median s':>9} {'ratio':>6} {'peak RSS MB':>12} {'growth MB':>10} {'pairs':>6}"
    )
    for name, label in (
        ("bare", "bare numpy products (baseline)"),
        ("sampling", "binned_pairs x2 + co-captions"),
    ):
        runs = rows[name]
        seconds = statistics.median(r["seconds"] for r in runs)
        peak = statistics.median(r["peak"] for r in runs)
        growth = statistics.median(r["peak"] - r["before"] for r in runs)
        print(
            f"{label:<34} {seconds:>9.2f} {seconds / base:>6.2f} {fmt_mb(peak):>12} "
            f"{fmt_mb(growth):>10} {runs[0]['pairs']:>6}"
        )


if __name__ == "__main__":
    main()

"""How long mlcroissant takes to yield the first record of every record set of a CxC-sized
release (the NeurIPS 2026 validator's limit: 300 s), issue 50.

Synthetic rows of CxC's full size, written as the export writes them (`release_tables_write`,
zstd Parquet in row groups of 16,384): `cxc_pairs`, 267,095 pairs with their 5 ratings and
workers each, and `label_provenance`, one row per rating (1,335,475), with every column the
export gives it. Their record sets are described as the export describes them
(`croissant._record_set`, Croissant 1.1's context), then `mlcroissant.Dataset(jsonld=...)`
validates the document and each record set's first record is taken, each timed.

    .venv/bin/python benchmarks/croissant_first_record.py [--pairs 267095] [--raters 5] [--out FILE]

No database is used (Django is set up for the imports only)."""

from __future__ import annotations

import argparse
import json
import os
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from benchmarks.harness import peak_rss, results_tee  # noqa: E402

LIMIT_S = 300.0


def _tables(pairs: int, raters: int) -> dict:
    import numpy as np
    import pyarrow as pa

    rng = np.random.default_rng(0)
    n = pairs * raters
    workers = np.array([f"w-{i:024x}" for i in range(2000)], dtype=object)
    worker_at = rng.integers(0, workers.size, size=n)
    offsets = pa.array(np.arange(0, n + 1, raters, dtype=np.int32))
    ratings = rng.integers(0, 6, size=n).astype(np.float64)
    kinds = np.array(["sis", "sts", "sits"], dtype=object)[np.arange(pairs) % 3]
    pseudonyms = pa.DictionaryArray.from_arrays(
        pa.array(worker_at.astype(np.int32)), pa.array(workers.tolist())
    )
    pairs_table = pa.table(
        {
            "kind": pa.array(kinds.tolist()),
            "first": pa.array(rng.integers(1, 600_000, size=pairs)),
            "second": pa.array(rng.integers(1, 600_000, size=pairs)),
            "agg_score": pa.array(ratings.reshape(pairs, raters).mean(axis=1)),
            "sampling_method": pa.array(["c2c_isim"] * pairs),
            "raters": pa.array(np.full(pairs, raters, dtype=np.int32)),
            "spread": pa.array(ratings.reshape(pairs, raters).std(axis=1)),
            "ratings": pa.ListArray.from_arrays(offsets, pa.array(ratings)),
            "workers": pa.ListArray.from_arrays(offsets, pseudonyms.cast(pa.string())),
        }
    )
    empty = pa.ListArray.from_arrays(
        pa.array(np.zeros(n + 1, dtype=np.int32)), pa.array([], pa.int64())
    )
    stamps = pa.array(
        (1_760_000_000_000_000 + np.arange(n, dtype=np.int64) * 1_000), pa.timestamp("us", "UTC")
    )
    provenance = pa.table(
        {
            "judgment": pa.array(np.arange(n, dtype=np.int64)),
            "item": pa.array(np.repeat(np.arange(pairs, dtype=np.int64), raters)),
            "item_kind": pa.array(["pair"] * n).dictionary_encode(),
            "image_id": pa.array(rng.integers(1, 600_000, size=n)),
            "image_id_2": pa.nulls(n, pa.int64()),
            "caption_id": pa.array(rng.integers(1, 600_000, size=n)),
            "caption_id_2": pa.nulls(n, pa.int64()),
            "label": pa.array(ratings.astype(int).astype(str).tolist()).dictionary_encode(),
            "worker": pseudonyms,
            "provider": pa.array(["mturk"] * n).dictionary_encode(),
            "study": pa.array(["3X4Y5Z"] * n).dictionary_encode(),
            "batch": pa.array(np.full(n, 7, dtype=np.int64)),
            "stage": pa.array(np.repeat(kinds, raters).tolist()).dictionary_encode(),
            "hit": pa.array(np.arange(n, dtype=np.int64) // 50),
            "submitted_at": stamps,
            "consent_version": pa.array(["417beeaad652"] * n).dictionary_encode(),
            "instructions_version": pa.array(["default"] * n).dictionary_encode(),
            "gold_passed": empty,
            "gold_failed": empty,
        }
    )
    return {"cxc_pairs": pairs_table, "label_provenance": provenance}


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--pairs", type=int, default=267_095)
    parser.add_argument("--raters", type=int, default=5)
    parser.add_argument("--out", default="", help="also write the table to this file")
    args = parser.parse_args()
    results_tee(args.out)
    os.environ.setdefault("DJANGO_SETTINGS_MODULE", "config.settings")
    os.environ.setdefault("DJANGO_DEBUG", "1")
    import django

    django.setup()
    import mlcroissant as mlc

    from annotation.croissant_vocabulary import CONFORMS_TO
    from annotation.services.release.croissant import CONTEXT, _record_set
    from annotation.services.release.release_tables import parquet_name, release_tables_write

    start = time.perf_counter()
    tables = _tables(args.pairs, args.raters)
    built = time.perf_counter() - start
    with tempfile.TemporaryDirectory() as tmp:
        folder = Path(tmp)
        start = time.perf_counter()
        entries = release_tables_write(folder=folder, tables=tables, license="cc-by-4.0")
        written = time.perf_counter() - start
        document = {
            "@context": CONTEXT,
            "@type": "sc:Dataset",
            "conformsTo": CONFORMS_TO,
            "name": "cxc-benchmark",
            "description": "Synthetic rows of CxC's full size (benchmark).",
            "license": "https://spdx.org/licenses/CC-BY-4.0.html",
            "url": "README.md",
            "version": "1.0.0",
            "datePublished": "2026-01-29",
            "citeAs": "@misc{bench, title = {bench}}",
            "creator": [{"@type": "sc:Person", "name": "bench"}],
            "distribution": [
                {
                    "@type": "cr:FileObject",
                    "@id": parquet_name(name),
                    "name": parquet_name(name),
                    "contentUrl": parquet_name(name),
                    "encodingFormat": "application/x-parquet",
                    "sha256": entry["sha256"],
                }
                for name, entry in entries.items()
            ],
            "recordSet": [
                _record_set(name, parquet_name(name), table.schema, run_id=1)
                for name, table in tables.items()
            ],
        }
        path = folder / "croissant.json"
        path.write_text(json.dumps(document))
        del tables
        start = time.perf_counter()
        dataset = mlc.Dataset(jsonld=str(path))
        validated = time.perf_counter() - start
        issues = dataset.metadata.ctx.issues
        rows = [("validate (mlcroissant.Dataset)", validated, "errors "
                 f"{len(issues.errors)}, warnings {len(issues.warnings)}")]  # fmt: skip
        for name, entry in entries.items():
            start = time.perf_counter()
            first = next(iter(dataset.records(record_set=name)))
            rows.append(
                (
                    f"first record of {name} ({entry['rows']:,} rows)",
                    time.perf_counter() - start,
                    f"{len(first)} fields",
                )
            )
    total = sum(seconds for _, seconds, _ in rows)
    print(f"CxC-sized release: {args.pairs:,} pairs x {args.raters} ratings; rows built in "
          f"{built:.1f} s, Parquet written in {written:.1f} s")  # fmt: skip
    print()
    print("| step | seconds | note |")
    print("|---|---|---|")
    for step, seconds, note in rows:
        print(f"| {step} | {seconds:.2f} | {note} |")
    verdict = "within" if total <= LIMIT_S else "OVER"
    print(f"| all record sets' first records, with validation | {total:.2f} | {verdict} the "
          f"{LIMIT_S:.0f} s limit; peak RSS {peak_rss() / 2**20:.0f} MB |")  # fmt: skip
    return 0 if total <= LIMIT_S else 1


if __name__ == "__main__":
    sys.exit(main())

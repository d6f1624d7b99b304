#!/usr/bin/env python3
"""Check export version folders against issue 31's "done means", offline:

    .venv/bin/python scripts/check_release.py var/media/exports/run-*/*-v1

For each folder: `croissant.json` conforms to Croissant 1.1 and validates with MLCommons'
mlcroissant (1.1) with no error and no warning (its JSON-LD context has every key of
mlcroissant's 1.1 context), carries `sdVersion`, a BibTeX `citeAs`, data-use conditions
(`usageInfo`) and the 20 RAI fields, each filled, lists every file with its sha256, and
iterates each record set (the per-label provenance one too) equal to its Parquet file; each Parquet file loads with
`datasets` (cache in a temporary folder) with the same rows as pandas; the card's YAML parses
as the Hub's dataset card metadata and names one config per record set; the datasheet has no
JSON block over 10 lines, no JSON syntax outside its fenced blocks (brackets, quoted keys,
`true`/`false`/`null` cells) and no absolute path. Prints one table row per folder; exits 1 if
any check fails. Nothing reaches the network (the Hub libraries are set offline first)."""

from __future__ import annotations

import hashlib
import json
import os
import re
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

os.environ["HF_HUB_OFFLINE"] = os.environ["HF_DATASETS_OFFLINE"] = "1"
sys.path.insert(0, str(Path(__file__).resolve().parent.parent))  # the project's own names

# An absolute path: "/" then at least two segments, not inside a URL or a relative path.
ABSOLUTE = re.compile(r"(?<![\w.:/~<-])/[\w.-]+/[\w./-]+")
MAX_JSON_LINES = 10
# JSON in the datasheet's prose or cells: brackets, a quoted key, or a JSON literal as a cell.
JSON_SYNTAX = re.compile(r'[{}\[\]]|"[^"|]*"\s*:|\|\s*(?:true|false|null)\s*(?=\|)')


def plain(value: Any) -> Any:
    """A cell as plain Python: bytes decoded, arrays as lists, NaN as None."""
    if hasattr(value, "tolist"):
        value = value.tolist()
    if isinstance(value, bytes):
        return value.decode()
    if isinstance(value, list):
        return [plain(v) for v in value]
    if isinstance(value, float) and value != value:
        return None
    return value


def check_croissant(folder: Path, frames: dict[str, Any]) -> tuple[str, list[str]]:
    import mlcroissant as mlc
    from mlcroissant._src.core.rdf import make_context

    from annotation.croissant_vocabulary import CONFORMS_TO, RAI_FIELDS

    problems = []
    path = folder / "croissant.json"
    document = json.loads(path.read_text())
    dataset = mlc.Dataset(jsonld=str(path))
    issues = dataset.metadata.ctx.issues
    if issues.errors or issues.warnings:
        problems.append(f"croissant: {issues.report()}")
    if document.get("conformsTo") != CONFORMS_TO:
        problems.append(f"croissant conforms to {document.get('conformsTo')}, not 1.1")
    # mlcroissant warns of a non-standard context: a key of its own context missing here.
    missing = make_context(dataset.metadata.ctx).keys() - document["@context"].keys()
    if missing:
        problems.append(f"croissant: non-standard @context, missing {sorted(missing)}")
    if not str(document.get("citeAs", "")).startswith("@"):
        problems.append("croissant: citeAs is not BibTeX")
    empty = [
        key
        for key in ("sdVersion", "usageInfo", *(f"rai:{f}" for f in RAI_FIELDS))
        if not document.get(key)
    ]
    if empty:
        problems.append(f"croissant: empty or missing {empty}")
    listed = {f["contentUrl"]: f["sha256"] for f in document["distribution"]}
    on_disk = {p.relative_to(folder).as_posix() for p in folder.rglob("*") if p.is_file()}
    if set(listed) != on_disk - {path.name}:
        problems.append(f"croissant lists {sorted(listed)}, folder has {sorted(on_disk)}")
    for name, sha in listed.items():
        if (folder / name).is_file() and hashlib.sha256(
            (folder / name).read_bytes()
        ).hexdigest() != sha:
            problems.append(f"croissant: sha256 of {name} differs")
    records = 0
    for name, frame in frames.items():
        got = [
            {k.split("/", 1)[1]: plain(v) for k, v in r.items()}
            for r in dataset.records(record_set=name)
        ]
        want = [{k: plain(v) for k, v in row.items()} for row in frame.to_dict("records")]
        records += len(got)
        if got != want:
            problems.append(
                f"croissant record set {name}: {len(got)} records differ from its Parquet"
            )
    return f"{records} records equal", problems


def check_parquet(
    folder: Path, manifest: dict[str, Any], cache: Path
) -> tuple[dict[str, Any], str, list[str]]:
    import datasets
    import pandas as pd

    datasets.disable_progress_bars()
    problems, frames, rows = [], {}, []
    for name, entry in manifest["record_sets"].items():
        path = folder / entry["file"]
        frame = pd.read_parquet(path)
        loaded = datasets.load_dataset(
            "parquet", data_files=str(path), split="train", cache_dir=str(cache)
        )
        same = loaded.num_rows == len(frame) == entry["rows"] and loaded.column_names == list(
            frame.columns
        )
        if same:
            hub = loaded.to_pandas()
            same = all(
                plain(a) == plain(b)
                for column in frame.columns
                for a, b in zip(frame[column], hub[column], strict=True)
            )
        if not same:
            problems.append(f"parquet {entry['file']}: datasets and pandas rows differ")
        frames[name] = frame
        rows.append(f"{name} {len(frame)}")
    return frames, ", ".join(rows), problems


def check_card(folder: Path, manifest: dict[str, Any]) -> tuple[str, list[str]]:
    from huggingface_hub import DatasetCard

    data = DatasetCard((folder / "README.md").read_text()).data.to_dict()
    configs = {c["config_name"]: c["data_files"][0]["path"] for c in data.get("configs", [])}
    wanted = {name: e["file"] for name, e in manifest["record_sets"].items()}
    problems = [] if configs == wanted else [f"card configs {configs} != record sets {wanted}"]
    return (
        f"configs {', '.join(configs)}; license {data.get('license_name') or data.get('license')}",
        problems,
    )


def check_datasheet(folder: Path) -> tuple[str, list[str]]:
    sheet = (folder / "DATASHEET.md").read_text()
    longest, problems = 0, []
    for block in sheet.split("```")[1::2]:
        body = block.split("\n", 1)[1] if "\n" in block else block
        if block.startswith("json") or body.lstrip().startswith(("{", "[")):
            longest = max(longest, body.rstrip("\n").count("\n") + 1)
    if longest > MAX_JSON_LINES:
        problems.append(f"datasheet: a JSON block of {longest} lines")
    prose = "".join(sheet.split("```")[0::2])
    json_lines = [line for line in prose.splitlines() if JSON_SYNTAX.search(line)]
    if json_lines:
        example = json_lines[0][:120].replace("|", "\\|")  # inside this script's own table
        problems.append(f"datasheet: JSON syntax in {len(json_lines)} line(s), e.g. {example}")
    paths = ABSOLUTE.findall(sheet)
    if paths:
        problems.append(f"datasheet: absolute paths {paths[:3]}")
    # The folder holding the versions (e.g. MEDIA_ROOT/exports/run-1) named in no file.
    server = folder.resolve().parent
    leaks = [
        p.name
        for p in folder.rglob("*")
        if len(server.parts) > 2 and p.is_file() and str(server).encode() in p.read_bytes()
    ]
    if leaks:
        problems.append(f"the server's folder named in {leaks}")
    return (
        f"{sheet.count(chr(10))} lines, longest JSON block {longest}, "
        f"JSON lines outside blocks {len(json_lines)}, absolute paths {len(paths)}",
        problems,
    )


def check(folder: Path, cache: Path) -> tuple[list[str], list[str]]:
    manifest = json.loads((folder / "manifest.json").read_text())
    frames, parquet, problems = check_parquet(folder, manifest, cache)
    croissant, more = check_croissant(folder, frames)
    card, card_problems = check_card(folder, manifest)
    sheet, sheet_problems = check_datasheet(folder)
    return [parquet, croissant, card, sheet], problems + more + card_problems + sheet_problems


def main(argv: list[str]) -> int:
    if not argv:
        print(__doc__)
        return 2
    failed = False
    print(
        "| export | Parquet rows (pandas = datasets) | mlcroissant | card YAML | DATASHEET.md | result | s |"
    )
    print("|---|---|---|---|---|---|---|")
    with tempfile.TemporaryDirectory() as cache:
        for name in argv:
            folder = Path(name)
            start = time.perf_counter()
            try:
                cells, problems = check(folder, Path(cache))
            except Exception as exc:  # noqa: BLE001 - a broken folder is a failed row, not a stop
                cells, problems = ["-"] * 4, [f"{type(exc).__name__}: {exc}"]
            failed |= bool(problems)
            verdict = "ok" if not problems else "FAIL: " + "; ".join(problems)
            print(
                f"| {folder.parent.name}/{folder.name} | {' | '.join(cells)} | {verdict} | {time.perf_counter() - start:.1f} |"
            )
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))

"""The dataset card's YAML header, as the Hugging Face Hub reads it: license, languages, who
made the annotations, size and task categories, the source, one config per Parquet record set
(split `test`) and `dataset_info` (each config's features with the Hub's dtype names, read from
the written Parquet file's schema; rows and bytes per split). Written as plain YAML here:
`datasets` is no dependency of the app; the tests parse the header with huggingface_hub's
`DatasetCard` and compare the features with `datasets`' own reading of the files."""

from __future__ import annotations

import json
import re
from pathlib import Path
from typing import Any

import pyarrow as pa
import pyarrow.parquet as pq

from annotation.errors import ServiceError
from annotation.services.release.release_tables import plain_type

SPLIT = "test"  # evaluation data: every record set is one test split

# Licenses the Hub knows by these ids; any other text is `other` with its name.
HUB_LICENSES = {
    "cc-by-4.0", "cc-by-sa-4.0", "cc-by-nc-4.0", "cc-by-nc-sa-4.0", "cc0-1.0", "odc-by",
    "odbl", "pddl", "mit", "apache-2.0", "cdla-permissive-2.0", "cdla-sharing-1.0", "other",
}  # fmt: skip

# Arrow's names where the Hub's dtype differs (the rest are the same words).
_DTYPES = {pa.float32(): "float32", pa.float64(): "float64", pa.float16(): "float16",
           pa.bool_(): "bool", pa.string(): "string", pa.large_string(): "large_string",
           pa.binary(): "binary", pa.large_binary(): "large_binary", pa.null(): "null",
           pa.date32(): "date32", pa.date64(): "date64"}  # fmt: skip
_INTEGERS = re.compile(r"u?int(8|16|32|64)")


def size_category(rows: int) -> str:
    """The Hub's size bucket for a record set of `rows` rows."""
    for limit, name in ((1_000, "n<1K"), (10_000, "1K<n<10K"), (100_000, "10K<n<100K")):
        if rows < limit:
            return name
    return "100K<n<1M" if rows < 1_000_000 else "1M<n<10M"


def feature_type(kind: pa.DataType, *, column: str) -> Any:
    """A column's type in the Hub's YAML: a dtype name, `{"list": ...}` or `{"struct": [...]}`."""
    kind = plain_type(kind)
    if pa.types.is_list(kind) or pa.types.is_large_list(kind):
        return {"list": feature_type(kind.value_type, column=column)}
    if pa.types.is_struct(kind):
        return {"struct": [feature(f.name, f.type) for f in kind]}
    if kind in _DTYPES:
        return _DTYPES[kind]
    if _INTEGERS.fullmatch(str(kind)):
        return str(kind)
    if pa.types.is_timestamp(kind):
        return f"timestamp[{kind.unit}" + (f", tz={kind.tz}" if kind.tz else "") + "]"
    raise ServiceError(f"record set column {column!r}: type {kind} has no dtype on the Hub")


def feature(name: str, kind: pa.DataType) -> dict[str, Any]:
    """One entry of `dataset_info.features`."""
    described = feature_type(kind, column=name)
    if isinstance(described, dict):
        return {"name": name, **described}
    return {"name": name, "dtype": described}


def split_bytes(path: Path) -> int:
    """The split's size as the Hub reports it (`num_bytes`: the decoded Arrow data), read a
    row group at a time so a large record set is never held whole."""
    handle = pq.ParquetFile(path)
    return sum(handle.read_row_group(n).nbytes for n in range(handle.num_row_groups))


def config_info(*, name: str, entry: dict[str, Any], folder: Path) -> dict[str, Any]:
    """`dataset_info` of one config, from its Parquet file as written."""
    path = folder / entry["file"]
    schema = pq.read_schema(path)
    size = split_bytes(path)
    return {
        "config_name": name,
        "features": [feature(f.name, f.type) for f in schema],
        "splits": [{"name": SPLIT, "num_bytes": size, "num_examples": entry["rows"]}],
        "download_size": path.stat().st_size,
        "dataset_size": size,
    }


def yaml_lines(value: Any, indent: str = "") -> list[str]:
    """`value` (dicts, lists, scalars) as block-style YAML; scalars as JSON, which YAML reads."""
    lines: list[str] = []
    if isinstance(value, dict):
        for key, item in value.items():
            if isinstance(item, dict | list) and item:
                lines += [f"{indent}{key}:", *yaml_lines(item, indent + "  ")]
            else:
                lines.append(f"{indent}{key}: {json.dumps(item)}")
    elif isinstance(value, list):
        for item in value:
            inner = yaml_lines(item, indent + "  ")
            # The item's first line after "- ", its other lines as they are.
            lines += [f"{indent}- {inner[0].lstrip()}", *inner[1:]]
    else:
        lines.append(f"{indent}{json.dumps(value)}")
    return lines


def card_metadata(
    *,
    folder: Path,
    terms: dict[str, Any],
    sets: dict[str, Any],
    task_categories: tuple[str, ...],
    pretty_name: str,
    simulated: bool,
    source: str,
) -> dict[str, Any]:
    """The header's fields, in the order the Hub's own cards list them. `simulated`: the
    answers came from the demo's stand-in crowd (machine-generated, not crowdsourced)."""
    license_id = str(terms["license"]).lower()
    licensed = (
        {"license": license_id}
        if license_id in HUB_LICENSES
        else {"license": "other", "license_name": str(terms["license"])}
    )
    rows = max((entry["rows"] for entry in sets.values()), default=0)
    return {
        **licensed,
        "language": ["en"],  # the captions judged are COCO's (or Flickr's), in English
        "annotations_creators": ["machine-generated" if simulated else "crowdsourced"],
        "language_creators": ["found"],
        "multilinguality": ["monolingual"],
        "size_categories": [size_category(rows)],
        "source_datasets": [f"extended|other-{source}"],
        "task_categories": list(task_categories),
        "pretty_name": pretty_name,
        "tags": ["synthetic" if simulated else "crowdsourced", "croissant"],
        "configs": [
            {
                "config_name": name,
                **({"default": True} if n == 0 else {}),
                "data_files": [{"split": SPLIT, "path": entry["file"]}],
            }
            for n, (name, entry) in enumerate(sets.items())
        ],
        "dataset_info": [
            config_info(name=name, entry=entry, folder=folder) for name, entry in sets.items()
        ],
    }


def card_header(**fields: Any) -> list[str]:
    """The card's YAML front matter as lines, `---` to `---` (`card_metadata`'s arguments)."""
    return ["---", *yaml_lines(card_metadata(**fields)), "---"]

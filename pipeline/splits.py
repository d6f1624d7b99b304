"""Split files: which images a run may use (queries and gallery), e.g. the COCO 5k test split.

Accepted layouts: a JSON list of image ids, or an object with an `image_ids` list (other keys,
such as where the list came from, are kept as provenance).
"""

from __future__ import annotations

import hashlib
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from pipeline.errors import InputError
from pipeline.jsonio import decode_json, describe


@dataclass(frozen=True)
class Split:
    image_ids: tuple[int, ...]
    sha256: str
    provenance: dict[str, Any] = field(default_factory=dict)


def load_split(path: str | Path) -> Split:
    name = str(path)
    try:
        raw = Path(path).read_bytes()
    except OSError as exc:
        raise InputError(f"cannot read file: {exc.strerror or exc}", file=name) from None
    return parse_split(raw, file=name)


def parse_split(raw: bytes, *, file: str) -> Split:
    doc = decode_json(raw, file=file)
    provenance: dict[str, Any] = {}
    if isinstance(doc, dict):
        if "image_ids" not in doc:
            raise InputError("missing", file=file, field="image_ids")
        provenance = {k: v for k, v in doc.items() if k != "image_ids" and isinstance(v, str)}
        ids = doc["image_ids"]
    else:
        ids = doc
    if not isinstance(ids, list) or not ids:
        raise InputError(
            f"must be a non-empty list of image ids, got {describe(ids)}",
            file=file,
            field="image_ids",
        )
    seen: set[int] = set()
    for n, value in enumerate(ids):
        if isinstance(value, bool) or not isinstance(value, int) or not 0 <= value < 2**63:
            raise InputError(
                f"must be an image id (an integer >= 0), got {describe(value)}",
                file=file,
                record=n,
                field="image_ids",
            )
        if value in seen:
            raise InputError(
                f"image {value} is listed twice", file=file, record=n, field="image_ids"
            )
        seen.add(value)
    return Split(
        image_ids=tuple(sorted(seen)),
        sha256=hashlib.sha256(raw).hexdigest(),
        provenance=provenance,
    )

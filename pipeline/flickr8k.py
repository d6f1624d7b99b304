"""Flickr8k human judgments in the derived JSON layout the captioning-metric community reads
(clipscore's `flickr8k_example`, used by PAC-S):

    {"<key>": {"human_judgement": [{"image_id", "image_path", "caption", "rating"}, ...],
               "image_id": ..., "image_path": ..., "ground_truth": [references]}}

Flickr8k-Expert: one judgement per expert score (1-4); Flickr8k-CF: the share of "yes".
Read as the PAC-S / CLIP-S evaluation reads it: a judgement whose rating is NaN is skipped
(and counted), and captions and references have their whitespace collapsed to single spaces.
"""

from __future__ import annotations

import json
import math
from collections.abc import Iterable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from pipeline.errors import InputError


@dataclass(frozen=True)
class Judgement:
    key: str
    image_id: str
    image_path: str
    caption: str
    rating: float
    references: tuple[str, ...]


@dataclass(frozen=True)
class Derived:
    judgements: list[Judgement]
    skipped_nan: int  # judgements whose rating is NaN, left out as PAC-S's evaluation does


def words(text: str) -> str:
    """Whitespace collapsed to single spaces (PAC-S's `' '.join(caption.split())`)."""
    return " ".join(text.split())


def load_derived(path: str | Path) -> list[Judgement]:
    """The judgements of a derived-layout file, NaN ratings skipped (see `read_derived`)."""
    return read_derived(path).judgements


def read_derived(path: str | Path) -> Derived:
    name = str(path)
    try:
        document = json.loads(Path(path).read_text(encoding="utf-8"))
    except (OSError, ValueError) as exc:
        raise InputError(f"cannot read the judgments: {exc}", file=name) from None
    if not isinstance(document, dict):
        raise InputError("must be an object keyed by image", file=name)
    out: list[Judgement] = []
    skipped = 0
    for key, entry in document.items():
        if not isinstance(entry, dict) or not isinstance(entry.get("human_judgement"), list):
            raise InputError(
                "needs a human_judgement list", file=name, record=key, field="human_judgement"
            )
        refs = tuple(words(str(r)) for r in entry.get("ground_truth", []))
        for n, j in enumerate(entry["human_judgement"]):
            try:
                rating = float(j["rating"])
                caption = words(str(j["caption"]))
            except (KeyError, TypeError, ValueError):
                raise InputError(
                    "needs a caption and a numeric rating",
                    file=name,
                    record=f"{key}[{n}]",
                    field="rating",
                ) from None
            if math.isnan(rating):
                skipped += 1
                continue
            if math.isinf(rating):
                raise InputError("must be finite", file=name, record=f"{key}[{n}]", field="rating")
            out.append(
                Judgement(
                    key=key,
                    image_id=str(j.get("image_id", key)),
                    image_path=str(j.get("image_path", entry.get("image_path", ""))),
                    caption=caption,
                    rating=rating,
                    references=refs,
                )
            )
    return Derived(out, skipped)


def derived_document(judgements: Iterable[Judgement]) -> dict[str, Any]:
    """The layout `load_derived` reads, grouped by key in first-seen order."""
    document: dict[str, Any] = {}
    for j in judgements:
        entry = document.setdefault(
            j.key,
            {
                "human_judgement": [],
                "image_id": j.image_id,
                "image_path": j.image_path,
                "ground_truth": list(j.references),
            },
        )
        entry["human_judgement"].append(
            {
                "image_id": j.image_id,
                "image_path": j.image_path,
                "caption": j.caption,
                "rating": j.rating,
            }
        )
    return document


def token_file_to_coco(path: str | Path) -> dict[str, Any]:
    """Flickr8k's `Flickr8k.token.txt` (`<image>#<n><TAB>caption`) as a COCO captions
    document, so it imports like any dataset: images numbered 1.. in name order (the name is
    the `file_name`), captions numbered 1.. in file order. Bad lines name the line."""
    name = str(path)
    try:
        lines = Path(path).read_text(encoding="utf-8").splitlines()
    except (OSError, UnicodeDecodeError) as exc:
        raise InputError(f"cannot read the token file: {exc}", file=name) from None
    rows: list[tuple[str, str]] = []
    for number, line in enumerate(lines, start=1):
        if not line.strip():
            continue
        key, tab, text = line.partition("\t")
        image, hash_, _n = key.partition("#")
        if not tab or not hash_ or not image or not text.strip():
            raise InputError(
                "must be <image>#<n><TAB><caption>", file=name, record=number, field="caption"
            )
        rows.append((image.strip(), text.strip()))
    if not rows:
        raise InputError("no captions in the file", file=name)
    ids = {image: n for n, image in enumerate(sorted({r[0] for r in rows}), start=1)}
    return {
        "info": {"description": f"Flickr8k captions from {Path(path).name}"},
        "images": [
            {"id": n, "file_name": image, "coco_url": ""}
            for image, n in sorted(ids.items(), key=lambda kv: kv[1])
        ],
        "annotations": [
            {"id": n, "image_id": ids[image], "caption": text}
            for n, (image, text) in enumerate(rows, start=1)
        ],
    }

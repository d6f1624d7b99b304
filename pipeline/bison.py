"""The official COCO-BISON annotation and prediction files, and BISON accuracy."""

from __future__ import annotations

import json
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from json.encoder import encode_basestring_ascii
from typing import Any

from pipeline.errors import InputError
from pipeline.jsonio import decode_json, describe, require_int, require_object, require_str

Candidate = tuple[int, str]


@dataclass(frozen=True)
class BisonRecord:
    """One BISON item: a caption, its true image and two candidates ``(image_id, filename)``."""

    bison_id: int
    caption_id: int
    true_image_id: int
    candidates: tuple[Candidate, Candidate]


@dataclass
class BisonScore:
    """BISON accuracy over all annotation records (a missing prediction counts as wrong)."""

    accuracy: float
    correct: int
    total: int
    missing: list[int] = field(default_factory=list)
    unknown: list[int] = field(default_factory=list)


def bison_document(
    records: Sequence[BisonRecord], *, source: str = "coco", split: str = "val2014"
) -> dict:
    """The BISON annotations JSON document, in the official layout and record order."""
    _check_records(records)
    return {
        "info": {"source": source, "split": split},
        "data": [
            {
                "bison_id": record.bison_id,
                "caption_id": record.caption_id,
                "true_image_id": record.true_image_id,
                "image_candidates": [
                    {"image_id": image_id, "image_filename": filename}
                    for image_id, filename in record.candidates
                ],
            }
            for record in records
        ],
    }


def bison_document_json(
    *,
    caption_ids: Sequence[int],
    true_image_ids: Sequence[int],
    candidates: tuple[Sequence[int], Sequence[str], Sequence[int], Sequence[str]],
    source: str = "coco",
    split: str = "val2014",
) -> bytes:
    """The bytes `json.dumps(bison_document(records), separators=(",", ":"))` writes, from
    columns of Python values (bison ids numbered from 0; `candidates`: the first candidates' image ids and
    file names, then the second's), written line by line without a dict per record (a
    tenth of the time at 30,000 records). The records are checked as `bison_document`
    checks them."""
    image_0, file_0, image_1, file_1 = candidates
    text = encode_basestring_ascii  # json.dumps' own string encoder (ensure_ascii)
    parts = []
    for bison_id, (caption, true, i0, f0, i1, f1) in enumerate(
        zip(caption_ids, true_image_ids, image_0, file_0, image_1, file_1, strict=True)
    ):
        if true != i0 and true != i1:
            raise InputError(
                "true image is not a candidate", record=bison_id, field="true_image_id"
            )
        if i0 == i1:
            raise InputError(
                "both candidates are the same image", record=bison_id, field="image_candidates"
            )
        parts.append(
            f'{{"bison_id":{bison_id},"caption_id":{caption},"true_image_id":{true},'
            f'"image_candidates":[{{"image_id":{i0},"image_filename":{text(f0)}}},'
            f'{{"image_id":{i1},"image_filename":{text(f1)}}}]}}'
        )
    info = json.dumps({"source": source, "split": split}, separators=(",", ":"))
    return f'{{"info":{info},"data":[{",".join(parts)}]}}'.encode()


def _check_records(records: Sequence[BisonRecord]) -> None:
    seen: set[int] = set()
    for record in records:
        if record.bison_id in seen:
            raise InputError("duplicate bison_id", record=record.bison_id, field="bison_id")
        seen.add(record.bison_id)
        if len(record.candidates) != 2:
            raise InputError(
                "need exactly 2 candidates", record=record.bison_id, field="image_candidates"
            )
        ids = [image_id for image_id, _ in record.candidates]
        if record.true_image_id not in ids:
            raise InputError(
                "true image is not a candidate", record=record.bison_id, field="true_image_id"
            )
        if ids[0] == ids[1]:
            raise InputError(
                "both candidates are the same image",
                record=record.bison_id,
                field="image_candidates",
            )


def parse_bison_annotations(raw: bytes | str, *, file: str) -> list[BisonRecord]:
    """Validate a BISON annotations JSON document and return its records in file order."""
    doc = decode_json(raw, file=file)
    if not isinstance(doc, dict):
        raise InputError(f"top level must be a JSON object, got {describe(doc)}", file=file)
    if "info" not in doc:
        raise InputError("missing", file=file, field="info")
    info = require_object(doc["info"], file=file, record=None, field="info")
    for key in ("source", "split"):
        require_str(info, key, file=file, record="info", field=f"info.{key}")
    if "data" not in doc:
        raise InputError("missing", file=file, field="data")
    rows = doc["data"]
    if not isinstance(rows, list):
        raise InputError(f"must be a list, got {describe(rows)}", file=file, field="data")

    records: list[BisonRecord] = []
    position: dict[int, int] = {}
    for index, row in enumerate(rows):
        record = _parse_record(row, index, file=file)
        if record.bison_id in position:
            raise InputError(
                f"duplicate bison_id (also data[{position[record.bison_id]}])",
                file=file,
                record=record.bison_id,
                field="bison_id",
            )
        position[record.bison_id] = index
        records.append(record)
    return records


def _parse_record(row: Any, index: int, *, file: str) -> BisonRecord:
    row = require_object(row, file=file, record=f"data[{index}]", field=None)
    bison_id = require_int(row, "bison_id", file=file, record=f"data[{index}]")
    caption_id = require_int(row, "caption_id", file=file, record=bison_id)
    true_image_id = require_int(row, "true_image_id", file=file, record=bison_id)
    if "image_candidates" not in row:
        raise InputError("missing", file=file, record=bison_id, field="image_candidates")
    items = row["image_candidates"]
    if not isinstance(items, list) or len(items) != 2:
        got = f"{len(items)} items" if isinstance(items, list) else describe(items)
        raise InputError(
            f"must be a list of exactly 2 candidates, got {got}",
            file=file,
            record=bison_id,
            field="image_candidates",
        )
    candidates: list[Candidate] = []
    for position, item in enumerate(items):
        where = f"image_candidates[{position}]"
        item = require_object(item, file=file, record=bison_id, field=where)
        image_id = require_int(
            item, "image_id", file=file, record=bison_id, field=f"{where}.image_id"
        )
        filename = require_str(
            item, "image_filename", file=file, record=bison_id, field=f"{where}.image_filename"
        )
        candidates.append((image_id, filename))
    if candidates[0][0] == candidates[1][0]:
        raise InputError(
            f"both candidates are image {candidates[0][0]}",
            file=file,
            record=bison_id,
            field="image_candidates",
        )
    if true_image_id not in (candidates[0][0], candidates[1][0]):
        raise InputError(
            f"true image {true_image_id} is not one of the candidates "
            f"{candidates[0][0]}, {candidates[1][0]}",
            file=file,
            record=bison_id,
            field="true_image_id",
        )
    return BisonRecord(
        bison_id=bison_id,
        caption_id=caption_id,
        true_image_id=true_image_id,
        candidates=(candidates[0], candidates[1]),
    )


def parse_bison_predictions(raw: bytes | str, *, file: str) -> dict[int, int]:
    """Validate a BISON predictions JSON list and return ``{bison_id: predicted_image_id}``."""
    doc = decode_json(raw, file=file)
    if not isinstance(doc, list):
        raise InputError(f"top level must be a JSON list, got {describe(doc)}", file=file)
    predictions: dict[int, int] = {}
    position: dict[int, int] = {}
    for index, row in enumerate(doc):
        row = require_object(row, file=file, record=f"[{index}]", field=None)
        bison_id = require_int(row, "bison_id", file=file, record=f"[{index}]")
        predicted = require_int(row, "predicted_image_id", file=file, record=bison_id)
        if bison_id in position:
            raise InputError(
                f"duplicate prediction (also [{position[bison_id]}])",
                file=file,
                record=bison_id,
                field="bison_id",
            )
        position[bison_id] = index
        predictions[bison_id] = predicted
    return predictions


def bison_accuracy(records: Sequence[BisonRecord], predictions: Mapping[int, int]) -> BisonScore:
    """Mean of ``true_image_id == predicted`` over every annotation record."""
    if not records:
        raise InputError("no annotation records to score", field="data")
    correct = 0
    missing: list[int] = []
    for record in records:
        predicted = predictions.get(record.bison_id)
        if predicted is None:
            missing.append(record.bison_id)
        elif predicted == record.true_image_id:
            correct += 1
    known = {record.bison_id for record in records}
    unknown = sorted(bison_id for bison_id in predictions if bison_id not in known)
    return BisonScore(
        accuracy=correct / len(records),
        correct=correct,
        total=len(records),
        missing=missing,
        unknown=unknown,
    )

from __future__ import annotations

import copy
import json
from pathlib import Path
from typing import Any

import pytest

from pipeline.bison import (
    BisonRecord,
    BisonScore,
    bison_accuracy,
    bison_document,
    bison_document_json,
    parse_bison_annotations,
    parse_bison_predictions,
)
from pipeline.errors import InputError

FILE = "bison.json"
ANNOTATIONS = "bison_annotations.cocoval2014.subset.reconstructed.json"
PREDICTIONS = "bison_fake_predictions.cocoval2014.subset.json"

RECORDS = [
    BisonRecord(
        bison_id=104,
        caption_id=195091,
        true_image_id=243495,
        candidates=(
            (404608, "COCO_val2014_000000404608.jpg"),
            (243495, "COCO_val2014_000000243495.jpg"),
        ),
    ),
    BisonRecord(
        bison_id=7,
        caption_id=11,
        true_image_id=1,
        candidates=((1, "COCO_val2014_000000000001.jpg"), (2, "COCO_val2014_000000000002.jpg")),
    ),
]

DOCUMENT: dict[str, Any] = {
    "info": {"source": "coco", "split": "val2014"},
    "data": [
        {
            "bison_id": 104,
            "caption_id": 195091,
            "true_image_id": 243495,
            "image_candidates": [
                {"image_id": 404608, "image_filename": "COCO_val2014_000000404608.jpg"},
                {"image_id": 243495, "image_filename": "COCO_val2014_000000243495.jpg"},
            ],
        },
        {
            "bison_id": 7,
            "caption_id": 11,
            "true_image_id": 1,
            "image_candidates": [
                {"image_id": 1, "image_filename": "COCO_val2014_000000000001.jpg"},
                {"image_id": 2, "image_filename": "COCO_val2014_000000000002.jpg"},
            ],
        },
    ],
}


def test_document_has_the_official_layout() -> None:
    document = bison_document(RECORDS)
    assert document == DOCUMENT
    assert json.dumps(document) == json.dumps(DOCUMENT)  # same key order too
    assert bison_document(RECORDS, source="coco", split="test2014")["info"] == {
        "source": "coco",
        "split": "test2014",
    }


def test_document_round_trips_through_the_parser() -> None:
    assert parse_bison_annotations(json.dumps(bison_document(RECORDS)), file=FILE) == RECORDS


def test_document_rejects_inconsistent_records() -> None:
    wrong_truth = BisonRecord(1, 2, 99, ((3, "a.jpg"), (4, "b.jpg")))
    with pytest.raises(InputError) as info:
        bison_document([wrong_truth])
    assert (info.value.record, info.value.field) == (1, "true_image_id")
    with pytest.raises(InputError) as info:
        bison_document([RECORDS[0], RECORDS[0]])
    assert (info.value.record, info.value.field) == (104, "bison_id")


def test_real_reconstructed_annotations_and_fake_predictions(reference_data: Path) -> None:
    raw = (reference_data / ANNOTATIONS).read_bytes()
    records = parse_bison_annotations(raw, file=ANNOTATIONS)
    assert len(records) == 792
    assert records[0] == RECORDS[0]
    assert bison_document(records) == json.loads(raw)
    predictions = parse_bison_predictions(
        (reference_data / PREDICTIONS).read_bytes(), file=PREDICTIONS
    )
    assert len(predictions) == 792
    score = bison_accuracy(records, predictions)
    # The official bison_eval.py printed "Mean BISON accuracy on coco.val2014: 52.15%".
    assert round(100 * score.accuracy, 2) == 52.15
    assert (score.correct, score.total, score.missing, score.unknown) == (413, 792, [], [])


def test_accuracy_counts_missing_as_wrong_and_lists_unknown() -> None:
    score = bison_accuracy(RECORDS, {7: 1, 555: 3, 8: 1})
    assert score == BisonScore(accuracy=0.5, correct=1, total=2, missing=[104], unknown=[8, 555])
    assert bison_accuracy(RECORDS, {104: 404608, 7: 2}).accuracy == 0.0
    assert bison_accuracy(RECORDS, {104: 243495, 7: 1}).accuracy == 1.0


def test_accuracy_needs_records() -> None:
    with pytest.raises(InputError):
        bison_accuracy([], {1: 2})


def annotation_error(doc: Any) -> InputError:
    with pytest.raises(InputError) as info:
        parse_bison_annotations(json.dumps(doc), file=FILE)
    assert info.value.file == FILE
    return info.value


def test_malformed_annotations_json() -> None:
    with pytest.raises(InputError) as info:
        parse_bison_annotations('{"info": {}, "data": [\n\n  {"bison_id": }]}', file=FILE)
    assert "line 3, column 16" in str(info.value)


@pytest.mark.parametrize(
    ("change", "field"),
    [
        (lambda d: d.pop("info"), "info"),
        (lambda d: d.update(info=[]), "info"),
        (lambda d: d["info"].pop("source"), "info.source"),
        (lambda d: d["info"].pop("split"), "info.split"),
        (lambda d: d["info"].update(split=2014), "info.split"),
        (lambda d: d.pop("data"), "data"),
        (lambda d: d.update(data={}), "data"),
    ],
)
def test_bad_annotation_document(change: Any, field: str) -> None:
    doc = copy.deepcopy(DOCUMENT)
    change(doc)
    assert annotation_error(doc).field == field


def test_annotations_top_level_must_be_object() -> None:
    assert annotation_error([DOCUMENT]).field is None


@pytest.mark.parametrize(
    ("change", "record", "field"),
    [
        (lambda r: r.pop("bison_id"), "data[1]", "bison_id"),
        (lambda r: r.update(bison_id="7"), "data[1]", "bison_id"),
        (lambda r: r.pop("caption_id"), 7, "caption_id"),
        (lambda r: r.update(caption_id=1.5), 7, "caption_id"),
        (lambda r: r.pop("true_image_id"), 7, "true_image_id"),
        (lambda r: r.update(true_image_id=3), 7, "true_image_id"),
        (lambda r: r.pop("image_candidates"), 7, "image_candidates"),
        (lambda r: r["image_candidates"].pop(), 7, "image_candidates"),
        (lambda r: r["image_candidates"].append(r["image_candidates"][0]), 7, "image_candidates"),
        (lambda r: r.update(image_candidates="1,2"), 7, "image_candidates"),
        (lambda r: r["image_candidates"][1].update(image_id=1), 7, "image_candidates"),
        (lambda r: r["image_candidates"][1].pop("image_id"), 7, "image_candidates[1].image_id"),
        (
            lambda r: r["image_candidates"][0].update(image_filename=None),
            7,
            "image_candidates[0].image_filename",
        ),
        (lambda r: r["image_candidates"].__setitem__(0, 1), 7, "image_candidates[0]"),
    ],
)
def test_bad_annotation_record(change: Any, record: Any, field: str) -> None:
    doc = copy.deepcopy(DOCUMENT)
    change(doc["data"][1])
    error = annotation_error(doc)
    assert (error.record, error.field) == (record, field)


def test_duplicate_bison_id() -> None:
    doc = copy.deepcopy(DOCUMENT)
    doc["data"][1]["bison_id"] = 104
    error = annotation_error(doc)
    assert (error.record, error.field) == (104, "bison_id")
    assert "data[0]" in error.message


def test_parse_predictions() -> None:
    raw = (
        b'[{"predicted_image_id": 143961, "bison_id": 0}, {"bison_id": 5, "predicted_image_id": 9}]'
    )
    assert parse_bison_predictions(raw, file=FILE) == {0: 143961, 5: 9}
    assert parse_bison_predictions("[]", file=FILE) == {}


@pytest.mark.parametrize(
    ("raw", "record", "field"),
    [
        ('{"bison_id": 1}', None, None),
        ("[[1, 2]]", "[0]", None),
        ('[{"predicted_image_id": 3}]', "[0]", "bison_id"),
        ('[{"bison_id": "1", "predicted_image_id": 3}]', "[0]", "bison_id"),
        ('[{"bison_id": 1}]', 1, "predicted_image_id"),
        ('[{"bison_id": 1, "predicted_image_id": true}]', 1, "predicted_image_id"),
        ('[{"bison_id": 1, "predicted_image_id": 3.0}]', 1, "predicted_image_id"),
        (
            '[{"bison_id": 1, "predicted_image_id": 3}, {"bison_id": 1, "predicted_image_id": 3}]',
            1,
            "bison_id",
        ),
    ],
)
def test_bad_predictions(raw: str, record: Any, field: str | None) -> None:
    with pytest.raises(InputError) as info:
        parse_bison_predictions(raw, file=FILE)
    assert (info.value.file, info.value.record, info.value.field) == (FILE, record, field)


def test_malformed_predictions_json() -> None:
    with pytest.raises(InputError, match="line 1, column 2"):
        parse_bison_predictions("[}", file=FILE)


def _columns(records: list[BisonRecord]) -> dict[str, Any]:
    return {
        "caption_ids": [r.caption_id for r in records],
        "true_image_ids": [r.true_image_id for r in records],
        "candidates": (
            [r.candidates[0][0] for r in records],
            [r.candidates[0][1] for r in records],
            [r.candidates[1][0] for r in records],
            [r.candidates[1][1] for r in records],
        ),
    }


def test_the_document_written_from_columns_is_json_dumps_byte_for_byte() -> None:
    """The export writes the file from columns; its bytes are json.dumps' of the document,
    file names that need escaping (quotes, backslashes, non-ASCII) included."""
    names = ['COCO "quoted".jpg', "back\\slash.jpg", "caf\u00e9 \u6771\u4eac.jpg", "", "tab\t.jpg"]
    records = [
        BisonRecord(
            bison_id=n,
            caption_id=1000 + n,
            true_image_id=n + 1 if n % 2 else n + 2,
            candidates=((n + 1, names[n % len(names)]), (n + 2, names[(n + 1) % len(names)])),
        )
        for n in range(12)
    ]
    for split in ("val2014", 'odd "split"'):
        want = json.dumps(
            bison_document(records, source="coco", split=split), separators=(",", ":")
        ).encode()
        got = bison_document_json(**_columns(records), source="coco", split=split)
        assert got == want
    assert (
        bison_document_json(**_columns([]), split="val2014")
        == json.dumps(bison_document([]), separators=(",", ":")).encode()
    )


def test_the_document_from_columns_checks_its_records() -> None:
    wrong_true = BisonRecord(
        bison_id=0, caption_id=1, true_image_id=9, candidates=((1, "a.jpg"), (2, "b.jpg"))
    )
    with pytest.raises(InputError, match="true image is not a candidate"):
        bison_document_json(**_columns([RECORDS[1], wrong_true]))
    same = BisonRecord(
        bison_id=0, caption_id=1, true_image_id=1, candidates=((1, "a.jpg"), (1, "a.jpg"))
    )
    with pytest.raises(InputError, match="the same image") as error:
        bison_document_json(**_columns([RECORDS[1], same]))
    assert "1" in str(error.value)  # the record's bison id (its row number)

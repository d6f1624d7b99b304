from __future__ import annotations

import json
import warnings
from pathlib import Path

import pytest

from pipeline.cxc import (
    ECCV_CXC_THRESHOLD,
    SisRow,
    SitsRow,
    StsRow,
    cxc_positives,
    load_sis,
    load_sits,
    load_sts,
    parse_sis,
    parse_sits,
    parse_sts,
)
from pipeline.errors import InputError

with warnings.catch_warnings():
    warnings.simplefilter("ignore")
    import eccv_caption

DATA = Path(__file__).resolve().parents[1] / "data" / "cxc"
ECCV_DATA = Path(eccv_caption.__file__).resolve().parent / "data"
HEADER = "caption,image,agg_score,sampling_method\n"
ROW = "COCO_val2014:sentid:732091,COCO_val2014_000000365325.jpg,3.5,c2i_intrasim\n"


@pytest.fixture(scope="module")
def karpathy_test_ids() -> tuple[set[int], set[int]]:
    """Caption and image ids of the COCO 5k test split, from the eccv-caption package."""
    originals = json.loads((ECCV_DATA / "original_caption_to_image.json").read_text())
    captions = {int(key) for key in originals}
    images = {image for value in originals.values() for image in value}
    return captions, images


def test_real_sits_files(karpathy_test_ids: tuple[set[int], set[int]]) -> None:
    captions, images = karpathy_test_ids
    test_rows = load_sits(
        DATA / "sits_test.subset.csv", known_caption_ids=captions, known_image_ids=images
    )
    assert len(test_rows) == 2938
    assert test_rows[0] == SitsRow(295795, 548538, 3.16, "c2i_intrasim", 2)
    assert test_rows[-1].line == 2939
    val_rows = load_sits(DATA / "sits_val.subset.csv")
    assert len(val_rows) == 1130
    assert val_rows[0] == SitsRow(183856, 117535, 3.61, "c2i_intrasim", 2)
    assert {row.sampling_method for row in val_rows} == {"c2i_intrasim", "c2i_original"}
    # The val split is not in the test split: the known-id check catches it on line 2.
    with pytest.raises(InputError) as info:
        load_sits(DATA / "sits_val.subset.csv", known_image_ids=images)
    assert (info.value.record, info.value.field) == (2, "image")
    assert info.value.file == str(DATA / "sits_val.subset.csv")


def test_real_sis_and_sts_files() -> None:
    sis = load_sis(DATA / "sis_val.subset.csv")
    assert len(sis) == 1554
    assert sis[0] == SisRow(32887, 153734, 0.99, "i2i_csim", 2)
    sts = load_sts(DATA / "sts_val.subset.csv")
    assert len(sts) == 1113
    assert sts[0] == StsRow(606310, 170547, 0.6, "c2c_isim", 2)
    assert {row.sampling_method for row in sts} == {"c2c_isim", "c2c_cocaption"}


def test_positives_match_eccv_caption_cxc_files() -> None:
    """eccv-caption's CxC positives are exactly the sits_test pairs rated >= 3."""
    rows = load_sits(DATA / "sits_test.subset.csv")
    reference_i2t = json.loads((ECCV_DATA / "cxc_image_to_caption.json").read_text())
    reference_t2i = json.loads((ECCV_DATA / "cxc_caption_to_image.json").read_text())
    positives = cxc_positives(rows, ECCV_CXC_THRESHOLD)
    for row in rows:
        in_reference = row.caption_id in reference_i2t.get(str(row.image_id), [])
        assert in_reference == (row.image_id in reference_t2i.get(str(row.caption_id), []))
        ours = row.caption_id in positives.i2t.get(row.image_id, [])
        assert ours == in_reference == (row.score >= 3.0), row
        assert ours == (row.image_id in positives.t2i.get(row.caption_id, []))
    # A threshold just above 3 would drop pairs the package keeps.
    assert sum(map(len, cxc_positives(rows, 3.01).i2t.values())) < sum(
        map(len, positives.i2t.values())
    )


def test_cxc_positives_hand_computed() -> None:
    rows = [
        SitsRow(10, 1, 3.0, "m", 2),
        SitsRow(11, 1, 2.99, "m", 3),
        SitsRow(12, 1, 5.0, "m", 4),
        SitsRow(10, 2, 4.0, "m", 5),
    ]
    positives = cxc_positives(rows, 3.0)
    assert positives.i2t == {1: [10, 12], 2: [10]}
    assert positives.t2i == {10: [1, 2], 12: [1]}
    with pytest.raises(InputError) as info:
        cxc_positives(rows, 6)
    assert info.value.field == "threshold"


def test_crlf_and_byte_order_mark() -> None:
    raw = ("\ufeff" + HEADER + ROW).replace("\n", "\r\n").encode()
    assert parse_sits(raw, file="s.csv") == [SitsRow(732091, 365325, 3.5, "c2i_intrasim", 2)]


@pytest.mark.parametrize(
    ("text", "record", "field"),
    [
        ("caption,image,score,sampling_method\n" + ROW, 1, "header"),
        ("image,caption,agg_score,sampling_method\n" + ROW, 1, "header"),
        ("", 1, None),
        (HEADER + ROW + "COCO_val2014:sentid:x1,COCO_val2014_000000365325.jpg,3,m\n", 3, "caption"),
        (HEADER + "732091,COCO_val2014_000000365325.jpg,3,m\n", 2, "caption"),
        (HEADER + "COCO_val2014:sentid:1,COCO_val2014_365325.jpg,3,m\n", 2, "image"),
        (HEADER + "COCO_val2014:sentid:1,COCO_val2014_000000365325.png,3,m\n", 2, "image"),
        (HEADER + "COCO_val2014:sentid:1,COCO_val2014_000000365325.jpg,5.5,m\n", 2, "agg_score"),
        (HEADER + "COCO_val2014:sentid:1,COCO_val2014_000000365325.jpg,-0.1,m\n", 2, "agg_score"),
        (HEADER + "COCO_val2014:sentid:1,COCO_val2014_000000365325.jpg,nan,m\n", 2, "agg_score"),
        (HEADER + "COCO_val2014:sentid:1,COCO_val2014_000000365325.jpg,high,m\n", 2, "agg_score"),
        (HEADER + "COCO_val2014:sentid:1,COCO_val2014_000000365325.jpg,3,\n", 2, "sampling_method"),
        (HEADER + "COCO_val2014:sentid:1,COCO_val2014_000000365325.jpg,3\n", 2, None),
        (HEADER + ROW + ROW, 3, "caption"),
    ],
)
def test_sits_errors(text: str, record: int, field: str | None) -> None:
    with pytest.raises(InputError) as info:
        parse_sits(text, file="s.csv")
    assert (info.value.file, info.value.record, info.value.field) == ("s.csv", record, field)


def test_unknown_ids() -> None:
    with pytest.raises(InputError) as info:
        parse_sits(HEADER + ROW, file="s.csv", known_caption_ids=[1])
    assert (info.value.record, info.value.field) == (2, "caption")
    with pytest.raises(InputError) as info:
        parse_sis(
            "image1,image2,agg_score,sampling_method\n"
            "COCO_val2014_000000000001.jpg,COCO_val2014_000000000002.jpg,1,i2i_csim\n",
            file="i.csv",
            known_image_ids={1},
        )
    assert (info.value.record, info.value.field) == (2, "image2")
    with pytest.raises(InputError) as info:
        parse_sts(
            "caption1,caption2,agg_score,sampling_method\n"
            "COCO_val2014:sentid:5,COCO_val2014:sentid:6,1,c2c_isim\n",
            file="t.csv",
            known_caption_ids={6},
        )
    assert (info.value.record, info.value.field) == (2, "caption1")


def test_line_numbers_count_the_header_and_skip_blank_lines() -> None:
    text = HEADER + ROW + "\n" + ROW.replace("3.5", "9")
    with pytest.raises(InputError) as info:
        parse_sits(text, file="s.csv")
    assert (info.value.record, info.value.field) == (4, "agg_score")


def test_sis_keeps_both_orders_of_a_pair() -> None:
    header = "image1,image2,agg_score,sampling_method\n"
    a, b = "COCO_val2014_000000000001.jpg", "COCO_val2014_000000000002.jpg"
    rows = parse_sis(f"{header}{a},{b},1,i2i_csim\n{b},{a},2,i2i_csim\n", file="i.csv")
    assert [(r.image_id_1, r.image_id_2, r.score) for r in rows] == [(1, 2, 1.0), (2, 1, 2.0)]


def test_missing_file() -> None:
    with pytest.raises(InputError, match="cannot read"):
        load_sits(DATA / "absent.csv")

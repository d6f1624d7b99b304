import json

import pytest

from pipeline.errors import InputError
from pipeline.splits import load_split, parse_split


def test_the_shipped_5k_split_has_provenance(tmp_path):
    from pathlib import Path

    path = Path(__file__).resolve().parents[2] / "data" / "eccv" / "coco_5k_test_image_ids.json"
    split = load_split(path)
    assert len(split.image_ids) == 5000 and list(split.image_ids) == sorted(split.image_ids)
    assert "eccv-caption" in split.provenance["source"] and "MIT" in split.provenance["license"]


def test_a_bare_list_is_a_split():
    assert parse_split(b"[3, 1, 2]", file="s.json").image_ids == (1, 2, 3)


@pytest.mark.parametrize(
    ("doc", "record", "field"),
    [
        ({"ids": [1]}, None, "image_ids"),
        ([], None, "image_ids"),
        ([1, "2"], 1, "image_ids"),
        ([1, True], 1, "image_ids"),
        ([1, 2**63], 1, "image_ids"),
        ([1, 1], 1, "image_ids"),
    ],
)
def test_bad_splits_name_the_record(doc, record, field):
    with pytest.raises(InputError) as info:
        parse_split(json.dumps(doc).encode(), file="s.json")
    assert (info.value.file, info.value.record, info.value.field) == ("s.json", record, field)

from __future__ import annotations

import copy
import json
from typing import Any

import pytest

from pipeline.coco import CocoCaption, CocoImage, load_coco_captions, parse_coco_captions
from pipeline.errors import InputError
from tests.pipeline.conftest import COCO_SAMPLE

FILE = "captions.json"


def valid_doc() -> dict[str, Any]:
    return {
        "info": {"description": "test"},
        "images": [
            {"id": 30, "file_name": "c.jpg", "coco_url": "http://x/c.jpg", "width": 640, "height": 480},
            {"id": 10, "file_name": "a.jpg"},
            {"id": 20, "file_name": "b.jpg", "coco_url": None, "width": 10, "height": 20},
        ],
        "annotations": [
            {"id": 5, "image_id": 30, "caption": "A cat. "},
            {"id": 2, "image_id": 10, "caption": "Two\nlines"},
            {"id": 9, "image_id": 30, "caption": "Another cat"},
        ],
    }  # fmt: skip


def parse(doc: Any) -> Any:
    return parse_coco_captions(json.dumps(doc), file=FILE)


def error_for(doc: Any) -> InputError:
    with pytest.raises(InputError) as info:
        parse(doc)
    assert info.value.file == FILE
    return info.value


def test_valid_document_keeps_file_order_and_exact_text() -> None:
    result = parse(valid_doc())
    assert result.images == [
        CocoImage(id=30, file_name="c.jpg", coco_url="http://x/c.jpg", width=640, height=480),
        CocoImage(id=10, file_name="a.jpg", coco_url=None, width=None, height=None),
    ]
    assert result.captions == [
        CocoCaption(id=5, image_id=30, text="A cat. "),
        CocoCaption(id=2, image_id=10, text="Two\nlines"),
        CocoCaption(id=9, image_id=30, text="Another cat"),
    ]
    assert result.info == {"description": "test"}


def test_image_without_captions_is_skipped_with_warning() -> None:
    result = parse(valid_doc())
    assert result.skipped_images == [20]
    assert len(result.warnings) == 1
    assert "image 20" in result.warnings[0] and "b.jpg" in result.warnings[0]


def test_bytes_input_with_byte_order_mark() -> None:
    raw = b"\xef\xbb\xbf" + json.dumps(valid_doc()).encode()
    assert len(parse_coco_captions(raw, file=FILE).captions) == 3


def test_real_sample_file() -> None:
    result = load_coco_captions(COCO_SAMPLE)
    assert len(result.images) == 462
    assert len(result.captions) == 2312
    assert result.skipped_images == [] and result.warnings == []
    assert result.images[0] == CocoImage(
        id=544,
        file_name="COCO_val2014_000000000544.jpg",
        coco_url="http://images.cocodataset.org/val2014/COCO_val2014_000000000544.jpg",
        width=640,
        height=427,
    )
    assert result.captions[0] == CocoCaption(
        id=324, image_id=183786, text="A tray of black and white sprinkled doughnuts "
    )
    # The README says 5 captions contain an embedded newline; they must survive untouched.
    assert sum("\n" in caption.text for caption in result.captions) == 5
    assert [image.id for image in result.images] == sorted(image.id for image in result.images)
    assert result.info["date_created"] == "2017/09/01"


def test_malformed_json_reports_line_and_column() -> None:
    with pytest.raises(InputError) as info:
        parse_coco_captions('{"images": [\n  {"id": 1,}\n]}', file=FILE)
    assert info.value.file == FILE
    assert "line 2, column 12" in str(info.value)


def test_not_utf8() -> None:
    with pytest.raises(InputError, match="UTF-8"):
        parse_coco_captions(b'{"images": "\xff"}', file=FILE)


def test_nan_is_not_json() -> None:
    with pytest.raises(InputError, match="NaN"):
        parse_coco_captions('{"images": [], "annotations": [], "x": NaN}', file=FILE)


@pytest.mark.parametrize("top", [[], "text", 3, None])
def test_top_level_must_be_object(top: Any) -> None:
    assert "top level" in error_for(top).message


@pytest.mark.parametrize("key", ["images", "annotations"])
def test_missing_section(key: str) -> None:
    doc = valid_doc()
    del doc[key]
    error = error_for(doc)
    assert (error.field, error.message) == (key, "missing")


@pytest.mark.parametrize("key", ["images", "annotations"])
def test_section_not_a_list(key: str) -> None:
    doc = valid_doc()
    doc[key] = {"0": {}}
    assert error_for(doc).field == key


def test_info_must_be_object() -> None:
    doc = valid_doc()
    doc["info"] = "x"
    assert error_for(doc).field == "info"


def with_image(**changes: Any) -> dict[str, Any]:
    doc = valid_doc()
    image = doc["images"][1]
    for key, value in changes.items():
        if value is KeyError:
            del image[key]
        else:
            image[key] = value
    return doc


@pytest.mark.parametrize(
    ("changes", "record", "field"),
    [
        ({"id": KeyError}, "images[1]", "id"),
        ({"id": "10"}, "images[1]", "id"),
        ({"id": 10.0}, "images[1]", "id"),
        ({"id": True}, "images[1]", "id"),
        ({"file_name": KeyError}, 10, "file_name"),
        ({"file_name": 7}, 10, "file_name"),
        ({"file_name": "  "}, 10, "file_name"),
        ({"coco_url": 3}, 10, "coco_url"),
        ({"width": "640"}, 10, "width"),
        ({"height": 0}, 10, "height"),
        ({"height": 1.5}, 10, "height"),
    ],
)
def test_bad_image_record(changes: dict[str, Any], record: Any, field: str) -> None:
    error = error_for(with_image(**changes))
    assert (error.record, error.field) == (record, field)


def test_image_record_not_an_object() -> None:
    doc = valid_doc()
    doc["images"][2] = [20, "b.jpg"]
    error = error_for(doc)
    assert error.record == "images[2]"


def test_duplicate_image_id() -> None:
    doc = valid_doc()
    doc["images"][2]["id"] = 30
    error = error_for(doc)
    assert (error.record, error.field) == (30, "id")
    assert "images[0]" in error.message


@pytest.mark.parametrize(
    ("key", "value", "record", "field"),
    [
        ("id", KeyError, "annotations[1]", "id"),
        ("id", "2", "annotations[1]", "id"),
        ("image_id", KeyError, 2, "image_id"),
        ("image_id", None, 2, "image_id"),
        ("caption", KeyError, 2, "caption"),
        ("caption", ["a"], 2, "caption"),
        ("caption", "", 2, "caption"),
        ("caption", " \n\t ", 2, "caption"),
    ],
)
def test_bad_caption_record(key: str, value: Any, record: Any, field: str) -> None:
    doc = valid_doc()
    if value is KeyError:
        del doc["annotations"][1][key]
    else:
        doc["annotations"][1][key] = value
    error = error_for(doc)
    assert (error.record, error.field) == (record, field)


def test_caption_for_unknown_image() -> None:
    doc = valid_doc()
    doc["annotations"][2]["image_id"] = 999
    error = error_for(doc)
    assert (error.record, error.field) == (9, "image_id")
    assert "999" in error.message


def test_duplicate_caption_id() -> None:
    doc = valid_doc()
    doc["annotations"][2]["id"] = 5
    error = error_for(doc)
    assert (error.record, error.field) == (5, "id")
    assert "annotations[0]" in error.message


def test_input_document_is_not_modified() -> None:
    doc = valid_doc()
    before = copy.deepcopy(doc)
    parse(doc)
    assert doc == before


def test_load_missing_file(tmp_path: Any) -> None:
    path = tmp_path / "absent.json"
    with pytest.raises(InputError) as info:
        load_coco_captions(path)
    assert info.value.file == str(path)


# --- Streaming reader: same result whatever the chunking, and bad values named. ---


def test_streaming_matches_whole_file_parse_at_any_chunk_size() -> None:
    import io

    from pipeline.coco import read_coco_captions

    raw = COCO_SAMPLE.read_bytes()
    doc = json.loads(raw)
    for chunk in (1, 7, 4096):
        result = read_coco_captions(io.BytesIO(raw), file=FILE, chunk_bytes=chunk)
        assert [c.text for c in result.captions] == [a["caption"] for a in doc["annotations"]]
        assert [c.id for c in result.captions] == [a["id"] for a in doc["annotations"]]
        assert result.info == doc["info"]
        assert len(result.images) + len(result.skipped_images) == len(doc["images"])


def test_error_position_is_right_when_the_file_is_read_in_small_chunks() -> None:
    import io

    from pipeline.coco import read_coco_captions

    text = '{"images": [\n  {"id": 1, "file_name": "a.jpg"},\n  {"id": 2,}\n]}'
    with pytest.raises(InputError) as info:
        read_coco_captions(io.BytesIO(text.encode()), file=FILE, chunk_bytes=3)
    assert "line 3, column 12" in str(info.value)


def test_captions_before_images_are_accepted() -> None:
    doc = valid_doc()
    reordered = {"annotations": doc["annotations"], "images": doc["images"]}
    assert [c.id for c in parse(reordered).captions] == [5, 2, 9]


def test_duplicate_top_level_key_is_refused() -> None:
    text = '{"images": [], "annotations": [], "images": []}'
    with pytest.raises(InputError, match="duplicate key") as info:
        parse_coco_captions(text, file=FILE)
    assert info.value.field == "images"


@pytest.mark.parametrize("value", [2**63, -(2**63) - 1, 10**30])
@pytest.mark.parametrize(
    ("section", "index", "key"),
    [("images", 1, "id"), ("annotations", 1, "id"), ("annotations", 1, "image_id")],
)
def test_ids_outside_64_bits_are_refused(section: str, index: int, key: str, value: int) -> None:
    doc = valid_doc()
    doc[section][index][key] = value
    error = error_for(doc)
    assert error.field == key and "64-bit" in error.message


@pytest.mark.parametrize("key", ["width", "height"])
def test_sizes_outside_32_bits_are_refused(key: str) -> None:
    error = error_for(with_image(**{key: 2**31}))
    assert (error.record, error.field) == (10, key)


# JSON escapes that decode to text PostgreSQL cannot store.
BAD_TEXT = {"lone-surrogate": "\\ud800x", "nul": "a\\u0000b"}


@pytest.mark.parametrize("escape", BAD_TEXT.values(), ids=BAD_TEXT.keys())
@pytest.mark.parametrize(
    ("section", "index", "key", "record"),
    [
        ("annotations", 0, "caption", 5),
        ("images", 0, "file_name", 30),
        ("images", 0, "coco_url", 30),
    ],
)
def test_text_a_database_cannot_store_is_refused(
    escape: str, section: str, index: int, key: str, record: int
) -> None:
    doc = valid_doc()
    doc[section][index][key] = "PLACEHOLDER"
    text = json.dumps(doc).replace("PLACEHOLDER", escape)
    with pytest.raises(InputError) as info:
        parse_coco_captions(text, file=FILE)
    assert (info.value.file, info.value.record, info.value.field) == (FILE, record, key)


@pytest.mark.parametrize("escape", BAD_TEXT.values(), ids=BAD_TEXT.keys())
def test_bad_text_in_info_is_refused(escape: str) -> None:
    text = json.dumps(valid_doc()).replace('"test"', f'"{escape}"')
    with pytest.raises(InputError) as info:
        parse_coco_captions(text, file=FILE)
    assert info.value.field == "info"


@pytest.mark.parametrize("where", ["info", "record"])
def test_json_nested_5000_deep_is_a_clear_error(where: str) -> None:
    deep = "[" * 5000 + "]" * 5000
    doc = json.dumps(valid_doc())
    if where == "info":
        text = doc.replace('"test"', deep)
    else:
        text = doc.replace('"caption": "A cat. "', f'"caption": "A cat. ", "x": {deep}')
    with pytest.raises(InputError, match="nested") as info:
        parse_coco_captions(text, file=FILE)
    assert info.value.record == ("info" if where == "info" else "annotations[0]")


def test_number_too_large_for_a_float_is_refused() -> None:
    text = json.dumps(valid_doc()).replace('"test"', "1e400")
    with pytest.raises(InputError, match="out of range"):
        parse_coco_captions(text, file=FILE)


def test_third_copy_of_a_caption_id_names_the_first() -> None:
    doc = valid_doc()
    doc["annotations"] += [{"id": 2, "image_id": 10, "caption": "x"}] * 2
    error = error_for(doc)
    assert (error.record, error.field) == (2, "id") and "annotations[1]" in error.message


def test_scan_keeps_no_captions_and_iter_streams_them_again(tmp_path: Any) -> None:
    from pipeline.coco import iter_coco_captions, scan_coco_captions

    path = tmp_path / "c.json"
    path.write_text(json.dumps(valid_doc()))
    scanned = scan_coco_captions(path)
    assert scanned.captions == [] and scanned.caption_count == 3
    assert [c.id for c in iter_coco_captions(path)] == [5, 2, 9]


# --- Many records decoded at once (jsonio's batched reading): same records, same errors. ---


def _tricky_file() -> bytes:
    """Captions whose text holds what a cut between records looks for (`},` and `}]`), an
    image with a nested extra field, and images and captions in either order."""
    images = [{"id": i, "file_name": f"{i}.jpg", "width": 640, "height": 480} for i in range(60)]
    images[17]["extra"] = {"nested": [{"deep": 1}]}
    captions = [
        {"id": 1000 + i, "image_id": i % 60, "caption": f"a {{cat}}, on {i}}}], mat"}
        for i in range(300)
    ]
    return json.dumps({"annotations": captions, "images": images, "info": {}}).encode()


def test_batched_reading_gives_every_record_at_any_chunk_size() -> None:
    import io

    from pipeline.coco import read_coco_captions
    from pipeline.jsonio import iter_object

    raw = _tricky_file()
    doc = json.loads(raw)
    for chunk in (5, 97, 4096, 1 << 20):
        result = read_coco_captions(io.BytesIO(raw), file=FILE, chunk_bytes=chunk)
        assert [(c.id, c.image_id, c.text) for c in result.captions] == [
            (a["id"], a["image_id"], a["caption"]) for a in doc["annotations"]
        ]
        assert [im.id for im in result.images] == list(range(60))
        batches = [
            v
            for k, i, v in iter_object(
                io.BytesIO(raw),
                file=FILE,
                streamed=frozenset({"annotations"}),
                batched=True,
                chunk_bytes=chunk,
            )
            if k == "annotations" and i is not None and i >= 0
        ]
        assert [x for batch in batches for x in batch] == doc["annotations"]
        if chunk == 1 << 20:  # one window: far fewer decodes than records
            assert len(batches) < 10


@pytest.mark.parametrize(
    ("caption", "field", "message"),
    [
        ({"id": 7, "image_id": 1, "caption": "  "}, "caption", "empty"),
        ({"id": 7, "image_id": True, "caption": "x"}, "image_id", "integer"),
        ({"id": 2**63, "image_id": 1, "caption": "x"}, "id", "out of range"),
        ({"id": 7, "image_id": 1, "caption": "a\u0000b"}, "caption", "NUL"),
        ({"id": 7, "image_id": 1}, "caption", "missing"),
    ],
)
def test_a_bad_record_among_many_is_named_as_when_read_alone(
    caption: dict, field: str, message: str
) -> None:
    import io

    from pipeline.coco import read_coco_captions

    good = [{"id": 100 + i, "image_id": 1, "caption": "fine"} for i in range(500)]
    doc = {"images": [{"id": 1, "file_name": "a.jpg"}], "annotations": good + [caption] + good}
    for chunk in (64, 1 << 20):
        with pytest.raises(InputError) as info:
            read_coco_captions(io.BytesIO(json.dumps(doc).encode()), file=FILE, chunk_bytes=chunk)
        assert (info.value.record, info.value.field) in ((7, field), ("annotations[500]", field))
        assert message in info.value.message


def test_a_lone_surrogate_among_many_is_named() -> None:
    import io

    from pipeline.coco import read_coco_captions

    def good(first: int) -> str:
        return ",".join(
            f'{{"id": {first + i}, "image_id": 1, "caption": "ok"}}' for i in range(300)
        )

    text = (
        '{"images": [{"id": 1, "file_name": "a.jpg"}], "annotations": ['
        + good(100)
        + ', {"id": 9, "image_id": 1, "caption": "bad \\ud800 here"}, '
        + good(1000)
        + "]}"
    )
    with pytest.raises(InputError) as info:
        read_coco_captions(io.BytesIO(text.encode()), file=FILE)
    assert (info.value.record, info.value.field) == (9, "caption")
    assert "surrogate" in info.value.message

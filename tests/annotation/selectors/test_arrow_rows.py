"""`arrow_rows`: a query's rows read by COPY into typed Arrow columns, texts as they are
stored (NULL missing, an empty text empty, commas, quotes, line breaks and words CSV readers
take for NULL or booleans kept), and the numpy <-> Arrow helpers built from buffers."""

from __future__ import annotations

import json

import numpy as np
import pyarrow as pa
import pytest
from django.db.models import Case, CharField, F, Value, When

from annotation.models import Dataset, Image
from annotation.selectors.arrow_rows import (
    arrow_lists,
    arrow_numbers,
    arrow_rows,
    arrow_strings,
    numpy_ints,
)

pytestmark = pytest.mark.django_db

NAMES = ["", "a,b.jpg", 'say "cheese".jpg', "NULL", "t", "line\nbreak", "caf\u00e9.jpg", "1"]


def test_texts_and_missing_values_come_back_as_stored() -> None:
    dataset = Dataset.objects.create(name="d", source_file="", checksum="", image_source="coco_url")
    for n, name in enumerate(NAMES):
        Image.objects.create(dataset=dataset, coco_id=10 + n, file_name=name, width=n or None)
    queryset = Image.objects.filter(dataset=dataset).order_by("-coco_id")
    table = arrow_rows(
        queryset,
        {
            "coco": ("coco_id", pa.int64()),
            "name": ("file_name", pa.string()),
            "width": ("width", pa.int32()),
            "maybe": (
                Case(
                    When(coco_id=10, then=Value(None)),
                    default=F("file_name"),
                    output_field=CharField(),
                ),
                pa.string(),
            ),
        },
    )
    assert table.schema.names == ["coco", "name", "width", "maybe"]
    assert table.schema.field("width").type == pa.int32()
    assert table.column("coco").to_pylist() == [10 + n for n in reversed(range(len(NAMES)))]
    assert table.column("name").to_pylist() == list(reversed(NAMES))
    assert table.column("width").to_pylist() == [n or None for n in reversed(range(len(NAMES)))]
    assert table.column("maybe").to_pylist() == list(reversed(NAMES))[:-1] + [None]
    assert numpy_ints(table.column("width"), missing=-7).tolist() == [
        n or -7 for n in reversed(range(len(NAMES)))
    ]
    empty = arrow_rows(queryset.none(), {"coco": ("coco_id", pa.int64())})
    assert empty.num_rows == 0 and empty.schema.field("coco").type == pa.int64()


def test_arrays_built_from_numpy_buffers() -> None:
    values = np.array([3, -1, 7], dtype=np.int64)
    assert arrow_numbers(values).to_pylist() == [3, -1, 7]
    assert arrow_numbers(values, valid=np.array([True, False, True])).to_pylist() == [3, None, 7]
    flags = np.array([True, False, True, True, False, False, True, False, True])
    assert arrow_numbers(flags).to_pylist() == flags.tolist()
    assert arrow_numbers(np.array([0.5, 1.25])).type == pa.float64()
    strings = arrow_strings(["w-1", "", "caf\u00e9"])
    assert strings.type == pa.string() and strings.to_pylist() == ["w-1", "", "caf\u00e9"]
    lists = arrow_lists(strings.take(arrow_numbers(np.array([0, 2, 1, 0]))), np.array([1, 0, 3]))
    assert lists.type == pa.list_(pa.string())
    assert lists.to_pylist() == [["w-1"], [], ["caf\u00e9", "", "w-1"]]
    sliced = arrow_numbers(np.arange(6), valid=np.array([1, 1, 0, 1, 1, 1], dtype=bool))[2:5]
    assert numpy_ints(sliced, missing=-1).tolist() == [-1, 3, 4]


def test_arrow_columns_casts_reads_json_as_text_and_refuses_a_null() -> None:
    from annotation.models import Event
    from annotation.selectors.arrow_rows import arrow_columns

    dataset = Dataset.objects.create(name="d", source_file="", checksum="", image_source="coco_url")
    for n, name in enumerate(NAMES):
        Image.objects.create(dataset=dataset, coco_id=10 + n, file_name=name, width=n or None)
    table = arrow_columns(
        Image.objects.filter(dataset=dataset).order_by("-coco_id"),
        {"coco": ("coco_id", pa.int32()), "name": ("file_name", pa.string())},
    )
    assert table.schema.field("coco").type == pa.int32()
    assert sorted(
        zip(table.column("coco").to_pylist(), table.column("name").to_pylist(), strict=True)
    ) == [(10 + n, name) for n, name in enumerate(NAMES)]
    event = Event.objects.create(action="x", data={"a": [1, 'x,\n"y"'], "b": None})
    config = arrow_columns(Event.objects.filter(pk=event.pk), {"data": ("data", pa.string())})
    assert json.loads(config.column("data")[0].as_py()) == event.data
    # One column, one NULL: an empty line of the CSV, still a row.
    alone = arrow_rows(Image.objects.filter(dataset=dataset), {"width": ("width", pa.int32())})
    assert alone.num_rows == len(NAMES) and alone.column("width").null_count == 1
    with pytest.raises(ValueError, match="a NULL in column 'width'"):
        arrow_columns(Image.objects.filter(dataset=dataset), {"width": ("width", pa.int32())})
    with pytest.raises(TypeError, match="column 'f' has type double"):
        arrow_columns(Image.objects.filter(dataset=dataset), {"f": ("width", pa.float64())})

"""`int_arrays`: every row once, read in chunks; a query that matches nothing gives empty arrays
of the asked types (Django raises EmptyResultSet instead of writing SQL for `.none()` and an
empty `IN`); a NULL is an error naming its column."""

import numpy as np
import pytest

from annotation.models import Image
from annotation.selectors.int_arrays import int_arrays

pytestmark = pytest.mark.django_db

COLUMNS = {"id": ("pk", np.int64), "coco": ("coco_id", np.int32)}


@pytest.mark.parametrize("empty", ["none", "empty_in"])
def test_a_query_that_matches_nothing_gives_empty_arrays(dataset, empty):
    images = Image.objects.filter(dataset=dataset)
    assert images.exists()
    queryset = images.none() if empty == "none" else images.filter(pk__in=[])
    arrays = int_arrays(queryset, COLUMNS)
    assert {name: (a.dtype, a.size) for name, a in arrays.items()} == {
        "id": (np.dtype(np.int64), 0),
        "coco": (np.dtype(np.int32), 0),
    }


def test_the_same_columns_read_every_row(dataset):
    arrays = int_arrays(Image.objects.filter(dataset=dataset), COLUMNS)
    expected = sorted(Image.objects.filter(dataset=dataset).values_list("pk", "coco_id"))
    order = np.argsort(arrays["id"])
    assert (
        list(zip(arrays["id"][order].tolist(), arrays["coco"][order].tolist(), strict=True))
        == expected
    )


def test_rows_read_in_many_chunks_are_every_row_once(dataset, monkeypatch):
    from annotation.selectors import int_arrays as module

    monkeypatch.setattr(module, "CHUNK_ROWS", 2)  # chunks of ids: many messages
    images = Image.objects.filter(dataset=dataset)
    assert images.count() > 4
    arrays = int_arrays(images, COLUMNS)
    assert sorted(arrays["id"].tolist()) == sorted(images.values_list("pk", flat=True))


def test_a_null_value_is_an_error_naming_its_column(dataset):
    from django.db.models.functions import NullIf

    columns = {"id": ("pk", np.int64), "gone": (NullIf("coco_id", "coco_id"), np.int32)}
    with pytest.raises(ValueError, match="'gone'"):
        int_arrays(Image.objects.filter(dataset=dataset), columns)


def test_the_planners_setting_is_as_before(dataset):
    from django.db import connection

    int_arrays(Image.objects.filter(dataset=dataset), COLUMNS)
    with connection.cursor() as cursor:
        cursor.execute("SHOW enable_sort")
        assert cursor.fetchone()[0] == "on"


def test_ids_are_read_in_four_bytes_until_one_is_too_large_for_them(dataset):
    from annotation.models import Installation
    from annotation.selectors.int_arrays import id_dtype

    assert id_dtype(Image) == np.dtype(np.int32)
    first = Image.objects.filter(dataset=dataset).first()
    Installation.objects.create(pk=2**31, key="big-id-test")  # a row id past 4 bytes
    assert id_dtype(Installation) == id_dtype(Image, Installation) == np.dtype(np.int64)
    assert id_dtype(Image) == np.dtype(np.int32)
    # An id column read in 4 bytes holds the same ids.
    arrays = int_arrays(Image.objects.filter(pk=first.pk), {"id": ("pk", id_dtype(Image))})
    assert arrays["id"].dtype == np.int32 and arrays["id"].tolist() == [first.pk]


TEXTS = {"name": "file_name"}


def test_texts_come_with_their_rows_whatever_their_bytes(dataset, monkeypatch):
    from annotation.selectors import int_arrays as module
    from annotation.selectors.int_arrays import int_and_text_arrays

    monkeypatch.setattr(module, "CHUNK_ROWS", 2)  # texts joined per chunk: many chunks
    images = Image.objects.filter(dataset=dataset).order_by("pk")
    odd = ["", 'quote " and, comma', "line\nbreak", "über 東京 🙂", "tab\tend\\"]
    for image, name in zip(images, odd, strict=False):
        image.file_name = name
        image.save(update_fields=["file_name"])
    ints, texts = int_and_text_arrays(images, COLUMNS, TEXTS)
    read = sorted(
        zip(ints["id"].tolist(), ints["coco"].tolist(), texts["name"].to_pylist(), strict=True)
    )
    assert read == sorted(images.values_list("pk", "coco_id", "file_name"))
    assert set(odd) <= {name for _, _, name in read}


def test_texts_of_a_query_that_matches_nothing_are_empty(dataset):
    from annotation.selectors.int_arrays import int_and_text_arrays

    ints, texts = int_and_text_arrays(Image.objects.none(), COLUMNS, TEXTS)
    assert ints["id"].size == 0 and len(texts["name"]) == 0
    assert str(texts["name"].type) == "string"


def test_a_null_text_is_an_error_naming_its_column(dataset):
    from django.db.models.functions import NullIf

    from annotation.selectors.int_arrays import int_and_text_arrays

    with pytest.raises(ValueError, match="'gone'"):
        int_and_text_arrays(
            Image.objects.filter(dataset=dataset),
            COLUMNS,
            {"gone": NullIf("file_name", "file_name")},
        )

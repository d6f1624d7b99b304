"""`int_arrays` on a query that matches nothing: empty arrays of the asked types (Django
raises EmptyResultSet instead of writing SQL for `.none()` and an empty `IN`)."""

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

"""A set of ids bound as one parameter: past PostgreSQL's 65,535 bound parameters, where
`pk__in=[...]` fails on the server-side binding the app uses."""

import pytest
from django.db import OperationalError

from annotation.models import Image
from annotation.selectors.id_sets import ids_in

pytestmark = pytest.mark.django_db


def test_seventy_thousand_ids_filter_as_one_parameter(dataset):
    real = list(dataset.images.values_list("pk", flat=True))
    ids = [*range(10**9, 10**9 + 70_000), *real]  # mostly ids that do not exist
    assert sorted(Image.objects.filter(ids_in("pk", ids)).values_list("pk", flat=True)) == sorted(
        real
    )
    assert not Image.objects.filter(ids_in("pk", [])).exists()
    with pytest.raises(OperationalError, match="65535"):  # what it replaces
        list(Image.objects.filter(pk__in=ids))

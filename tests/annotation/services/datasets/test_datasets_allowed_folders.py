"""Issue 25's audit: a local image folder outside the allowed folders is refused at import."""

import pytest

from annotation.models import Dataset
from annotation.services.datasets.datasets import dataset_import
from pipeline.errors import InputError
from tests.factories import placeholder_images, write_coco

pytestmark = pytest.mark.django_db


# A local_dir dataset reads images only from CROWDVL_IMPORT_DIR or CROWDVL_IMAGE_DIRS.


def test_a_local_folder_outside_the_allowed_folders_is_refused_at_import(
    tmp_path, tmp_path_factory
):
    outside = placeholder_images(tmp_path_factory.mktemp("outside"))
    (tmp_path / "link").symlink_to(outside, target_is_directory=True)
    path = write_coco(tmp_path / "x.json")
    for location in ("/", str(tmp_path / ".." / outside.name), str(tmp_path / "link")):
        with pytest.raises(InputError, match="CROWDVL_IMPORT_DIR") as err:
            dataset_import(path=path, image_source="local_dir", image_location=location)
        assert err.value.field == "image_location"
    assert Dataset.objects.count() == 0

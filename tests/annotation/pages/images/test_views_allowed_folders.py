"""Issue 25's audit: an image outside the allowed folders is a 404 and never read."""

import pytest

from annotation.services.datasets.images import cache_path
from tests.factories import dataset_factory, placeholder_images

pytestmark = pytest.mark.django_db


def test_an_image_outside_the_allowed_folders_is_a_404_and_never_read(
    admin_client, settings, tmp_path, tmp_path_factory
):
    images = placeholder_images(tmp_path / "images")
    dataset = dataset_factory(tmp_path, image_dir=images)
    first, second = dataset.images.order_by("pk")[:2]
    assert admin_client.get(f"/staff/images/{first.pk}/").status_code == 200
    # A file of the folder that is a link to a picture elsewhere on the server.
    outside = placeholder_images(tmp_path_factory.mktemp("outside"))
    (images / second.file_name).unlink()
    (images / second.file_name).symlink_to(outside / second.file_name)
    assert admin_client.get(f"/staff/images/{second.pk}/").status_code == 404
    assert not cache_path(second).exists()
    # A dataset imported before the check (or a folder no longer allowed): nothing served.
    cache_path(first).unlink()
    settings.CROWDVL_IMAGE_DIRS = []
    assert admin_client.get(f"/staff/images/{first.pk}/").status_code == 404
    assert not cache_path(first).exists()
    settings.CROWDVL_IMAGE_DIRS = [images]
    assert admin_client.get(f"/staff/images/{first.pk}/").status_code == 200

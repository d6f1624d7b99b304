"""Issue 25's audit findings, one section each: what an attacker tried, and what they get now."""

import pytest

from annotation.models import Dataset
from annotation.services.datasets.datasets import dataset_import
from annotation.services.datasets.images import cache_path
from pipeline.errors import InputError
from tests.factories import dataset_factory, placeholder_images, write_coco

pytestmark = pytest.mark.django_db


# 1. A local_dir dataset reads images only from CROWDVL_IMPORT_DIR or CROWDVL_IMAGE_DIRS.


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


# 2. NUL bytes or invalid UTF-8 in a URL: 404 before any view (PostgreSQL refuses NUL in text).


@pytest.mark.parametrize(
    "url",
    [
        "/join/a\x00b/",
        "/img/a\x00b",
        "/work/?next=a%00b",
        "/work/?next=%ff%fe",
        "/staff/images/1/?x=%00",
        "/api/runs/?dataset=1%00",
        "/api/runs/a\x00b/",
    ],
)
def test_nul_and_invalid_utf8_in_a_url_are_404s(admin_client, client, url):
    for each in (client, admin_client):
        response = each.get(url)
        assert response.status_code == 404
        if url.startswith("/api/"):
            assert response.json()["error"]


# 3. Every API error is JSON with `error`: too large (413) and malformed (400) bodies.


def test_a_too_large_or_malformed_api_body_is_a_json_error(admin_client):
    big = b'{"dataset": "' + b"x" * (30 * 1024 * 1024) + b'"}'
    response = admin_client.post("/api/runs/", big, content_type="application/json")
    assert response.status_code == 413 and "error" in response.json()
    form = b"dataset=" + b"x" * (30 * 1024 * 1024)
    response = admin_client.post(
        "/api/runs/", form, content_type="application/x-www-form-urlencoded"
    )
    assert response.status_code == 413 and "error" in response.json()
    for body in (b'{"dataset": ', b"\xff\xfe", b"[" * 100_000):
        response = admin_client.post("/api/runs/", body, content_type="application/json")
        assert response.status_code == 400 and response.json()["error"]


# 4. CSV files for people to open: a cell a spreadsheet would run as a formula starts with '.

FORMULA = '=HYPERLINK("http://x","y")'


def test_csv_cells_that_a_spreadsheet_would_run_are_neutralised(admin_client, paired_run, capsys):
    import csv

    from django.core.management import call_command

    from annotation.crowd.local.invitations import invitations_create

    invitations_create(run=paired_run, labels=[FORMULA, "@SUM(A1)", "ann"])
    body = admin_client.get(f"/runs/{paired_run.pk}/invitations.csv").content.decode()
    labels = [row[0] for row in csv.reader(body.splitlines())][1:]
    assert labels == ["'" + FORMULA, "'@SUM(A1)", "ann"]
    call_command("invite_workers", str(paired_run.pk), "+1 dora")
    out = list(csv.reader(capsys.readouterr().out.splitlines()))
    assert out[1][0] == "'+1 dora"
    from annotation.spreadsheet import spreadsheet_cell

    for text in ("=1+1", "+1", "-1", "@a", "\tx", "\rx"):
        assert spreadsheet_cell(text) == "'" + text
    assert spreadsheet_cell("a=1") == "a=1" and spreadsheet_cell("") == ""

"""Data mistakes caught before workers see them (issue 27): a local folder import needs a folder
that holds the images (the count is shown), a re-import naming another image source says so
and changes it only when asked, and a batch whose images cannot be shown is not published from
the console, the API or the command line."""

import pytest
from django.core.management import CommandError, call_command

from annotation.flows.bison.vocabulary import BisonItemKind, BisonStage
from annotation.models import Batch, Dataset, Run, RunStatus
from annotation.services.datasets.datasets import dataset_import
from annotation.services.runs.batches import batch_create, batch_publish
from annotation.services.runs.projects import project_default
from pipeline.errors import InputError
from tests.factories import coco_document, placeholder_images, write_coco

pytestmark = pytest.mark.django_db


@pytest.fixture
def coco(tmp_path):
    return write_coco(tmp_path / "six.json", coco_document(6))


def test_a_local_folder_import_needs_a_folder_holding_the_images(tmp_path, coco):
    with pytest.raises(InputError) as caught:
        dataset_import(path=coco, image_source="local_dir", image_location="")
    assert caught.value.field == "image_location" and "needs the folder" in str(caught.value)
    empty = tmp_path / "empty"
    empty.mkdir()
    with pytest.raises(InputError, match="holds none of the file's 6 images"):
        dataset_import(path=coco, image_source="local_dir", image_location=str(empty))
    assert not Dataset.objects.exists()
    some = placeholder_images(tmp_path / "some", ids=range(100, 104))  # 4 of the 6
    result = dataset_import(path=coco, image_source="local_dir", image_location=str(some))
    assert result.image_files == 4
    assert any("2 of 6 image files are not in the image folder" in w for w in result.warnings)


def test_a_reimport_naming_another_source_says_so_and_changes_it_only_when_asked(tmp_path, coco):
    first = dataset_import(path=coco, image_source="coco_url").dataset
    folder = placeholder_images(tmp_path / "imgs", ids=range(100, 106))
    with pytest.raises(InputError) as caught:
        dataset_import(path=coco, image_source="local_dir", image_location=str(folder))
    assert caught.value.field == "image_source" and "update-image-source" in str(caught.value)
    assert Dataset.objects.get(pk=first.pk).image_source == "coco_url"  # unchanged
    result = dataset_import(
        path=coco, image_source="local_dir", image_location=str(folder), update_image_source=True
    )
    assert result.source_changed and not result.created and result.image_files == 6
    assert Dataset.objects.get(pk=first.pk).image_source == "local_dir"
    # Once workers have seen its images, the source stays.
    run = Run.objects.create(
        dataset=first, kind="bison", status=RunStatus.PREPARED, project=project_default()
    )
    Batch.objects.create(run=run, stage=BisonStage.SELECTION, provider="local", status="published")
    with pytest.raises(InputError, match="has published batches"):
        dataset_import(path=coco, image_source="coco_url", update_image_source=True)


def test_the_import_command_names_the_count_and_takes_the_change(tmp_path, coco, capsys):
    folder = placeholder_images(tmp_path / "imgs", ids=range(100, 106))
    call_command("import_coco", str(coco), "--image-source", "coco_url")
    with pytest.raises(CommandError, match="exists with images from"):
        call_command(
            "import_coco", str(coco), "--image-source", "local_dir", "--image-location", str(folder)
        )
    call_command(
        "import_coco",
        str(coco),
        "--image-source",
        "local_dir",
        "--image-location",
        str(folder),
        "--update-image-source",
    )
    assert "its image source changed: 6 images, 30 captions, 6 image files found" in (
        capsys.readouterr().out
    )


def test_a_batch_with_missing_image_files_is_not_published(
    tmp_path, paired_run, admin_client, image_dir
):
    for file in image_dir.iterdir():
        file.unlink()  # the folder emptied after the import
    with pytest.raises(CommandError, match="workers would see grey boxes"):
        call_command("create_batch", str(paired_run.pk), "--stage", "selection")
    batch = Batch.objects.get(run=paired_run)  # left a draft, as with --no-publish
    response = admin_client.post(f"/api/batches/{batch.pk}/publish/")
    assert response.status_code == 409 and "not in dataset" in response.json()["error"], (
        response.content
    )
    assert not Batch.objects.filter(run=paired_run, status="published").exists()
    # The simulated crowd looks at no image: its batches publish.
    batch.delete()
    simulated = batch_create(run=paired_run, stage=BisonStage.SELECTION, provider="simulated")
    assert batch_publish(batch=simulated).status == "published"


def test_a_batch_whose_remote_images_were_not_fetched_is_not_published(tmp_path, admin_client):
    from tests.factories import dataset_factory

    dataset = dataset_factory(tmp_path, document=coco_document(2), name="remote")
    run = Run.objects.create(
        dataset=dataset, kind="bison", status=RunStatus.PREPARED, project=project_default()
    )
    a, b = dataset.images.order_by("pk")
    from annotation.models import Item

    Item.objects.create(run=run, kind=BisonItemKind.IMAGE_PAIR, positive=a, negative=b)
    batch = batch_create(run=run, stage=BisonStage.SELECTION, provider="local")  # job queued
    response = admin_client.post(f"/api/batches/{batch.pk}/publish/")
    assert response.status_code == 409 and "still being fetched" in response.json()["error"]


def test_the_datasets_page_says_where_images_come_from_without_server_paths(
    tmp_path, coco, admin_client
):
    folder = placeholder_images(tmp_path / "imgs", ids=range(100, 106))
    dataset_import(path=coco, image_source="local_dir", image_location=str(folder))
    page = admin_client.get("/datasets/").content.decode()
    assert "Local folder served by this app: <code>" in page and "imgs</code>" in page
    assert str(tmp_path) not in page

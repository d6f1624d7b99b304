import json
import re
from pathlib import Path

import pytest
from django.core.management import CommandError, call_command

from annotation.models import Caption, Dataset, Image, Job, JobState
from annotation.services.datasets.datasets import dataset_import
from pipeline.errors import InputError
from tests.annotation.pages.work.test_shell_browser import browser  # noqa: F401  (fixture)
from tests.annotation.services.jobs.test_jobs_celery_worker import worker  # noqa: F401  (fixture)
from tests.factories import coco_document, write_coco

pytestmark = pytest.mark.django_db


def test_import_real_sample_and_reimport_changes_nothing(sample_path):
    first = dataset_import(path=sample_path)
    assert first.created and (first.images, first.captions) == (462, 2312)
    caption = Caption.objects.get(coco_id=324)
    assert caption.text == "A tray of black and white sprinkled doughnuts "  # kept as-is
    assert caption.image.coco_id == 183786
    again = dataset_import(path=sample_path)
    assert not again.created and again.dataset.pk == first.dataset.pk
    assert Image.objects.count() == 462 and Caption.objects.count() == 2312


def test_same_name_from_a_different_file_is_refused(tmp_path):
    write_coco(tmp_path / "a" / "toy.json")
    dataset_import(path=tmp_path / "a" / "toy.json")
    doc = coco_document()
    doc["annotations"][0]["caption"] = "changed"
    write_coco(tmp_path / "b" / "toy.json", doc)
    with pytest.raises(InputError, match="different file"):
        dataset_import(path=tmp_path / "b" / "toy.json")


@pytest.mark.parametrize(
    ("mutate", "field", "record"),
    [
        (lambda d: d.pop("annotations"), "annotations", None),
        (lambda d: d.pop("images"), "images", None),
        (
            lambda d: d["annotations"].append({"id": 5, "image_id": 4242, "caption": "x"}),
            "image_id",
            5,
        ),
        (lambda d: d["images"].append(dict(d["images"][0])), "id", 100),
        (lambda d: d["annotations"].append(dict(d["annotations"][0])), "id", 1000),
        (lambda d: d["annotations"][3].update(caption="   "), "caption", 1003),
    ],
    ids=[
        "no-annotations",
        "no-images",
        "unknown-image",
        "dup-image",
        "dup-caption",
        "empty-caption",
    ],
)
def test_bad_files_name_file_record_field_and_write_nothing(tmp_path, mutate, field, record):
    doc = coco_document()
    mutate(doc)
    path = write_coco(tmp_path / "bad.json", doc)
    with pytest.raises(InputError) as err:
        dataset_import(path=path)
    assert err.value.file == str(path)
    assert err.value.field == field
    if record is not None:
        assert str(record) in str(err.value.record)
    assert (
        Dataset.objects.count() == 0 and Image.objects.count() == 0 and Caption.objects.count() == 0
    )


def test_malformed_json_names_the_position(tmp_path):
    path = tmp_path / "broken.json"
    path.write_text('{"images": [,]}')
    with pytest.raises(InputError, match="line 1") as err:
        dataset_import(path=path)
    assert err.value.file == str(path)
    assert Dataset.objects.count() == 0


def test_images_without_captions_are_skipped_with_a_warning(tmp_path):
    path = write_coco(tmp_path / "x.json", coco_document(extra_images=2))
    result = dataset_import(path=path)
    assert result.images == 6 and sorted(result.skipped_images) == [900, 901]
    assert len(result.warnings) == 2
    assert not Image.objects.filter(coco_id__in=[900, 901]).exists()


def test_local_folder_must_exist(tmp_path):
    path = write_coco(tmp_path / "x.json")
    with pytest.raises(InputError, match="does not exist") as err:
        dataset_import(path=path, image_source="local_dir", image_location=str(tmp_path / "nope"))
    assert err.value.field == "image_location"
    assert Dataset.objects.count() == 0


def test_command_and_api(tmp_path, admin_client, capsys):
    path = write_coco(tmp_path / "cmd.json")
    call_command(
        "import_coco",
        str(path),
        "--image-source",
        "url_prefix",
        "--image-location",
        "https://img.example/",
    )
    assert "6 images, 30 captions" in capsys.readouterr().out
    with pytest.raises(CommandError, match="field 'image_id'"):
        doc = coco_document()
        doc["annotations"][0]["image_id"] = 1
        call_command("import_coco", str(write_coco(tmp_path / "bad.json", doc)))


def _upload(admin_client, path, **options):
    with open(path, "rb") as fh:
        return admin_client.post("/api/datasets/import/", {"file": fh, **options})


def test_api_upload_is_stored_then_imported_by_a_job(
    tmp_path, admin_client, settings, run_on_commit
):
    path = write_coco(tmp_path / "api.json")
    response = run_on_commit(_upload, admin_client, path)
    assert response.status_code == 202, response.content
    job = Job.objects.get(pk=response.json()["id"])
    assert job.state == JobState.SUCCEEDED and job.progress == 100.0
    assert job.result["images"] == 6 and job.result["captions"] == 30
    stored = Path(job.params["path"])
    assert stored.is_relative_to(settings.MEDIA_ROOT)
    assert not stored.exists() and not stored.parent.exists()  # deleted once imported
    dataset = Dataset.objects.get(name="api")
    assert (dataset.images.count(), dataset.captions.count()) == (6, 30)
    polled = admin_client.get(response.json()["url"]).json()
    assert polled["state"] == "succeeded" and polled["result"]["dataset"] == dataset.pk

    again = run_on_commit(_upload, admin_client, path)
    assert Job.objects.get(pk=again.json()["id"]).result["created"] is False
    assert Image.objects.count() == 6


def test_api_bad_upload_fails_the_job_naming_the_field(tmp_path, admin_client, run_on_commit):
    doc = coco_document()
    doc["annotations"][4]["caption"] = "PLACEHOLDER"
    bad = tmp_path / "bad.json"
    bad.write_text(json.dumps(doc).replace("PLACEHOLDER", "a\\u0000b"))
    response = run_on_commit(_upload, admin_client, bad)
    assert response.status_code == 202
    job = Job.objects.get(pk=response.json()["id"])
    assert job.state == JobState.FAILED and "NUL" in job.error
    assert job.result["field"] == "caption" and job.result["record"] == 1004
    assert _nothing_written()
    assert not Path(job.params["path"]).exists()  # a failed import deletes its upload too


def test_api_path_import_and_option_errors(tmp_path, admin_client, run_on_commit, settings):
    settings.CROWDVL_IMPORT_DIR = tmp_path
    write_coco(tmp_path / "server.json")
    response = run_on_commit(
        admin_client.post,
        "/api/datasets/import/",
        {"path": "server.json", "image_source": "url_prefix", "image_location": "https://img/"},
        content_type="application/json",
    )
    assert response.status_code == 202
    assert Job.objects.get(pk=response.json()["id"]).state == JobState.SUCCEEDED
    missing = admin_client.post(
        "/api/datasets/import/",
        {"path": str(tmp_path / "nope.json")},
        content_type="application/json",
    )
    assert missing.status_code == 400 and missing.json()["field"] == "path"
    neither = admin_client.post("/api/datasets/import/", {}, content_type="application/json")
    assert neither.status_code == 400


def test_api_path_imports_only_from_the_import_folder(tmp_path, admin_client, settings):
    folder = tmp_path / "import"
    folder.mkdir()
    settings.CROWDVL_IMPORT_DIR = folder
    outside = write_coco(tmp_path / "outside.json")
    (folder / "link.json").symlink_to(outside)
    for path in (str(outside), "../outside.json", "link.json", "/etc/passwd"):
        response = admin_client.post(
            "/api/datasets/import/", {"path": path}, content_type="application/json"
        )
        assert response.status_code == 400, path
        assert response.json()["field"] == "path" and "CROWDVL_IMPORT_DIR" in str(response.json())
    assert not Job.objects.exists()


def test_api_requires_admin(client, tmp_path):
    response = client.post("/api/datasets/import/", {"path": "x"}, content_type="application/json")
    assert response.status_code in (401, 403)


def _nothing_written() -> bool:
    return not (Dataset.objects.exists() or Image.objects.exists() or Caption.objects.exists())


@pytest.mark.parametrize(("column", "limit"), [("file_name", 300), ("coco_url", 500)])
def test_over_long_image_text_is_refused_before_writing(tmp_path, column, limit):
    doc = coco_document()
    doc["images"][2][column] = "x" * (limit + 1)
    path = write_coco(tmp_path / "long.json", doc)
    with pytest.raises(InputError, match=f"longer than {limit}") as err:
        dataset_import(path=path)
    assert (err.value.file, err.value.record, err.value.field) == (str(path), 102, column)
    assert _nothing_written()


@pytest.mark.parametrize(
    ("options", "field"),
    [
        ({"name": "n" * 201}, "name"),
        ({"name": "a\x00b"}, "name"),
        ({"image_source": "url_prefix", "image_location": "/" + "p" * 500}, "image_location"),
    ],
    ids=["long-name", "nul-name", "long-location"],
)
def test_bad_options_are_refused_before_writing(tmp_path, options, field):
    path = write_coco(tmp_path / "x.json")
    with pytest.raises(InputError) as err:
        dataset_import(path=path, **options)
    assert err.value.field == field and err.value.file == str(path)
    assert _nothing_written()


def test_bad_value_late_in_the_file_writes_nothing(tmp_path):
    doc = coco_document()
    doc["annotations"][-1]["id"] = 2**63
    path = write_coco(tmp_path / "late.json", doc)
    with pytest.raises(InputError, match="64-bit") as err:
        dataset_import(path=path)
    assert err.value.field == "id"
    assert _nothing_written()


def test_counts_are_rows_in_the_database_and_progress_is_reported(tmp_path):
    reports = []
    path = write_coco(tmp_path / "x.json", coco_document(extra_images=1))
    result = dataset_import(path=path, progress=lambda p, m: reports.append((p, m)))
    assert (
        (result.images, result.captions)
        == (
            Image.objects.filter(dataset=result.dataset).count(),
            Caption.objects.filter(dataset=result.dataset).count(),
        )
        == (6, 30)
    )
    percents = [p for p, _ in reports]
    assert percents == sorted(percents) and percents[0] == 0.0 and len(percents) >= 3


def test_batched_insert_path_writes_the_same_rows_as_copy(tmp_path):
    # The batched-INSERT writer is what SQLite uses; run it here so both writers are checked.
    from annotation.services.datasets import dataset_rows
    from pipeline.coco import load_coco_captions

    path = write_coco(tmp_path / "x.json")
    copied = dataset_import(path=path, name="copied")
    parsed = load_coco_captions(path)
    inserted = Dataset.objects.create(name="inserted", checksum="x", image_source="coco_url")
    rows = dataset_rows._insert(
        Image,
        ["dataset", "coco_id", "file_name", "coco_url", "width", "height"],
        ((inserted.pk, im.id, im.file_name, im.coco_url or "", im.width, im.height)
         for im in parsed.images),
    )  # fmt: skip
    assert rows == copied.images == 6

    def rows_of(dataset):
        return sorted(dataset.images.values_list("coco_id", "file_name", "coco_url", "width"))

    assert rows_of(inserted) == rows_of(copied.dataset)


def test_a_file_read_in_two_passes_writes_what_one_pass_writes(sample_path, monkeypatch):
    """Files above ONE_PASS_BYTES are validated first and streamed again into COPY."""
    from annotation.services.datasets import datasets

    def rows(result):
        return sorted(
            Caption.objects.filter(dataset=result.dataset).values_list(
                "coco_id", "image__coco_id", "text"
            )
        )

    once = dataset_import(path=sample_path, name="once")
    monkeypatch.setattr(datasets, "ONE_PASS_BYTES", 0)
    calls = []
    real = datasets.iter_coco_captions
    monkeypatch.setattr(
        datasets, "iter_coco_captions", lambda *a, **k: calls.append(a) or real(*a, **k)
    )
    twice = dataset_import(path=sample_path, name="twice")
    assert len(calls) == 1 and (twice.images, twice.captions) == (once.images, once.captions)
    assert rows(twice) == rows(once) and len(rows(once)) == 2312


@pytest.mark.celery_worker
@pytest.mark.django_db(transaction=True)
def test_import_job_runs_on_a_real_worker(worker, tmp_path):  # noqa: F811
    import time

    from annotation.services.datasets.dataset_jobs import dataset_import_start

    path = write_coco(tmp_path / "worker.json", coco_document(extra_images=1))
    job = dataset_import_start(path=path)  # autocommit: the task is sent now
    deadline = time.monotonic() + 60
    while time.monotonic() < deadline:
        job.refresh_from_db()
        if job.state in (JobState.SUCCEEDED, JobState.FAILED):
            break
        time.sleep(0.2)
    assert job.state == JobState.SUCCEEDED, (job.error, worker[1].read_text())
    assert job.result["images"] == Image.objects.filter(dataset__name="worker").count() == 6
    assert job.result["skipped_images"] == [900]


def test_import_page_is_for_staff_only(client, tmp_path):
    response = client.get("/datasets/import/")
    assert response.status_code == 302 and "login" in response["Location"]


def test_import_page_refuses_bad_options_before_starting_a_job(admin_client, tmp_path):
    path = write_coco(tmp_path / "x.json")
    with open(path, "rb") as fh:
        response = admin_client.post(
            "/datasets/import/", {"file": fh, "image_source": "local_dir", "image_location": ""}
        )
    # local_dir needs a folder that exists: refused next to it, before any job or upload.
    assert response.status_code == 400 and "image_location" in response.context["form"].errors
    with open(path, "rb") as fh:
        response = admin_client.post(
            "/datasets/import/", {"file": fh, "image_source": "nope", "name": "n" * 300}
        )
    assert response.status_code == 400 and not Job.objects.exists()


def test_import_page_quotes_the_folder_typed_and_keeps_it_filled(admin_client, tmp_path, settings):
    """A folder that is not there is refused next to its field in the words typed (a server
    path, hidden elsewhere, is the user's own here), the form still filled, nothing kept."""
    import html

    path = write_coco(tmp_path / "x.json")
    typed = "/srv/photos/val2014"
    with open(path, "rb") as fh:
        response = admin_client.post(
            "/datasets/import/",
            {"file": fh, "name": "mine", "image_source": "local_dir", "image_location": typed},
        )
    page = html.unescape(response.content.decode())
    assert response.status_code == 400
    assert f"local image folder '{typed}' does not exist" in page
    assert response.context["form"].errors["image_location"]
    assert f'value="{typed}"' in page and 'value="mine"' in page
    assert not Job.objects.exists()
    assert not (Path(settings.MEDIA_ROOT) / "imports").exists()  # the upload was not kept


def test_import_job_page_quotes_the_folder_typed_and_offers_to_try_again(
    admin_client, tmp_path, django_capture_on_commit_callbacks
):
    """A folder found only when the file is read (none of its images there) fails the job: its
    page quotes the folder as typed and links the import form filled in again."""
    import html

    empty = tmp_path / "no-images-here"
    empty.mkdir()
    path = write_coco(tmp_path / "y.json")
    with open(path, "rb") as fh, django_capture_on_commit_callbacks(execute=True):
        response = admin_client.post(
            "/datasets/import/",
            {"file": fh, "image_source": "local_dir", "image_location": str(empty)},
        )
    job = Job.objects.get()
    assert response.status_code == 302 and job.state == JobState.FAILED
    page = html.unescape(admin_client.get(response["Location"]).content.decode())
    assert f"local image folder '{empty}' holds none" in page
    again = re.search(r'href="([^"]+)" id="import-again"', page).group(1)
    form = admin_client.get(again).context["form"]
    assert form["image_location"].value() == str(empty)
    assert form["image_source"].value() == "local_dir" and form["name"].value() == "y"


@pytest.mark.browser
@pytest.mark.django_db(transaction=True)
def test_import_page_uploads_and_follows_the_job_in_the_browser(
    browser,  # noqa: F811
    live_server,
    tmp_path,
    django_user_model,
):
    from django.conf import settings as django_settings
    from django.test import Client

    admin = django_user_model.objects.create_superuser("boss", "boss@example.org", "pw")
    client = Client()
    client.force_login(admin)
    cookie = client.cookies[django_settings.SESSION_COOKIE_NAME].value
    context = browser.new_context()
    context.add_cookies(
        [{"name": django_settings.SESSION_COOKIE_NAME, "value": cookie, "url": live_server.url}]
    )
    page = context.new_page()
    try:
        good = write_coco(tmp_path / "browser.json", coco_document(extra_images=1))
        page.goto(f"{live_server.url}/datasets/import/")
        page.set_input_files("input[name=file]", str(good))
        page.click("#import")
        page.wait_for_selector("#state:text('succeeded')", timeout=30_000)
        assert "6 images, 30 captions" in page.inner_text("#message")
        assert "has no captions" in page.inner_text("#warnings")
        assert Caption.objects.filter(dataset__name="browser").count() == 30

        doc = coco_document()
        doc["annotations"][2]["id"] = 2**64
        bad = write_coco(tmp_path / "bad.json", doc)
        page.goto(f"{live_server.url}/datasets/import/")
        page.set_input_files("input[name=file]", str(bad))
        page.click("#import")
        page.wait_for_selector("#state:text('failed')", timeout=30_000)
        error = page.inner_text("#job-error")
        assert "record annotations[2]" in error and "field 'id'" in error and "64-bit" in error
        assert not Dataset.objects.filter(name="bad").exists()
    finally:
        context.close()


@pytest.mark.parametrize(
    "host",
    ["127.0.0.1:8000", "10.0.0.7", "169.254.169.254", "[::1]", "localhost", "2130706433"],
)
def test_coco_urls_on_non_public_hosts_are_refused_naming_the_image(tmp_path, host):
    """Issue 47: a file whose images sit on the server's own network is refused before
    anything is written, naming the first image on that host."""
    doc = coco_document()
    doc["images"][3]["coco_url"] = f"http://{host}/latest/meta-data/{3}.jpg"
    path = write_coco(tmp_path / "inner.json", doc)
    with pytest.raises(InputError, match="public hosts") as err:
        dataset_import(path=path)
    assert (err.value.file, err.value.record, err.value.field) == (str(path), 103, "coco_url")
    assert _nothing_written()


@pytest.mark.parametrize("prefix", ["http://127.0.0.1:8000/media/", "http://169.254.169.254/"])
def test_url_prefix_on_a_non_public_host_is_refused(tmp_path, prefix):
    path = write_coco(tmp_path / "x.json")
    with pytest.raises(InputError, match="public hosts") as err:
        dataset_import(path=path, image_source="url_prefix", image_location=prefix)
    assert (err.value.file, err.value.field) == (str(path), "image_location")
    assert _nothing_written()


def test_image_hosts_setting_limits_where_images_may_come_from(tmp_path, settings):
    settings.CROWDVL_IMAGE_HOSTS = ["images.cocodataset.org"]
    doc = coco_document()
    doc["images"][5]["coco_url"] = "https://evil.example/x.jpg"
    path = write_coco(tmp_path / "x.json", doc)
    with pytest.raises(InputError, match="CROWDVL_IMAGE_HOSTS") as err:
        dataset_import(path=path)
    assert (err.value.record, err.value.field) == (105, "coco_url")
    assert _nothing_written()
    with pytest.raises(InputError, match="CROWDVL_IMAGE_HOSTS") as err:
        dataset_import(
            path=write_coco(tmp_path / "y.json"),
            image_source="url_prefix",
            image_location="https://evil.example/val2014/",
        )
    assert err.value.field == "image_location"
    assert dataset_import(path=write_coco(tmp_path / "ok.json")).images == 6

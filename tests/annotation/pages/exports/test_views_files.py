"""Every file of an export version (`data/*.parquet` included) listed with its size and
downloaded from the exports page and the API; nothing outside the version reachable (`..`,
absolute paths, encoded slashes, symbolic links); the release bundle packed by a job from
the page's button or the API and downloaded, with the same permission checks."""

import hashlib
import io
import os
import tarfile
from pathlib import Path

import pytest
from django.template.defaultfilters import filesizeformat
from rest_framework.test import APIClient

from annotation.models import Job, JobState, Project, ProjectMembership, ProjectRole, Run
from annotation.selectors.release.exports import export_bundle, export_file_entries, export_folder
from annotation.services.release.release_bundle import export_bundle_write
from tests.annotation.api.test_schema import check, schema  # noqa: F401
from tests.annotation.pages.exports.test_views import exported  # noqa: F401

pytestmark = pytest.mark.django_db

PARQUET = "data/eccv_judged_pairs.parquet"


def body(response) -> bytes:
    return b"".join(response.streaming_content)


def test_every_file_listed_with_its_size_and_downloaded(exported, admin_client):  # noqa: F811
    folder = export_folder(exported)
    entries = export_file_entries(exported)
    names = [e.name for e in entries]
    assert PARQUET in names and "manifest.json" in names and "croissant.json" in names
    # Every regular file of the folder, nothing else.
    on_disk = sorted(p.relative_to(folder).as_posix() for p in folder.rglob("*") if p.is_file())
    assert sorted(names) == on_disk
    page = admin_client.get(f"/runs/{exported.run_id}/exports/").content.decode()
    for entry in entries:
        url = f"/exports/{exported.pk}/files/{entry.name}"
        [item] = [li for li in page.split("<li>") if li.startswith(f'<a href="{url}" download>')]
        assert f'<span class="size">{filesizeformat(entry.size)}</span></li>' in item
        response = admin_client.get(url)
        assert response.status_code == 200, entry.name
        assert response["Content-Disposition"].startswith("attachment")
        assert body(response) == (folder / entry.name).read_bytes() and entry.size > 0


def _plant(exported, settings) -> Path:  # noqa: F811
    """A secret outside the version, and links to it inside (file and folder links)."""
    media = Path(settings.MEDIA_ROOT)
    (media / "secret.txt").write_text("no")
    folder = export_folder(exported)
    os.symlink(media / "secret.txt", folder / "leak.txt")
    os.symlink(media / "secret.txt", folder / "data" / "leak.parquet")
    os.symlink(media, folder / "data" / "up")
    (folder / "data" / ".hidden").write_text("no")
    return folder


TRAVERSALS = [
    "..",
    "../secret.txt",
    "../../secret.txt",
    "data/../../secret.txt",
    "data/../manifest.json",  # a real file, but not by a listed name
    "./manifest.json",
    "..%2F..%2Fsecret.txt",
    "data%2F..%2F..%2Fsecret.txt",
    "%2e%2e/%2e%2e/secret.txt",
    "data%252Feccv_judged_pairs.parquet",  # double-encoded: a name with "%2F" in it
    "/etc/passwd",
    "%2Fetc%2Fpasswd",
    "leak.txt",
    "data/leak.parquet",
    "data/up/secret.txt",
    "data/.hidden",
    "data",
    "data/",
]


def test_nothing_outside_the_version_from_the_page_or_the_api(exported, admin_client, settings):  # noqa: F811
    folder = _plant(exported, settings)
    names = [e.name for e in export_file_entries(exported)]
    assert not {"leak.txt", "data/leak.parquet", "data/up/secret.txt", "data/.hidden"} & set(names)
    api = APIClient()
    api.force_authenticate(_staff())
    for name in [*TRAVERSALS, str(folder / "manifest.json")]:
        for url in (f"/exports/{exported.pk}/files/{name}", f"/api/exports/{exported.pk}/files/{name}"):  # fmt: skip
            client = api if url.startswith("/api/") else admin_client
            response = client.get(url)
            assert response.status_code == 404, (url, response.status_code)
    # The bundle packs only the listed files too.
    path, _ = export_bundle_write(export=exported)
    with tarfile.open(path) as tar:
        packed = {m.name.split("/", 1)[1] for m in tar.getmembers()}
    assert packed == {*names, "SHA256SUMS"}


def _staff():
    from django.contrib.auth import get_user_model

    return get_user_model().objects.create_user("staff-api", password="pw", is_staff=True)


def _members(exported, django_user_model):  # noqa: F811
    project = Project.objects.create(name="P")
    Run.objects.filter(pk=exported.run_id).update(project=project)
    users = {}
    for name, role in (
        ("res", ProjectRole.RESEARCHER),
        ("view", ProjectRole.VIEWER),
        ("out", None),
    ):
        users[name] = django_user_model.objects.create_user(name, password="pw")
        if role:
            ProjectMembership.objects.create(project=project, user=users[name], role=role)
    return users


def test_bundle_from_the_page_with_the_same_permissions(
    exported,  # noqa: F811
    client,
    django_user_model,
    django_capture_on_commit_callbacks,
):
    users = _members(exported, django_user_model)
    new, download = f"/exports/{exported.pk}/bundle/new/", f"/exports/{exported.pk}/bundle/"
    client.force_login(users["res"])
    assert client.get(download).status_code == 404  # not packed yet
    page = client.get(f"/runs/{exported.run_id}/exports/").content.decode()
    assert f'id="bundle-new-{exported.pk}">Release bundle (.tar.gz)</button>' in page
    with django_capture_on_commit_callbacks(execute=True):
        response = client.post(new, follow=True)
    assert f"Bundle job {Job.objects.get(name='exports.bundle').pk} started" in (
        response.content.decode()
    )
    job = Job.objects.get(name="exports.bundle")
    assert job.state == JobState.SUCCEEDED, job.error
    bundle = export_bundle(exported)
    assert bundle is not None and job.result == {
        "export": exported.pk,
        "bundle": "eccv-v1.tar.gz",
        "sha256": bundle.sha256,
    }
    page = client.get(f"/runs/{exported.run_id}/exports/").content.decode()
    assert f'href="{download}" download id="bundle-link-{exported.pk}">eccv-v1.tar.gz</a>' in page
    assert bundle.sha256 in page and f"bundle-new-{exported.pk}" not in page
    data = body(client.get(download))
    assert hashlib.sha256(data).hexdigest() == bundle.sha256
    _check_bundle(data, exported)
    for name, page_status, download_status, new_status in (
        ("view", 200, 403, 403),
        ("out", 404, 404, 404),  # not a member: the run is hidden
    ):
        client.force_login(users[name])
        page = client.get(f"/runs/{exported.run_id}/exports/")
        assert page.status_code == page_status, name
        if page_status == 200:
            text = page.content.decode()
            assert "bundle-new-" not in text and f'href="{download}"' not in text
            assert f'href="/exports/{exported.pk}/files/{PARQUET}"' not in text
        assert client.get(download).status_code == download_status, name
        assert client.get(f"/exports/{exported.pk}/files/{PARQUET}").status_code == (
            download_status
        ), name
        assert client.post(new).status_code == new_status, name
    assert Job.objects.filter(name="exports.bundle").count() == 1


def _check_bundle(data: bytes, exported) -> None:  # noqa: F811
    """Every listed file inside under the version's folder name, SHA256SUMS right, and no
    server account in the tar headers."""
    with tarfile.open(fileobj=io.BytesIO(data)) as tar:
        members = {m.name: m for m in tar.getmembers()}
        files = {n: tar.extractfile(m).read() for n, m in members.items()}
    folder = export_folder(exported)
    assert set(files) == {
        *(f"{folder.name}/{e.name}" for e in export_file_entries(exported)),
        f"{folder.name}/SHA256SUMS",
    }
    sums = dict(
        reversed(line.split("  ", 1))
        for line in files[f"{folder.name}/SHA256SUMS"].decode().splitlines()
    )
    assert PARQUET in sums and len(sums) == len(files) - 1
    for name, digest in sums.items():
        assert hashlib.sha256(files[f"{folder.name}/{name}"]).hexdigest() == digest
    assert {(m.uname, m.gname, m.uid, m.gid) for m in members.values()} == {("", "", 0, 0)}


def test_files_and_bundle_by_the_api(
    exported,  # noqa: F811
    schema,  # noqa: F811
    django_user_model,
    run_on_commit,
):
    users = _members(exported, django_user_model)
    api = APIClient()
    api.force_authenticate(users["res"])
    listed = api.get(f"/api/runs/{exported.run_id}/exports/")
    check(schema, "/api/runs/{run_id}/exports/", "get", listed)
    [row] = listed.json()["results"]
    files = {f["name"]: f for f in row["files"]}
    assert row["bundle"] is None
    assert [(e.name, e.size) for e in export_file_entries(exported)] == [
        (f["name"], f["size"]) for f in row["files"]
    ]
    assert files[PARQUET]["url"] == f"/api/exports/{exported.pk}/files/{PARQUET}"
    parquet = api.get(files[PARQUET]["url"])
    assert parquet.status_code == 200
    assert body(parquet) == (export_folder(exported) / PARQUET).read_bytes()

    url = f"/api/exports/{exported.pk}/bundle/"
    assert api.get(url).status_code == 404
    started = run_on_commit(api.post, url)
    assert started.status_code == 202, started.content
    check(schema, "/api/exports/{export_id}/bundle/", "post", started)
    assert Job.objects.get(pk=started.json()["id"]).state == JobState.SUCCEEDED
    [row] = api.get(f"/api/runs/{exported.run_id}/exports/").json()["results"]
    bundle = export_bundle(exported)
    assert row["bundle"] == {
        "name": "eccv-v1.tar.gz",
        "size": bundle.size,
        "sha256": bundle.sha256,
        "url": url,
    }
    download = api.get(url)
    assert download.status_code == 200 and download["Content-Disposition"].startswith("attachment")
    data = body(download)
    assert hashlib.sha256(data).hexdigest() == bundle.sha256 and len(data) == bundle.size
    _check_bundle(data, exported)
    # Packing again gives the same bytes (no time in the gzip header): checksums stay.
    assert run_on_commit(api.post, url).status_code == 202
    assert export_bundle(exported).sha256 == bundle.sha256

    # Over the API a user with no project is refused before any run is looked up (403).
    for name, get_status, post_status in (("view", 403, 403), ("out", 403, 403)):
        api.force_authenticate(users[name])
        assert api.get(url).status_code == get_status, name
        assert api.get(files[PARQUET]["url"]).status_code == get_status, name
        assert api.post(url).status_code == post_status, name
    assert Job.objects.filter(name="exports.bundle").count() == 2


def test_an_export_never_follows_a_link_out_of_the_media_folder(
    exported,  # noqa: F811
    run_on_commit,
    settings,
    tmp_path,
):
    """Issue 47: the run's exports folder made a link to a folder outside MEDIA_ROOT; the next
    version fails naming the media folder and writes nothing there."""
    import shutil

    from annotation.flows.eccv.services.export import eccv_export_start
    from pipeline.errors import InputError

    folder = Path(settings.MEDIA_ROOT) / "exports" / f"run-{exported.run_id}"
    outside = tmp_path / "outside"
    shutil.move(folder, outside)
    folder.symlink_to(outside, target_is_directory=True)
    before = sorted(p.name for p in outside.iterdir())
    with pytest.raises(InputError, match="outside the media folder"):  # eager tasks re-raise
        run_on_commit(eccv_export_start, run=Run.objects.get(pk=exported.run_id))
    job = Job.objects.order_by("-pk").first()
    assert job.state == JobState.FAILED and "outside the media folder" in job.error
    assert sorted(p.name for p in outside.iterdir()) == before

"""The exports page: versions with their manifest counts and files, downloads streamed as
attachments (only files the version's folder holds, by plain name), a new export from the
page, and who may do which."""

from pathlib import Path

import pytest

from annotation.crowd.simulated.crowd import simulate_crowd
from annotation.flows.eccv.services.export import eccv_export_start
from annotation.flows.eccv.vocabulary import EccvStage
from annotation.models import Export, Project, ProjectMembership, ProjectRole, Review, Run
from annotation.services.runs.batches import batch_create, batch_publish
from annotation.services.work.reviews import review_decide
from pipeline.simulate import WorkerProfile

pytestmark = pytest.mark.django_db


@pytest.fixture
def exported(proposed, run_on_commit):
    batch = batch_publish(
        batch=batch_create(
            run=proposed, stage=EccvStage.JUDGMENT, provider="simulated", items_per_hit=6
        )
    )
    simulate_crowd(batch=batch, workers=2, profile=WorkerProfile(accuracy=1.0, gold_accuracy=1.0))
    for review in Review.objects.filter(status="open"):
        review_decide(review=review, approve=True)
    job = run_on_commit(eccv_export_start, run=proposed)
    job.refresh_from_db()
    assert job.state == "succeeded", job.error
    return Export.objects.get(run=proposed)


def test_page_lists_files_and_counts_and_downloads_them(exported, admin_client):
    page = admin_client.get(f"/runs/{exported.run_id}/exports/").content.decode()
    assert f"v{exported.version}" in page and "manifest.json" in page
    counts = [(k, v) for k, v in exported.manifest["counts"].items() if isinstance(v, int)]
    assert counts and all(f'<th scope="row">{k}</th><td>{v}</td>' in page for k, v in counts)
    response = admin_client.get(f"/exports/{exported.pk}/files/manifest.json")
    assert response.status_code == 200
    assert response["Content-Disposition"].startswith("attachment")
    body = b"".join(response.streaming_content)
    folder = Path(exported.path)
    folder = folder if folder.is_dir() else folder.parent
    assert body == (folder / "manifest.json").read_bytes()


def test_only_the_versions_own_files_by_plain_name(exported, admin_client, settings):
    (Path(settings.MEDIA_ROOT) / "secret.txt").write_text("no")
    for name in ("..", "../secret.txt", "..%2F..%2Fsecret.txt", "secret.txt", ".hidden"):
        assert admin_client.get(f"/exports/{exported.pk}/files/{name}").status_code == 404


def test_new_export_from_the_page(exported, admin_client, django_capture_on_commit_callbacks):
    with django_capture_on_commit_callbacks(execute=True):
        response = admin_client.post(f"/runs/{exported.run_id}/exports/new/", follow=True)
    assert "Export job" in response.content.decode()
    assert sorted(Export.objects.filter(run=exported.run).values_list("version", flat=True)) == [
        1,
        2,
    ]


def test_the_exports_page_follows_its_jobs_and_links_what_they_made(
    exported, admin_client, django_capture_on_commit_callbacks
):
    """No "reload to see": the page lists the export job with its state and, once it has
    succeeded, links the new version, its files and its datasheet; a job still running makes
    the page follow it."""
    import re

    from annotation.models import Job
    from annotation.services.jobs.jobs import job_create

    with django_capture_on_commit_callbacks(execute=True):
        started = admin_client.post(f"/runs/{exported.run_id}/exports/new/")
    page = admin_client.get(started["Location"]).content.decode()
    assert "Export job" in page and "reload" not in page.lower()
    new = Export.objects.get(run=exported.run, version=2)
    job = Job.objects.filter(run=exported.run, name="eccv.export").latest("pk")
    entry = re.search(rf'<li id="export-job-{job.pk}">(.*?)</li>', page, re.S).group(1)
    assert f'href="/jobs/{job.pk}/"' in entry and "succeeded" in entry
    links = re.findall(r'href="([^"]+)" class="next-step"', entry)
    assert links == [
        f"/runs/{exported.run_id}/exports/#export-{new.pk}",
        f"/runs/{exported.run_id}/exports/#export-{new.pk}-files",
        f"/exports/{new.pk}/files/DATASHEET.md?view=1",
    ]
    assert f'id="export-{new.pk}-files"' in page
    assert admin_client.get(links[2]).status_code == 200
    assert 'http-equiv="refresh"' not in page  # nothing left to follow
    waiting = job_create(name="eccv.export", run=exported.run, params={})
    page = admin_client.get(f"/runs/{exported.run_id}/exports/").content.decode()
    assert f'id="export-job-{waiting.pk}"' in page and 'http-equiv="refresh"' in page
    bundle = admin_client.post(f"/exports/{new.pk}/bundle/new/", follow=True).content.decode()
    assert "Bundle job" in bundle and "reload" not in bundle.lower()


def test_viewers_see_researchers_download_others_are_refused(exported, client, django_user_model):
    project = Project.objects.create(name="P")
    Run.objects.filter(pk=exported.run_id).update(project=project)
    url = f"/exports/{exported.pk}/files/manifest.json"
    for name, role, page, download, new in (
        ("res", ProjectRole.RESEARCHER, 200, 200, 302),
        ("view", ProjectRole.VIEWER, 200, 403, 403),
        ("out", None, 404, 404, 404),  # not a member: the run is hidden
    ):
        user = django_user_model.objects.create_user(name, password="pw")
        if role:
            ProjectMembership.objects.create(project=project, user=user, role=role)
        client.force_login(user)
        assert client.get(f"/runs/{exported.run_id}/exports/").status_code == page, name
        assert client.get(url).status_code == download, name
        assert client.post(f"/runs/{exported.run_id}/exports/new/").status_code == new, name


def test_dashboard_links_exports_to_their_downloads_not_server_paths(exported, admin_client):
    page = admin_client.get("/").content.decode()
    assert f'href="/runs/{exported.run_id}/exports/#export-{exported.pk}"' in page
    assert exported.path not in page

import pytest

from annotation.models import Stage
from annotation.services.batches import batch_create, batch_publish

pytestmark = pytest.mark.django_db


def test_dashboard_lists_runs_jobs_batches_for_staff_only(client, admin_client, paired_run):
    batch = batch_publish(
        batch=batch_create(run=paired_run, stage=Stage.BISON_SELECTION, provider="local")
    )
    assert client.get("/").status_code == 302
    html = admin_client.get("/").content.decode()
    assert f'id="run-{paired_run.pk}"' in html
    assert "bison.pairing" in html and "succeeded" in html
    assert f"/work/{batch.pk}/" in html  # the link local workers open
    assert 'http-equiv="refresh"' not in html  # nothing running: no auto-refresh


def test_dashboard_without_runs(admin_client):
    assert 'id="empty"' in admin_client.get("/").content.decode()


def test_worker_links_follow_the_host_the_page_was_served_from(admin_client, paired_run, settings):
    settings.ALLOWED_HOSTS = ["crowd.example.org", "testserver"]
    batch = batch_publish(
        batch=batch_create(run=paired_run, stage=Stage.BISON_SELECTION, provider="local")
    )
    settings.CROWDVL_PUBLIC_URL_SET = False
    html = admin_client.get("/", HTTP_HOST="crowd.example.org").content.decode()
    assert f"http://crowd.example.org/work/{batch.pk}/" in html
    assert "127.0.0.1:8000" not in html
    # A configured public address wins (e.g. behind a proxy that rewrites the host).
    settings.CROWDVL_PUBLIC_URL_SET = True
    settings.CROWDVL_PUBLIC_URL = "https://crowd.lab.org"
    html = admin_client.get("/", HTTP_HOST="crowd.example.org").content.decode()
    assert f"https://crowd.lab.org/work/{batch.pk}/" in html
